"""Every input format (TSV with and without header, Moses pair, TMX 1.4, JSONL), plain and
gzipped, yields the same pairs and stores the same rows."""

from __future__ import annotations

from collections import Counter

import pytest
from fixtures_ingest import (
    assert_consistent,
    cli_json,
    demo_pairs,
    gzipped,
    ingest_inprocess,
    snapshot,
    stored_pairs,
    write_jsonl,
    write_moses,
    write_tmx,
    write_tsv,
)

from ingest.readers import detect_format, read_records

FORMATS = ["tsv", "tsv-noheader", "moses", "tmx", "jsonl"]


def make_input(fmt: str, directory, pairs, gz: bool) -> list:
    if fmt == "tsv":
        files = [write_tsv(directory / "c.fr-en.tsv", pairs)]
    elif fmt == "tsv-noheader":
        files = [write_tsv(directory / "c.fr-en.tsv", pairs, header=False)]
    elif fmt == "moses":
        files = list(write_moses(directory, "c.fr-en", pairs))
    elif fmt == "tmx":
        files = [write_tmx(directory / "c.fr-en.tmx", pairs)]
    else:
        files = [write_jsonl(directory / "c.fr-en.jsonl", pairs)]
    return [gzipped(f) for f in files] if gz else files


@pytest.fixture(scope="module")
def pairs():
    return demo_pairs()


@pytest.fixture(scope="module")
def few(pairs):
    """A dozen pairs with quotes, apostrophes, « », ;, numbers and a typographic apostrophe."""
    picked: list = []
    for marks, n in (("«", 3), ("’", 1), (";", 2), ("'", 3), ("0123456789", 3)):
        picked += [p for p in pairs if any(c in p[0] for c in marks) and p not in picked][:n]
    assert len(picked) == 12 and any('"' in en for _, en in picked) and any("«" in fr for fr, _ in picked)
    return picked


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


@pytest.fixture(scope="module")
def reference_snapshot(server_url, template_url, few, tmp_path_factory):
    """The few pairs ingested from a plain TSV: what every other format must store."""
    from fixtures_ingest import scratch_database

    path = write_tsv(tmp_path_factory.mktemp("ref") / "c.fr-en.tsv", few)
    with scratch_database(server_url) as url:
        s = ingest_inprocess(url, [path])
        assert (s.read, s.inserted) == (len(few), len(few))
        yield _without_lines(snapshot(url))


def _without_lines(snap: dict) -> dict:
    # Line numbers differ between formats (header, TMX); everything else must not.
    return {**snap, "pairs": sorted((a, b) for a, b, _ in snap["pairs"])}


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_stores_the_same_rows(db_url, tmp_path, few, reference_snapshot, fmt, gz):
    files = make_input(fmt, tmp_path, few, gz)
    s = ingest_inprocess(db_url, files)
    assert (s.read, s.inserted, s.duplicates, s.rejected) == (len(few), len(few), 0, 0)
    assert stored_pairs(db_url) == Counter(few)
    assert _without_lines(snapshot(db_url)) == reference_snapshot
    assert_consistent(db_url)


def test_tmx_through_the_cli(db_url, tmp_path, few):
    """TMX with region subtags (fr-FR / en-GB), gzipped, via `scoi ingest` (format guessed)."""
    path = gzipped(write_tmx(tmp_path / "memory.tmx", few, src_lang="fr-FR", tgt_lang="en-GB"))
    out = cli_json(["ingest", str(path), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url)
    assert (out["corpus"], out["inserted"], out["rejected"]) == ("memory", len(few), 0)
    assert stored_pairs(db_url) == Counter(few)


def test_moses_pair_through_the_cli(db_url, tmp_path, few):
    fr, en = write_moses(tmp_path, "europarl-v7.fr-en", few)
    out = cli_json(["ingest", str(fr), str(en), "--src", "fr", "--tgt", "en", "--workers", "0"], db_url)
    assert (out["corpus"], out["inserted"]) == ("europarl-v7.fr-en", len(few))
    assert stored_pairs(db_url) == Counter(few)


def test_reversed_direction_collides_with_the_same_pairs(db_url, tmp_path, few):
    """An en-fr file of the same pairs adds nothing: a pair is stored once whatever the direction."""
    write_tsv(tmp_path / "a.tsv", few)
    (tmp_path / "b.tsv").write_text("".join(f"{en}\t{fr}\n" for fr, en in few), encoding="utf-8")
    first = ingest_inprocess(db_url, [tmp_path / "a.tsv"], corpus="a")
    second = ingest_inprocess(db_url, [tmp_path / "b.tsv"], corpus="b", src="en", tgt="fr")
    assert (first.inserted, second.inserted, second.duplicates) == (len(few), 0, len(few))
    assert second.parsed_sentences == 0  # nothing parsed again
    assert stored_pairs(db_url) == Counter(few)


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
