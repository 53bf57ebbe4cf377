"""The TMX 1.4 reader: ``<tu>`` elements streamed with lxml in constant memory, each
language's ``<tuv>`` picked by code (a regional variant with a note), inline codes
dropped, properties, notes and attributes kept as metadata.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ingest.input_files import open_text
from ingest.records import InputError, Record, checked_record
from scoi.formats.tmx import JSON_PROP
from scoi.formats.xmlsafe import SAFE, doctype_problem


# TMX 1.4 inline elements whose content is native code of the original document (the
# ``<b>`` of ``<bpt>&lt;b&gt;</bpt>``), not text of the sentence; ``<sub>`` (text inside
# such code, e.g. an alt text) goes with its code. ``<hi>`` marks text and keeps it.
TMX_CODES = frozenset({"bpt", "ept", "it", "ph", "ut"})


def segment_text(seg, keep_codes: bool = False) -> str:
    """The plain text of a TMX ``<seg>``: ``Il a <bpt i="1">&lt;b&gt;</bpt>vraiment<ept
    i="1">&lt;/b&gt;</ept> faim.`` is ``Il a vraiment faim.`` (``keep_codes``: every text
    node, codes included, as ``itertext``)."""
    if keep_codes:
        return "".join(seg.itertext())
    parts = [seg.text or ""]
    for child in seg:
        if isinstance(child.tag, str) and child.tag not in TMX_CODES:  # <hi>, unknown markup: its text
            parts.append(segment_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


# <tu> (and <tuv>) attributes kept as metadata, under the same names; usagecount as a number.
TMX_ATTRIBUTES = ("tuid", "creationdate", "creationid", "changedate", "changeid", "usagecount", "lastusagedate")
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def lang_matches(code: str, wanted: str) -> int:
    """How well a ``<tuv>``'s language ``code`` matches the run's ``wanted`` language:
    2 the same code (case-insensitive, ``_`` read as ``-``), 1 the same language with
    another or no region (``fr-CA`` for ``fr``, ``fr`` for ``fr-FR``), 0 another language."""
    code, wanted = code.lower().replace("_", "-"), wanted.lower().replace("_", "-")
    if code == wanted:
        return 2
    return int(bool(code) and code.split("-")[0] == wanted.split("-")[0])


def tmx_meta(el, prefix: str = "", attributes: bool = True) -> dict[str, Any]:
    """The metadata of a TMX ``<header>``, ``<tu>`` or ``<tuv>``: its ``<prop type="x">``
    as ``x`` (a list when repeated), its ``<note>`` as ``note`` (a list when several), and
    its attributes of :data:`TMX_ATTRIBUTES` (``usagecount`` as an int), the entries of an
    ``x-scoi-json`` prop's JSON object (scoi's export: values TMX cannot hold), each key after
    ``prefix`` (``fr-fr:`` for a ``<tuv>``). The header's attributes describe the file, not
    its units: read with ``attributes=False``."""
    out: dict[str, Any] = {}
    for child in el:
        if child.tag not in ("prop", "note"):
            continue
        key = prefix + (child.get("type") or "prop" if child.tag == "prop" else "note")
        value = "".join(child.itertext()).strip()
        if child.tag == "prop" and child.get("type") == JSON_PROP and isinstance(kept := _json_object(value), dict):
            out.update({prefix + k: v for k, v in kept.items()})  # what scoi's TMX export could not write as props
            continue
        if key in out:
            out[key] = (out[key] if isinstance(out[key], list) else [out[key]]) + [value]
        else:
            out[key] = value
    for name in TMX_ATTRIBUTES if attributes else ():
        value = el.get(name)
        if value is not None:
            out[prefix + name] = int(value) if name == "usagecount" and value.strip().isdigit() else value
    return out


def _json_object(text: str) -> Any:
    """The JSON value of an ``x-scoi-json`` prop, or None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _pick_tuv(tuvs: list[tuple[str, object]], wanted: str) -> tuple[object | None, list[str]]:
    """The ``<tuv>`` of language ``wanted`` among (code, tuv): the first of the same code,
    else the first of the same language in another region; and, in that second case, the
    codes of all that matched (the variants the pick dropped a note about)."""
    ranked = [(lang_matches(code, wanted), i) for i, (code, _) in enumerate(tuvs)]
    best = max(ranked, key=lambda r: (r[0], -r[1]), default=(0, -1))
    # only a choice the run made needs saying: an exact code was what the user asked for
    matching = [tuvs[i][0] for score, i in ranked if score] if best[0] == 1 else []
    return (tuvs[best[1]][1] if best[0] else None), matching


def read_tmx(file: str, src_lang: str, tgt_lang: str, *, keep_codes: bool = False) -> Iterator[Record]:
    """TMX 1.4: each ``<tu>`` with a ``<tuv xml:lang=...>`` per language, matched as
    :func:`lang_matches` says (several of one language: the exact code, else the first,
    with a note); inline codes are dropped from the text unless ``keep_codes``; header,
    ``<tu>`` and the two ``<tuv>``'s properties, notes and attributes kept as metadata."""
    from lxml import etree

    _check_root(file)
    with open_text(file) as fh:
        # scoi.formats.xmlsafe's settings: no DTD loaded, no entity resolved, nothing fetched,
        # and libxml2's limits (a text node of at most 10 MB, nesting of at most 256 levels),
        # so one segment never takes more memory than that; an internal DTD subset is refused.
        parser = etree.iterparse(fh, events=("end",), tag=("tu", "body", "header"), recover=False, **SAFE)
        saw_body = checked = False
        header: dict[str, Any] = {}
        try:
            for _, el in parser:
                if not checked:
                    checked = True
                    problem = doctype_problem(el.getroottree().docinfo)
                    if problem:
                        raise InputError(file, 1, problem)
                if el.tag == "header":
                    header = tmx_meta(el, attributes=False)
                    continue
                if el.tag == "body":
                    saw_body = True
                    continue
                line = el.sourceline or 0
                tuvs = [(tuv.get(XML_LANG) or tuv.get("lang") or "", tuv) for tuv in el.iterfind("tuv")]
                (src_tuv, src_all), (tgt_tuv, tgt_all) = _pick_tuv(tuvs, src_lang), _pick_tuv(tuvs, tgt_lang)
                rec = _tmx_record(file, line, el, src_lang, tgt_lang, (src_tuv, src_all), (tgt_tuv, tgt_all),
                                  [code for code, _ in tuvs], header, keep_codes)
                el.clear()
                while el.getprevious() is not None:  # constant memory on huge TMX files
                    del el.getparent()[0]
                yield rec
        except etree.XMLSyntaxError as e:
            raise InputError(file, e.lineno, f"malformed TMX: {e.msg}") from None
        if not saw_body:
            raise InputError(file, None, "not a TMX file: no <body> element")


def _tmx_record(file: str, line: int, tu, src_lang: str, tgt_lang: str, src: tuple, tgt: tuple,
                codes: list[str], header: dict[str, Any], keep_codes: bool) -> Record:
    """The record of one ``<tu>``: its two segments, metadata, and a note when a language
    had several variants."""
    segs = {}
    for lang, (tuv, _) in ((src_lang, src), (tgt_lang, tgt)):
        seg = tuv.find("seg") if tuv is not None else None
        if seg is None:
            found = ", ".join(sorted({c for c in codes if c})) or "none"
            return Record(file, line, None, None, f"<tu> lacks a <tuv> with a <seg> for {lang} (languages found: {found})")
        segs[lang] = segment_text(seg, keep_codes)
    meta = {**header, **tmx_meta(tu)}
    for tuv, _ in (src, tgt):
        meta.update(tmx_meta(tuv, (tuv.get(XML_LANG) or tuv.get("lang") or "").lower() + ":"))
    notes = [f"{len(found)} {lang} variants ({', '.join(found)}): used {tuv.get(XML_LANG) or tuv.get('lang')}"
             for lang, (tuv, found) in ((src_lang, src), (tgt_lang, tgt)) if len(found) > 1]
    return checked_record(file, line, segs[src_lang], segs[tgt_lang], meta, "; ".join(notes) or None)


def _check_root(file: str) -> None:
    """Refuse a file whose root element is not ``<tmx>`` (an XLIFF file given as
    ``--format tmx``), before reading it through."""
    from lxml import etree

    with open_text(file) as fh:
        try:
            for _, el in etree.iterparse(fh, events=("start",), recover=False, **SAFE):
                tag = etree.QName(el).localname if isinstance(el.tag, str) else str(el.tag)
                if tag != "tmx":
                    raise InputError(file, el.sourceline, f"not a TMX file (root element <{tag}>); "
                                                          "expected <tmx> (TMX 1.4)")
                return
        except etree.XMLSyntaxError as e:
            if "Document is empty" in e.msg:
                return  # an empty file: nothing to ingest, said by the run
            raise InputError(file, e.lineno, f"malformed TMX: {e.msg}") from None

