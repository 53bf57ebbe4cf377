"""scoi.text.textfile and the TMX text rule: lines end at \\n only (CRLF accepted), a BOM is not
text, bad text is one error at file:line, a line is read with a bounded buffer; TMX inline
codes are dropped from a segment's text."""

from __future__ import annotations

import os
import threading

import pytest
from lxml import etree

from ingest.input_files import read_once, rereadable
from ingest.read_tmx import segment_text
from scoi.text.textfile import MAX_LINE_BYTES, TextFileError, read_lines


def test_lines_end_at_newline_only(tmp_path):
    """VT, FF, NEL, FS and U+2028/U+2029 inside a line do not split it; CRLF is one break."""
    path = tmp_path / "x.fr"
    path.write_bytes("Un homme\x0bjoue.\r\nDeux\u2028chiens.\nCaf\x85e\x0c noir\u2029\x1c.\n\nFin".encode())
    assert read_lines(path) == ["Un homme\x0bjoue.", "Deux\u2028chiens.", "Caf\x85e\x0c noir\u2029\x1c.", "", "Fin"]


def test_a_leading_bom_is_dropped_and_only_there(tmp_path):
    path = tmp_path / "b.fr"
    path.write_bytes(b"\xef\xbb\xbfLe chat dort.\n\xef\xbb\xbfDeux.\n")
    assert read_lines(path) == ["Le chat dort.", "\ufeffDeux."]


@pytest.mark.parametrize("data, where, what", [
    (b"Le chat.\nBon\x00jour.\n", "q.txt:2", "NUL character (U+0000) at column 4"),     # cases 32, 34, 45
    (b"Le chat.\nCaf\xe9\n", "q.txt:2", "invalid UTF-8 at byte 4"),                       # case 31
    (b"Un.\n\xed\xa0\x80 demi\n", "q.txt:2", "invalid UTF-8"),  # an encoded lone surrogate is not UTF-8
])
def test_cases_31_32_34_45_bad_text_is_one_error_at_file_line(tmp_path, data, where, what):
    path = tmp_path / "q.txt"
    path.write_bytes(data)
    with pytest.raises(TextFileError) as e:
        read_lines(path)
    message = str(e.value)
    assert message.startswith(f"{tmp_path}/{where}: ") and what in message and "\n" not in message


def test_an_overlong_line_is_refused_after_one_mib(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"ok\n" + b"a" * (MAX_LINE_BYTES + 1) + b"\nfin\n")
    with pytest.raises(TextFileError, match=r"long.txt:2: line is longer than 1,048,576 bytes"):
        read_lines(path)
    path.write_bytes(b"a" * MAX_LINE_BYTES + b"\n" + b"b" * (MAX_LINE_BYTES - 1) + b"\r\n")  # at the limit
    assert read_lines(path) == ["a" * MAX_LINE_BYTES, "b" * (MAX_LINE_BYTES - 1)]


def test_dev_zero_is_one_error():
    with pytest.raises(TextFileError, match="/dev/zero:1: line is longer than"):
        read_lines("/dev/zero")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TextFileError, match="nope.txt: file not found"):
        read_lines(tmp_path / "nope.txt")
    with pytest.raises(TextFileError, match="is a directory"):
        read_lines(tmp_path)


def _fifo(tmp_path, data: bytes) -> str:
    """A FIFO a thread writes ``data`` into once (the first reader gets it all)."""
    path = str(tmp_path / "in.fifo")
    os.mkfifo(path)

    def write():
        with open(path, "wb") as fh:
            fh.write(data)

    threading.Thread(target=write, daemon=True).start()
    return path


def test_a_fifo_is_read_once(tmp_path):
    path = _fifo(tmp_path, b"Un.\nDeux.\n")
    assert read_lines(path) == ["Un.", "Deux."]


def test_read_once_spools_what_cannot_be_read_twice(tmp_path):
    regular = tmp_path / "r.tsv"
    regular.write_text("a\tb\n")
    fifo = _fifo(tmp_path, b"Un.\tOne.\n")
    assert rereadable(str(regular)) and not rereadable(fifo) and not rereadable("/dev/null")
    with read_once([fifo]) as files:
        assert files == [fifo]  # messages name the FIFO
        spooled = files[0].path
        for _ in range(2):  # validation and writing read the same bytes
            with open(spooled, "rb") as fh:
                assert fh.read() == b"Un.\tOne.\n"
    assert not os.path.exists(spooled)
    with read_once([str(regular)]) as files:
        assert files == [str(regular)] and not hasattr(files[0], "path")


def _seg(xml: str):
    return etree.fromstring(f"<seg>{xml}</seg>")


@pytest.mark.parametrize("xml, text, kept", [
    ('Il a <bpt i="1">&lt;b&gt;</bpt>vraiment<ept i="1">&lt;/b&gt;</ept> faim.', "Il a vraiment faim.",
     "Il a <b>vraiment</b> faim."),
    ('Voir <ph x="1">&lt;img src="a.png" alt="<sub>Une image</sub>"/&gt;</ph> ici.', "Voir  ici.",
     'Voir <img src="a.png" alt="Une image"/> ici.'),
    ('Un <hi type="b">mot <it pos="begin">{\\b </it>gras</hi> ici<ut>{\\b0}</ut>.', "Un mot gras ici.",
     "Un mot {\\b gras ici{\\b0}."),
    ("Rien à enlever.", "Rien à enlever.", "Rien à enlever."),
])
def test_tmx_inline_codes_are_dropped_unless_kept(xml, text, kept):
    assert segment_text(_seg(xml)) == text
    assert segment_text(_seg(xml), keep_codes=True) == kept


def test_a_template_file_bom_is_not_in_the_prompt(tmp_path):
    from scoi.core.prompt import render_prompt

    path = tmp_path / "t.j2"
    path.write_bytes("\ufeff{{ query }} =>".encode())
    assert render_prompt("Le chat dort.", [], "fr", "en", template=str(path)) == "Le chat dort. =>"
