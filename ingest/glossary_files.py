"""Readers for glossary files (docs/glossary.md): TBX (TBX-Basic, TBX 2019 core) and CSV/TSV.

Each reader returns every entry of the file for one language pair, or raises one
:class:`~ingest.records.InputError` for the first problem, located by file and line (and,
in TBX, the entry's id): a glossary is added whole or not at all.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.input_files import open_text
from ingest.records import InputError
from scoi.formats.xmlsafe import SAFE, doctype_problem
from scoi.text.textfile import TextFileError, decode_line

GLOSSARY_FORMATS = ("tbx", "csv", "tsv")
MAX_TERM_CHARS = 300  # a term, not a sentence
_GENERIC_SRC = {"src", "source", "source term", "term"}
_GENERIC_TGT = {"tgt", "target", "target term", "translation"}
_NOTE = {"note", "notes", "comment", "definition", "description"}
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class TermRow:
    """A source term, its target term and a note, with where it was read."""

    line: int
    src: str
    tgt: str
    note: str | None = None
    entry_id: str | None = None


def glossary_format(file: str, fmt: str | None = None) -> str:
    """``fmt`` if given, else from the file name (.tbx / .csv / .tsv / .txt)."""
    if fmt:
        if fmt not in GLOSSARY_FORMATS:
            raise InputError(file, None,
                             f"unknown glossary format {fmt!r}; expected one of {', '.join(GLOSSARY_FORMATS)}")
        return fmt
    name = file.lower().removesuffix(".gz")
    for ext, f in ((".tbx", "tbx"), (".xml", "tbx"), (".csv", "csv"), (".tsv", "tsv"), (".txt", "tsv")):
        if name.endswith(ext):
            return f
    raise InputError(file, None, "cannot tell the glossary format from the file name; pass --format tbx|csv|tsv")


def _base(lang: str | None) -> str:
    return (lang or "").split("-")[0].split("_")[0].lower()


def _term_problem(side: str, text: str) -> str | None:
    if not text:
        return f"{side} term is empty"
    if "\x00" in text:
        return f"{side} term contains a NUL character (U+0000), which PostgreSQL text cannot store"
    if _SURROGATE.search(text):
        return f"{side} term holds a lone surrogate, which UTF-8 cannot encode"
    if len(text) > MAX_TERM_CHARS:
        return f"{side} term is {len(text):,} characters long; expected a term of at most {MAX_TERM_CHARS} characters"
    if "\n" in text or "\r" in text:
        return f"{side} term spans several lines; expected a term on one line"
    return None


def _checked(file: str, row: TermRow) -> TermRow:
    where = f"entry {row.entry_id}: " if row.entry_id else ""
    for side, text in (("source", row.src), ("target", row.tgt)):
        if problem := _term_problem(side, text):
            raise InputError(file, row.line, where + problem)
    return row


def read_glossary(file: str, src_lang: str, tgt_lang: str, fmt: str | None = None) -> list[TermRow]:
    """Every (source term, target term) pair of ``file`` for ``src_lang`` -> ``tgt_lang``."""
    fmt = glossary_format(file, fmt)
    rows = read_tbx(file, src_lang, tgt_lang) if fmt == "tbx" else read_delimited(file, src_lang, tgt_lang, fmt)
    if not rows:
        raise InputError(file, None, f"no entry with both a {src_lang} and a {tgt_lang} term")
    return rows


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _text(el: Any) -> str:
    return " ".join("".join(el.itertext()).split())


def read_tbx(file: str, src_lang: str, tgt_lang: str) -> list[TermRow]:
    """TBX-Basic (``<termEntry>``, ``<langSet xml:lang>``, ``<tig>``/``<ntig>``, ``<term>``)
    and TBX 2019 (``<conceptEntry>``, ``<langSec>``, ``<termSec>``): every source term of an
    entry paired with every target term of it; an entry lacking one of the languages is
    not for this pair and is passed over. The note is the entry's first ``<note>`` or
    ``<descrip>`` (a definition). Streamed with scoi.formats.xmlsafe's settings and
    check, as TMX is: no DTD, no entity, no network, an internal DTD subset refused."""
    from lxml import etree

    src, tgt = _base(src_lang), _base(tgt_lang)
    rows: list[TermRow] = []
    saw_body = checked = False
    with open_text(file) as fh:
        tags = ("{*}termEntry", "{*}conceptEntry", "{*}body", "{*}text")
        try:
            for _, el in etree.iterparse(fh, events=("end",), tag=tags, recover=False, **SAFE):
                if not checked:
                    checked = True
                    if problem := doctype_problem(el.getroottree().docinfo):
                        raise InputError(file, 1, problem)
                name = _local(el.tag)
                if name in ("body", "text"):
                    saw_body = True
                    continue
                line, entry_id = el.sourceline or 0, el.get("id")
                terms: dict[str, list[tuple[int, str]]] = {}
                note = None
                for child in el.iter():
                    cname = _local(child.tag)
                    if cname in ("langSet", "langSec"):
                        lang = _base(child.get(_XML_LANG) or child.get("lang"))
                        if not lang:
                            raise InputError(file, child.sourceline,
                                             f"entry {entry_id or '(no id)'}: <{cname}> has no xml:lang")
                        for term in child.iter("{*}term"):
                            terms.setdefault(lang, []).append((term.sourceline or line, _text(term)))
                    elif cname in ("note", "descrip") and note is None and _text(child):
                        note = _text(child)
                el.clear()
                while el.getprevious() is not None:
                    del el.getparent()[0]
                for s_line, s in terms.get(src, []):
                    for _, t in terms.get(tgt, []):
                        rows.append(_checked(file, TermRow(s_line, s, t, note, entry_id)))
        except etree.XMLSyntaxError as e:
            raise InputError(file, e.lineno, f"malformed TBX: {e.msg}") from None
    if not saw_body:
        raise InputError(file, None, "not a TBX file: no <body> (TBX-Basic) or <text> element")
    return rows


def _column(name: str, src_lang: str, tgt_lang: str) -> str | None:
    n = name.strip().lower()
    if n in _GENERIC_SRC or _base(n) == _base(src_lang) and n.replace("_", "-").count("-") <= 1:
        return "src"
    if n in _GENERIC_TGT or _base(n) == _base(tgt_lang) and n.replace("_", "-").count("-") <= 1:
        return "tgt"
    if n in _NOTE:
        return "note"
    return None


def read_delimited(file: str, src_lang: str, tgt_lang: str, fmt: str) -> list[TermRow]:
    """CSV (comma, RFC 4180 quoting) or TSV (tab) with a header naming the columns:
    ``src,tgt[,note]`` (also ``source``/``target``) or the language codes (``fr,en``, in
    either order); other columns are refused, not guessed."""
    delimiter = "," if fmt == "csv" else "\t"
    with open_text(file) as fh:
        try:
            lines = [(n, decode_line(raw, n)) for n, raw in fh.lines()]
        except TextFileError as e:
            raise InputError(e.file, e.line, e.problem) from None
    texts: list[tuple[int, str]] = []
    for n, (text, problem) in lines:
        if problem:
            raise InputError(file, n, problem)
        if text.strip():
            texts.append((n, text.lstrip("\ufeff") if n == 1 else text))
    if not texts:
        raise InputError(file, None, "is empty; expected a header line src,tgt[,note] and one term pair per line")
    head_line, head = texts[0]
    header = next(csv.reader(io.StringIO(head), delimiter=delimiter))
    cols = [_column(h, src_lang, tgt_lang) for h in header]
    if cols.count("src") != 1 or cols.count("tgt") != 1 or None in cols or cols.count("note") > 1:
        sep = "," if fmt == "csv" else "<TAB>"
        raise InputError(file, head_line,
                         f"header {head!r} does not name the columns; expected src{sep}tgt[{sep}note] "
                         f"(or the language codes {src_lang}{sep}{tgt_lang})")
    rows: list[TermRow] = []
    for n, text in texts[1:]:
        try:
            cells = next(csv.reader(io.StringIO(text), delimiter=delimiter))
        except csv.Error as e:
            raise InputError(file, n, f"cannot be read as {fmt.upper()}: {e}") from None
        if len(cells) != len(cols):
            raise InputError(file, n, f"has {len(cells)} column{'s' if len(cells) != 1 else ''}; "
                                      f"expected {len(cols)} as in the header ({head.strip()})")
        by = dict(zip(cols, (c.strip() for c in cells)))
        rows.append(_checked(file, TermRow(n, by["src"], by["tgt"], by.get("note") or None)))
    return rows


def display_name(file: str) -> str:
    """The default glossary name: the file's name without its extensions."""
    return Path(file).name.split(".")[0] or "glossary"


__all__ = ["GLOSSARY_FORMATS", "TermRow", "display_name", "glossary_format", "read_delimited", "read_glossary",
           "read_tbx"]
