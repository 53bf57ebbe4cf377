"""Readers for parallel corpora, streamed in constant memory.

Every reader yields :class:`Record` objects whose ``line`` points at the place in the
file a person would look (line number; for TMX the line of the ``<tu>``). Problems are
reported as :class:`InputError` with file, line and what was expected; the pipeline
decides whether to stop or, with ``--skip-bad``, to skip and list them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

FORMATS = ("tsv", "moses", "tmx", "jsonl")


@dataclass(frozen=True)
class Record:
    file: str
    line: int
    src: str | None  # None when the record is bad (see problem)
    tgt: str | None
    problem: str | None = None


class InputError(ValueError):
    """A problem in an input file, located by file and line."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        self.file, self.line, self.problem = file, line, problem
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {problem}")


def open_text(path: str | Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` transparently."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), None, "file not found")
    if p.suffix == ".gz":
        return gzip.open(p, "rb")
    return open(p, "rb")


def _decode(raw: bytes, file: str, line: int) -> tuple[str | None, str | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 at byte {e.start} of the line (expected UTF-8 text)"
    # A byte order mark (files saved by Excel, Notepad) is not part of the first row.
    return (text.removeprefix("\ufeff") if line == 1 else text), None


def _strip_nl(text: str) -> str:
    return text.rstrip("\r\n")


def _check(file: str, line: int, src: str, tgt: str) -> Record:
    src, tgt = src.strip(), tgt.strip()
    if "\x00" in src or "\x00" in tgt:
        return Record(file, line, None, None, "contains a NUL character (U+0000), which PostgreSQL text cannot store")
    if not src and not tgt:
        return Record(file, line, None, None, "both sides are empty")
    if not src:
        return Record(file, line, None, None, "source side is empty")
    if not tgt:
        return Record(file, line, None, None, "target side is empty")
    return Record(file, line, src, tgt)


def detect_format(files: list[str]) -> str:
    """Guess the format from the file names: two files -> moses, else by extension."""
    if len(files) == 2:
        return "moses"
    name = files[0].lower().removesuffix(".gz")
    for ext, fmt in ((".tsv", "tsv"), (".txt", "tsv"), (".tmx", "tmx"), (".jsonl", "jsonl"), (".json", "jsonl")):
        if name.endswith(ext):
            return fmt
    raise InputError(files[0], None, "cannot tell the format from the file name; pass --format tsv|moses|tmx|jsonl")


def read_records(files: list[str], fmt: str, *, src_lang: str = "", tgt_lang: str = "") -> Iterator[Record]:
    """Yield records of ``files`` in format ``fmt``; raises InputError only for whole-file problems."""
    if fmt == "moses":
        if len(files) != 2:
            raise InputError(files[0], None, "the moses format takes two aligned files: SRC_FILE TGT_FILE")
        yield from read_moses(files[0], files[1])
        return
    if len(files) != 1:
        raise InputError(files[1], None, f"the {fmt} format takes one file")
    reader = {"tsv": read_tsv, "jsonl": read_jsonl}.get(fmt)
    if reader is not None:
        yield from reader(files[0])
    elif fmt == "tmx":
        yield from read_tmx(files[0], src_lang, tgt_lang)
    else:
        raise InputError(files[0], None, f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _text_lines(file: str) -> Iterator[tuple[int, str] | Record]:
    """Numbered, decoded, non-blank lines of a one-record-per-line file; undecodable
    lines come as bad Records (blank lines carry no pair and are skipped)."""
    with open_text(file) as fh:
        for n, raw in enumerate(fh, 1):
            text, err = _decode(raw, file, n)
            if err:
                yield Record(file, n, None, None, err)
            elif text.strip():
                yield n, _strip_nl(text)


def read_tsv(file: str) -> Iterator[Record]:
    """Two tab-separated columns; a first line ``src<TAB>tgt`` (or similar header) is skipped."""
    for item in _text_lines(file):
        if isinstance(item, Record):
            yield item
            continue
        n, text = item
        cols = text.split("\t")
        if len(cols) != 2:
            what = "no tab" if len(cols) == 1 else f"{len(cols)} columns"
            yield Record(file, n, None, None, f"expected 2 tab-separated columns (source<TAB>target), found {what}")
            continue
        if n == 1 and _looks_like_header(cols):
            continue
        yield _check(file, n, cols[0], cols[1])


def _looks_like_header(cols: list[str]) -> bool:
    names = {"src", "tgt", "source", "target", "en", "fr", "de", "ru", "es", "it"}
    return all(c.strip().lower() in names for c in cols)


def read_moses(src_file: str, tgt_file: str) -> Iterator[Record]:
    """Two files aligned line by line (``corpus.fr`` / ``corpus.en``)."""
    with open_text(src_file) as fs, open_text(tgt_file) as ft:
        n = 0
        while True:
            a, b = fs.readline(), ft.readline()
            if not a and not b:
                return
            n += 1
            if not a or not b:
                short, longer = (src_file, tgt_file) if not a else (tgt_file, src_file)
                raise InputError(short, n, f"ends at line {n - 1} but {longer} has more lines: "
                                           "the two files of a Moses pair must have the same number of lines")
            sa, ea = _decode(a, src_file, n)
            sb, eb = _decode(b, tgt_file, n)
            if ea or eb:
                yield Record(src_file if ea else tgt_file, n, None, None, ea or eb)
                continue
            yield _check(src_file, n, _strip_nl(sa), _strip_nl(sb))


def read_jsonl(file: str) -> Iterator[Record]:
    """One JSON object per line: ``{"src": ..., "tgt": ...}``."""
    for item in _text_lines(file):
        if isinstance(item, Record):
            yield item
            continue
        n, text = item
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            yield Record(file, n, None, None, f"invalid JSON ({e.msg} at column {e.colno}); expected {{\"src\": ..., \"tgt\": ...}}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("src"), str) or not isinstance(obj.get("tgt"), str):
            yield Record(file, n, None, None, 'expected an object with string fields "src" and "tgt"')
            continue
        yield _check(file, n, obj["src"], obj["tgt"])


def read_tmx(file: str, src_lang: str, tgt_lang: str) -> Iterator[Record]:
    """TMX 1.4: each ``<tu>`` with a ``<tuv xml:lang=...>`` per language (region subtags ignored)."""
    from lxml import etree

    xml_lang = "{http://www.w3.org/XML/1998/namespace}lang"

    def base(lang: str | None) -> str:
        return (lang or "").split("-")[0].split("_")[0].lower()

    with open_text(file) as fh:
        parser = etree.iterparse(fh, events=("end",), tag=("tu", "body"), recover=False, huge_tree=True)
        saw_body = False
        try:
            for _, el in parser:
                if el.tag == "body":
                    saw_body = True
                    continue
                line = el.sourceline or 0
                segs: dict[str, str] = {}
                for tuv in el.iterfind("tuv"):
                    lang = base(tuv.get(xml_lang) or tuv.get("lang"))
                    seg = tuv.find("seg")
                    if seg is not None:
                        segs[lang] = "".join(seg.itertext())
                el.clear()
                while el.getprevious() is not None:  # constant memory on huge TMX files
                    del el.getparent()[0]
                if src_lang not in segs or tgt_lang not in segs:
                    found = ", ".join(sorted(segs)) or "none"
                    yield Record(file, line, None, None,
                                 f"<tu> lacks a <tuv> for {src_lang if src_lang not in segs else tgt_lang} (languages found: {found})")
                    continue
                yield _check(file, line, segs[src_lang], segs[tgt_lang])
        except etree.XMLSyntaxError as e:
            raise InputError(file, e.lineno, f"malformed TMX: {e.msg}") from None
        if not saw_body:
            raise InputError(file, None, "not a TMX file: no <body> element")


__all__ = ["FORMATS", "Record", "InputError", "read_records", "detect_format", "open_text"]
