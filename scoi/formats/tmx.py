"""TMX 1.4b out: a translation memory (a corpus, a job's outputs) written so that
``scoi ingest`` reads back the same pairs and the same ``pair.meta``.

The metadata mapping is the inverse of the TMX reader's (ingest/read_tmx.py, docs/ingest.md):
a string becomes ``<prop type="key">``, a list of two or more strings repeated props, ``note``
``<note>`` elements, ``tuid``/``creationid``/``changeid`` and TMX-dated ``creationdate``/
``changedate``/``lastusagedate`` ``<tu>`` attributes, an integer ``usagecount`` an attribute.
What TMX cannot hold exactly (numbers, booleans, null, objects, one-element lists, strings
with surrounding blanks or characters XML 1.0 forbids, keys that are empty or such) goes into
one ``<prop type="x-scoi-json">`` holding a JSON object (ASCII) of those keys, which the
reader merges back. Written with lxml's incremental writer: one ``<tu>`` in memory at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import IO, Any

from lxml import etree

from scoi import __version__

#: The prop type holding, as a JSON object, the metadata TMX cannot hold exactly.
JSON_PROP = "x-scoi-json"

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_DATE_ATTRIBUTES = ("creationdate", "changedate", "lastusagedate")
_TEXT_ATTRIBUTES = ("tuid", "creationid", "changeid")
_TMX_DATE = re.compile(r"\d{8}T\d{6}Z")
# Characters XML 1.0 cannot hold, even as character references.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class TmxWriteError(ValueError):
    """A pair TMX cannot hold (a text with a character XML 1.0 forbids)."""


def tmx_date(when: datetime) -> str:
    """A time as TMX writes dates: UTC, ``YYYYMMDDThhmmssZ``."""
    return when.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def xml_problem(text: str) -> str | None:
    """Why ``text`` cannot be written as XML 1.0 character data, or None."""
    m = _NOT_XML.search(text)
    return None if m is None else f"holds U+{ord(m.group()):04X} at column {m.start() + 1}, which XML 1.0 cannot hold"


def _plain(value: Any) -> bool:
    """A string the reader gets back as it is from a ``<prop>`` or ``<note>`` (it strips them)."""
    return isinstance(value, str) and value == value.strip() and not _NOT_XML.search(value)


def encode_meta(meta: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str | None, str]]]:
    """``pair.meta`` as TMX: the ``<tu>`` attributes, and its children as (tag, prop type
    or None for a note, text), the ``x-scoi-json`` prop last when some value needs it."""
    attrs: dict[str, str] = {}
    children: list[tuple[str, str | None, str]] = []
    rest: dict[str, Any] = {}
    for key, value in meta.items():
        if key == "usagecount" and type(value) is int and value >= 0:
            attrs[key] = str(value)
        elif key in _DATE_ATTRIBUTES and isinstance(value, str) and _TMX_DATE.fullmatch(value):
            attrs[key] = value
        elif key in _TEXT_ATTRIBUTES and isinstance(value, str) and not _NOT_XML.search(value):
            attrs[key] = value  # attribute values are not stripped: lxml escapes tabs and newlines
        elif not _plain(key) or not key or key == JSON_PROP:
            rest[key] = value
        elif _plain(value):
            children.append(("note", None, value) if key == "note" else ("prop", key, value))
        elif isinstance(value, list) and len(value) >= 2 and all(_plain(v) for v in value):
            children.extend(("note", None, v) if key == "note" else ("prop", key, v) for v in value)
        else:
            rest[key] = value
    if rest:
        children.append(("prop", JSON_PROP, json.dumps(rest, ensure_ascii=True, sort_keys=True)))
    return attrs, children


class TmxWriter:
    """Writes ``<tu>`` elements one at a time into an open ``lxml.etree.xmlfile``."""

    def __init__(self, xf: Any, src_lang: str, tgt_lang: str) -> None:
        self.xf, self.src_lang, self.tgt_lang = xf, src_lang, tgt_lang
        self.count = 0

    def write(self, src: str, tgt: str, meta: dict[str, Any] | None = None, *, what: str = "") -> None:
        """One ``<tu>``: ``meta`` (see :func:`encode_meta`), then a ``<tuv>`` per language.
        ``what`` names the pair in an error (``pair 12``)."""
        for side, text in (("source", src), ("target", tgt)):
            if problem := xml_problem(text):
                raise TmxWriteError(f"{what or 'a pair'}: the {side} {problem}; TMX cannot carry it "
                                    "(--format jsonl can)")
        attrs, children = encode_meta(meta or {})
        tu = etree.Element("tu", attrs)
        for tag, type_, text in children:
            child = etree.SubElement(tu, tag, {"type": type_} if type_ is not None else {})
            child.text = text
        for lang, text in ((self.src_lang, src), (self.tgt_lang, tgt)):
            tuv = etree.SubElement(tu, "tuv", {XML_LANG: lang})
            etree.SubElement(tuv, "seg").text = text
        self.xf.write(tu, pretty_print=True)
        self.count += 1


@contextmanager
def tmx_document(out: IO[bytes], src_lang: str, tgt_lang: str, *, o_tmf: str = "scoi") -> Iterator[TmxWriter]:
    """A TMX 1.4 document on the binary stream ``out``: header (creationtool scoi, plaintext,
    sentence segments, ``src_lang`` as srclang), then the body the yielded writer fills."""
    with etree.xmlfile(out, encoding="UTF-8") as xf:
        xf.write_declaration()
        with xf.element("tmx", {"version": "1.4"}):
            xf.write("\n")
            header = etree.Element("header", {
                "creationtool": "scoi", "creationtoolversion": __version__, "datatype": "plaintext",
                "segtype": "sentence", "adminlang": "en", "srclang": src_lang, "o-tmf": o_tmf,
                "creationdate": tmx_date(datetime.now(timezone.utc))})
            xf.write(header, pretty_print=True)
            with xf.element("body"):
                xf.write("\n")
                yield TmxWriter(xf, src_lang, tgt_lang)
            xf.write("\n")


__all__ = ["JSON_PROP", "TmxWriteError", "TmxWriter", "encode_meta", "tmx_date", "tmx_document", "xml_problem"]
