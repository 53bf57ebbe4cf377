"""Every input format (TSV with and without header, Moses pair, TMX 1.4, JSONL), plain and
gzipped, yields the same pairs; byte order marks, CRLF and NUL characters."""

from __future__ import annotations

import pytest

from ingest.readers import detect_format, read_records
from tests.helpers.ingest import (
    FORMATS,
    make_input,
    write_tsv,
)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_readers_yield_the_demo_pairs(tmp_path, pairs, fmt, gz):
    files = make_input(fmt, tmp_path, pairs, gz)
    detected = detect_format([str(f) for f in files])
    assert detected == fmt.split("-")[0]
    records = list(read_records([str(f) for f in files], detected, src_lang="fr", tgt_lang="en"))
    assert [r.problem for r in records if r.problem] == []
    assert [(r.src, r.tgt) for r in records] == pairs
    if fmt in ("tsv", "tsv-noheader", "moses", "jsonl"):  # line numbers a person can look up
        first = 2 if fmt == "tsv" else 1
        assert [r.line for r in records] == list(range(first, first + len(pairs)))
    else:
        assert all(r.line > 0 for r in records) and [r.line for r in records] == sorted(r.line for r in records)


def test_byte_order_mark_crlf_and_nul(tmp_path):
    """A UTF-8 BOM (Excel, Notepad) is not part of the first row; CRLF line ends are fine;
    a NUL character (which PostgreSQL text cannot hold) is a bad row, not a crash at COPY."""
    pairs = [("Bonjour.", "Hello."), ("Merci.", "Thank you.")]
    (tmp_path / "h.tsv").write_bytes("\ufefffr\ten\r\nBonjour.\tHello.\r\nMerci.\tThank you.\r\n".encode())
    (tmp_path / "n.tsv").write_bytes("\ufeffBonjour.\tHello.\nMerci.\tThank you.\n".encode())
    (tmp_path / "c.fr").write_bytes("\ufeffBonjour.\r\nMerci.\r\n".encode())
    (tmp_path / "c.en").write_bytes("\ufeffHello.\nThank you.\n".encode())
    (tmp_path / "c.jsonl").write_bytes("\ufeff".encode() + b"".join(
        (f'{{"src": "{fr}", "tgt": "{en}"}}\r\n').encode() for fr, en in pairs))
    for files in (["h.tsv"], ["n.tsv"], ["c.fr", "c.en"], ["c.jsonl"]):
        paths = [str(tmp_path / f) for f in files]
        records = list(read_records(paths, detect_format(paths), src_lang="fr", tgt_lang="en"))
        assert [(r.src, r.tgt, r.problem) for r in records] == [(fr, en, None) for fr, en in pairs], files
    write_tsv(tmp_path / "z.tsv", [("Un \x00 ici.", "A NUL here."), *pairs])
    records = list(read_records([str(tmp_path / "z.tsv")], "tsv"))
    assert records[0].line == 2 and "NUL" in records[0].problem
    assert [(r.src, r.tgt) for r in records[1:]] == pairs
