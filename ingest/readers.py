"""Readers for parallel corpora, streamed in constant memory.

Every reader yields :class:`Record` objects whose ``line`` points at the place in the
file a person would look (line number; for TMX the line of the ``<tu>``). Problems are
reported as :class:`InputError` with file, line and what was expected; the pipeline
decides whether to stop or, with ``--skip-bad``, to skip and list them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ingest.input_files import open_text
from ingest.records import InputError, Record, checked_record
from ingest.read_text import read_jsonl, read_moses, read_tsv
from ingest.read_tmx import read_tmx
from scoi.formats import DocumentError, po, xliff

FORMATS = ("tsv", "moses", "tmx", "jsonl", "xliff", "po")

def detect_format(files: list[str]) -> str:
    """Guess the format from the file names: two files -> moses, else by extension."""
    if len(files) == 2:
        return "moses"
    name = files[0].lower().removesuffix(".gz")
    for ext, fmt in ((".tsv", "tsv"), (".txt", "tsv"), (".tmx", "tmx"), (".jsonl", "jsonl"), (".json", "jsonl"),
                     (".xlf", "xliff"), (".xliff", "xliff"), (".po", "po")):
        if name.endswith(ext):
            return fmt
    raise InputError(files[0], None, "cannot tell the format from the file name; pass --format "
                     "tsv|moses|tmx|jsonl|xliff|po")


def read_records(files: list[str], fmt: str, *, src_lang: str = "", tgt_lang: str = "",
                 header: bool | None = None, tmx_keep_codes: bool = False) -> Iterator[Record]:
    """Yield records of ``files`` in format ``fmt``; raises InputError only for whole-file problems."""
    if fmt == "moses":
        if len(files) != 2:
            raise InputError(files[0], None, "the moses format takes two aligned files: SRC_FILE TGT_FILE")
        yield from read_moses(files[0], files[1])
        return
    if len(files) != 1:
        raise InputError(files[1], None, f"the {fmt} format takes one file")
    if fmt == "tsv":
        yield from read_tsv(files[0], src_lang, tgt_lang, header)
    elif fmt == "jsonl":
        yield from read_jsonl(files[0])
    elif fmt == "tmx":
        yield from read_tmx(files[0], src_lang, tgt_lang, keep_codes=tmx_keep_codes)
    elif fmt in ("xliff", "po"):
        yield from read_cat(files[0], fmt, src_lang, tgt_lang)
    else:
        raise InputError(files[0], None, f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def read_cat(file: str, fmt: str, src_lang: str, tgt_lang: str) -> Iterator[Record]:
    """A bilingual CAT file (XLIFF 1.2/2.x, PO: scoi.formats): each segment or message that
    has a translation is a pair; inline codes around text keep their text, the others are
    dropped. Read whole, with the XML safety of scoi.formats.xmlsafe."""
    with open_text(file) as fh:
        data = fh.read()
    try:
        for line, src, tgt in (xliff if fmt == "xliff" else po).pairs(data, file, src_lang, tgt_lang):
            yield checked_record(file, line, src, tgt)
    except DocumentError as e:  # "FILE:LINE: problem" or "FILE: problem"
        m = re.match(rf"{re.escape(str(file))}(?::(\d+))?: (.*)", str(e), re.DOTALL)
        if m is None:
            raise InputError(file, None, str(e)) from None
        raise InputError(file, int(m.group(1)) if m.group(1) else None, m.group(2)) from None


__all__ = ["FORMATS", "read_records", "detect_format", "read_cat"]
