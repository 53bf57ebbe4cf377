"""XLIFF 1.2 and 2.x (2.0, 2.1, 2.2): the segments to translate, and the file back with targets.

Read: every ``<trans-unit>`` (1.2) or ``<segment>`` of a ``<unit>`` (2.x) that is not
``translate="no"`` and has no translation yet (no target, or an empty one) and has text
becomes a segment keyed ``FILE/UNIT`` (1.2: the ``<file>``'s position from 1, the unit id) or
``FILE/UNIT/N`` (2.x: the file id, the unit id, the segment's position from 1). Inline codes
become placeholders (scoi.core.inline): ``<g>``, ``<pc>`` and ``<mrk>`` around text, and a
span a code opens and a sibling closes (``<sc id>``...``<ec startRef>``, ``<bx rid>``...``<ex
rid>``, ``<bpt rid>``...``<ept rid>``), as ``<N>``...``</N>``; every other element (``<x/>``,
``<ph>``, ``<it>``, an unpaired ``<sc/>``/``<ec/>``/``<bx/>``/``<ex/>``, ``<sm/>``, ``<em/>``,
extensions) as ``<N/>``. Whitespace runs become one space (the prompt is one line).

Write: the stored file again, each translated segment's target filled from the answer,
codes rebuilt from the source's own elements (lxml, so the result is always well-formed),
with the state of machine translation awaiting review: 1.2 ``state="needs-review-translation"
state-qualifier="mt-suggestion"``, 2.x ``state="initial" subState="scoi:mt"``. A segment with
QA flags also gets a note (1.2 ``<note from="scoi">``, 2.x ``<note category="scoi-qa">``) and
2.x ``subState="scoi:qa"``. Ids, notes, other units and everything else are kept as they were.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from scoi.core import inline
from scoi.formats import DocumentError, Filled, Segment
from scoi.formats.xmlsafe import parse_xml

NS12 = "urn:oasis:names:tc:xliff:document:1.2"
NS20 = "urn:oasis:names:tc:xliff:document:2.0"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
#: Inline elements around text (the rest are codes on their own).
PAIRED = {"g", "pc", "mrk"}
#: Characters XML 1.0 cannot hold (control characters but tab and line breaks, U+FFFE/U+FFFF).
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
QA_NOTE_FROM = "scoi"
QA_CATEGORY = "scoi-qa"


@dataclass
class _Unit:
    """A segment found in the tree: its key, line, masked source, the elements of its codes
    by placeholder number, and the elements to write into."""

    key: str
    line: int
    masked: str
    codes: Codes
    shape: dict[int, tuple[str, int]]
    unit: etree._Element      # <trans-unit> (1.2) or <unit> (2.x)
    holder: etree._Element    # <trans-unit> (1.2) or <segment> (2.x): where <target> goes
    source: etree._Element


def _local(el: etree._Element) -> str:
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def _lang(tag: str | None) -> str:
    return (tag or "").split("-")[0].split("_")[0].lower()


#: Codes on their own that open a span a later sibling closes: 2.x ``<sc id>``/``<ec startRef>``,
#: 1.2 ``<bx rid>``/``<ex rid>`` and ``<bpt rid>``/``<ept rid>``; (closing tag, what links them).
SPANS = {"sc": ("ec", "id", "startRef"), "bx": ("ex", "rid", "rid"), "bpt": ("ept", "rid", "rid")}
#: A code's source: its element, or the (start, end) elements of a span (scoi.core.inline.Pc).
Codes = dict[int, "etree._Element | tuple[etree._Element, etree._Element]"]


def _span_end(children: list[etree._Element], i: int) -> int | None:
    """The index of the sibling that closes the span ``children[i]`` opens, if any."""
    spec = SPANS.get(_local(children[i]))
    if spec is None:
        return None
    end, start_attr, end_attr = spec
    key = children[i].get(start_attr)
    if not key:
        return None
    return next((j for j in range(i + 1, len(children))
                 if _local(children[j]) == end and children[j].get(end_attr) == key), None)


def _content(el: etree._Element, codes: Codes) -> list[inline.Node]:
    """The nodes of a source's content; each code numbered in document order into ``codes``."""
    return _siblings(el.text, list(el), codes)


def _siblings(text: str | None, children: list[etree._Element], codes: Codes) -> list[inline.Node]:
    """The nodes of ``text`` and ``children`` (with their tails). A span (``<sc/>``...``<ec/>``
    among the same siblings) is one code around the siblings between, so the model sees
    ``<N>``...``</N>`` and a misplaced end is caught like a crossed ``<pc>``."""
    nodes: list[inline.Node] = [text] if text else []
    i = 0
    while i < len(children):
        child = children[i]
        if isinstance(child.tag, str):  # comments and processing instructions are not text
            num = len(codes) + 1
            end = _span_end(children, i)
            if end is not None:
                codes[num] = (child, children[end])
                nodes.append(inline.Pc(num, tuple(_siblings(child.tail, children[i + 1:end], codes))))
                child = children[end]
                i = end
            else:
                codes[num] = child
                if _local(child) in PAIRED:
                    nodes.append(inline.Pc(num, tuple(_content(child, codes))))
                else:
                    nodes.append(inline.Ph(num))
        if child.tail:
            nodes.append(child.tail)
        i += 1
    return nodes


def _has_text(el: etree._Element | None) -> bool:
    return el is not None and bool("".join(el.itertext()).strip() or len(el))


def _version(root: etree._Element, name: str) -> str:
    ns = etree.QName(root).namespace
    if _local(root) != "xliff":
        raise DocumentError(f"{name}:{root.sourceline}: not an XLIFF file: the root element is <{_local(root)}>, "
                            "expected <xliff>")
    version = (root.get("version") or "").strip()
    if ns == NS20 or version.startswith("2."):
        if ns != NS20:
            raise DocumentError(f"{name}:{root.sourceline}: XLIFF {version} must use the namespace {NS20}")
        return "2"
    if ns in (NS12, None) and version in ("1.2", ""):
        return "1.2"
    raise DocumentError(f"{name}:{root.sourceline}: XLIFF version {version or '?'} is not supported; expected 1.2 "
                        "or 2.x")


def _units(tree: etree._ElementTree, name: str, src: str | None = None, tgt: str | None = None) -> Iterator[_Unit]:
    """Every segment to translate, in document order (the same on every read of the file)."""
    root = tree.getroot()
    version = _version(root, name)
    ns = etree.QName(root).namespace
    q = (lambda t: f"{{{ns}}}{t}") if ns else (lambda t: t)
    if version == "2":
        _check_lang(name, root, "srcLang", src, "the job's --src")
        _check_lang(name, root, "trgLang", tgt, "the job's --tgt")
    files = root.findall(q("file"))
    if not files:
        raise DocumentError(f"{name}:{root.sourceline}: XLIFF without a <file> element")
    for fno, f in enumerate(files, 1):
        if version == "1.2":
            _check_lang(name, f, "source-language", src, "the job's --src")
            _check_lang(name, f, "target-language", tgt, "the job's --tgt")
        seen: set[str] = set()
        file_key = str(fno) if version == "1.2" else (f.get("id") or str(fno))
        for unit in f.iter(q("trans-unit") if version == "1.2" else q("unit")):
            uid = unit.get("id")
            what = "<trans-unit>" if version == "1.2" else "<unit>"
            if not uid:
                raise DocumentError(f"{name}:{unit.sourceline}: {what} without an id; every unit needs one (the "
                                    "translation is written back by it)")
            if uid in seen:
                raise DocumentError(f"{name}:{unit.sourceline}: {what} id {uid!r} appears twice in one <file>; ids "
                                    "must be unique")
            seen.add(uid)
            if unit.get("translate") == "no":
                continue
            holders = [unit] if version == "1.2" else unit.findall(q("segment"))
            for sno, holder in enumerate(holders, 1):
                source = holder.find(q("source"))
                if source is None:
                    raise DocumentError(f"{name}:{holder.sourceline}: unit {uid!r} has no <source>")
                if _has_text(holder.find(q("target"))):
                    continue  # translated already
                codes: Codes = {}
                nodes = _content(source, codes)
                masked = " ".join(inline.mask(nodes).split())
                if not inline.plain(masked):
                    continue  # codes only: nothing to translate
                key = f"{file_key}/{uid}" if version == "1.2" else f"{file_key}/{uid}/{sno}"
                yield _Unit(key, source.sourceline or 0, masked, codes, inline.source_shape(masked), unit, holder,
                            source)


def _check_lang(name: str, el: etree._Element, attr: str, want: str | None, option: str) -> None:
    have = el.get(attr)
    if want and have and _lang(have) != _lang(want):
        raise DocumentError(f"{name}:{el.sourceline}: the file's {attr} is {have!r} but {option} is {want!r}; "
                            "give the file's language")


def read(data: bytes, name: str, src: str | None = None, tgt: str | None = None) -> list[Segment]:
    """The segments to translate of an XLIFF file (``src``/``tgt``: the job's languages,
    checked against the file's)."""
    tree = parse_xml(data, name, "XLIFF")
    return [Segment(u.key, u.line, u.masked) for u in _units(tree, name, src, tgt)]


def pairs(data: bytes, name: str, src: str | None = None,
          tgt: str | None = None) -> Iterator[tuple[int, str, str]]:
    """(line, source, target) of every segment that has both, for ingest: the text of codes
    around text kept, codes on their own dropped (as TMX ingest drops ``<bpt>``/``<ph>``)."""
    tree = parse_xml(data, name, "XLIFF")
    root = tree.getroot()
    version = _version(root, name)
    ns = etree.QName(root).namespace
    q = (lambda t: f"{{{ns}}}{t}") if ns else (lambda t: t)
    if version == "2":
        _check_lang(name, root, "srcLang", src, "--src")
        _check_lang(name, root, "trgLang", tgt, "--tgt")
    for f in root.iterfind(q("file")):
        if version == "1.2":
            _check_lang(name, f, "source-language", src, "--src")
            _check_lang(name, f, "target-language", tgt, "--tgt")
        for unit in f.iter(q("trans-unit") if version == "1.2" else q("unit")):
            for holder in ([unit] if version == "1.2" else unit.findall(q("segment"))):
                source, target = holder.find(q("source")), holder.find(q("target"))
                if source is None or not _has_text(target):
                    continue
                texts = [inline.plain(inline.mask(_content(el, {}))) for el in (source, target)]
                yield source.sourceline or 0, texts[0], texts[1]


def _copy(parent: etree._Element, src: etree._Element) -> etree._Element:
    el = copy.deepcopy(src)
    el.tail = None
    parent.append(el)
    return el


def _fill(parent: etree._Element, nodes: list[inline.Node] | tuple[inline.Node, ...], codes: Codes,
          last: etree._Element | None = None) -> etree._Element | None:
    """Append ``nodes`` to ``parent`` after ``last`` (None: at its start): text, copies of the
    source's codes; a span's start and end around its content. Returns the last element."""
    for node in nodes:
        if isinstance(node, str):
            if last is None:
                parent.text = (parent.text or "") + node
            else:
                last.tail = (last.tail or "") + node
            continue
        src = codes[node.id]
        if isinstance(src, tuple):  # a span: start, content, end, all siblings
            last = _fill(parent, node.children, codes, _copy(parent, src[0]))
            last = _copy(parent, src[1])
        elif isinstance(node, inline.Ph):
            last = _copy(parent, src)
        else:
            last = etree.SubElement(parent, src.tag, attrib=dict(src.attrib))
            _fill(last, node.children, codes)
    return last


def _indent(parent: etree._Element) -> str | None:
    """The whitespace before a parent's first child (its children's indentation), if any."""
    text = parent.text
    return text if text and not text.strip() else None


def _insert_after(parent: etree._Element, after: etree._Element, new: etree._Element) -> None:
    """Put ``new`` right after ``after``, indented as its siblings are."""
    new.tail = after.tail
    after.tail = _indent(parent) or after.tail
    after.addnext(new)


def _append(parent: etree._Element, new: etree._Element) -> None:
    """Append ``new`` to ``parent``, indented as its siblings are."""
    kids = [c for c in parent]
    if kids:
        _insert_after(parent, kids[-1], new)
    else:
        parent.append(new)


def _target(u: _Unit, q, tgt: str | None) -> etree._Element:
    """The holder's <target>, emptied (attributes kept), or a new one right after <source>."""
    target = u.holder.find(q("target"))
    if target is None:
        after = u.source
        if u.holder is u.unit and u.unit.find(q("seg-source")) is not None:
            after = u.unit.find(q("seg-source"))
        target = etree.Element(q("target"))
        _insert_after(u.holder, after, target)
    else:
        for child in list(target):
            target.remove(child)
        target.text = None
    if tgt and u.holder is u.unit and target.get(XML_LANG) is None:
        target.set(XML_LANG, tgt)
    return target


def write(data: bytes, name: str, filled: dict[str, Filled], tgt: str | None = None) -> tuple[bytes, int]:
    """The XLIFF file with the targets of ``filled`` (by segment key) written; the number
    written. Segments not in ``filled`` are left as they were."""
    tree = parse_xml(data, name, "XLIFF")
    root = tree.getroot()
    version = _version(root, name)
    ns = etree.QName(root).namespace
    q = (lambda t: f"{{{ns}}}{t}") if ns else (lambda t: t)
    n = 0
    for u in list(_units(tree, name)):
        got = filled.get(u.key)
        if got is None or not got.fits(u.masked):
            continue
        answer = NOT_XML.sub("", got.answer)
        nodes, _ = inline.parse(answer, u.shape)
        target = _target(u, q, tgt)
        _fill(target, nodes, u.codes)
        qa = "; ".join(got.qa + (["characters XML cannot hold removed"] if answer != got.answer else []))
        if version == "1.2":
            target.set("state", "needs-review-translation")
            target.set("state-qualifier", "mt-suggestion")
            if qa:
                note = etree.Element(q("note"), {"from": QA_NOTE_FROM})
                note.text = f"scoi QA: {qa}"
                _append(u.unit, note)
        else:
            u.holder.set("state", "initial")
            u.holder.set("subState", "scoi:qa" if qa else "scoi:mt")
            if qa:
                _note20(u.unit, q, f"segment {u.holder.get('id') or u.key.rsplit('/', 1)[1]}: scoi QA: {qa}")
        n += 1
    if version == "2" and tgt and not root.get("trgLang"):
        root.set("trgLang", tgt)
    out = etree.tostring(tree, xml_declaration=True, encoding=tree.docinfo.encoding or "UTF-8")
    return out, n


def _note20(unit: etree._Element, q, text: str) -> None:
    """Add a QA note to a 2.x unit: in its <notes>, made before <originalData> and the
    segments if it has none."""
    notes = unit.find(q("notes"))
    if notes is None:
        notes = etree.Element(q("notes"))
        first = next((c for c in unit if _local(c) in ("originalData", "segment", "ignorable")), None)
        if first is None:
            _append(unit, notes)
        else:
            notes.tail = _indent(unit)
            first.addprevious(notes)
    note = etree.Element(q("note"), {"category": QA_CATEGORY, "appliesTo": "target"})
    note.text = text
    _append(notes, note)


__all__ = ["NS12", "NS20", "PAIRED", "pairs", "read", "write"]
