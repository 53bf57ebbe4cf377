"""gettext PO files (polib): the messages to translate, and the file back with msgstr filled.

Read: every entry that is not obsolete, not translated yet (empty msgstr, or fuzzy) and has
text; its key is ``L<line>`` (the line its msgid starts on), and ``L<line>:plural`` for the
msgid_plural of a plural entry. Placeholders become ``<N/>`` (scoi.core.inline): printf
conversions (``%s``, ``%d``, ``%(name)s``, ``%1$s``) when the entry is flagged as a format
string (``c-format``, ``python-format``, ...), and simple brace arguments (``{name}``,
``{0}``, ``{count, number}``) always. ICU plural/select messages (braces inside braces)
are translated as they are.

Write: the same file (polib's layout) with each translated entry's msgstr filled, and
``fuzzy`` flagged: the PO way of "machine translation, needs review". A plural entry gets
msgstr[0] from its msgid's translation and every other form from its msgid_plural's
(``nplurals`` of the Plural-Forms header, 2 when absent). An entry with QA flags gets a
translator comment ``scoi QA: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import polib

from scoi.core import inline
from scoi.formats import DocumentError, Filled, Segment

#: printf conversions: %s, %5.2f, %(name)s, %1$s, %ld (not %%).
PRINTF = re.compile(r"%(?:\d+\$|\([A-Za-z_][A-Za-z0-9_]*\))?[-#0 +']*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
                    r"(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGcrsa]")
#: Brace arguments without braces inside: {name}, {0}, {count, number}, {0:>10} (not {{ }}).
BRACE = re.compile(r"(?<!\{)\{[A-Za-z0-9_][^{}]*\}(?!\})")
QA_COMMENT = "scoi QA:"


def _printf(entry: polib.POEntry) -> bool:
    return any(f.endswith("-format") and not f.startswith("no-") and f != "python-brace-format"
               for f in entry.flags)


def _nodes(text: str, printf: bool) -> tuple[list[inline.Node], list[str]]:
    """The text as nodes, each placeholder a code; the placeholders by number (1-based)."""
    pattern = re.compile(f"{PRINTF.pattern}|{BRACE.pattern}" if printf else BRACE.pattern)
    nodes: list[inline.Node] = []
    found: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            nodes.append(text[pos:m.start()])
        found.append(m.group(0))
        nodes.append(inline.Ph(len(found)))
        pos = m.end()
    if pos < len(text):
        nodes.append(text[pos:])
    return nodes, found


def _load(data: bytes, name: str) -> polib.POFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise DocumentError(f"{name}:{line}: invalid UTF-8 in a PO file (byte {data[e.start]:#04x}); expected "
                            "UTF-8 text") from None
    if "\x00" in text:
        raise DocumentError(f"{name}:{text[:text.index(chr(0))].count(chr(10)) + 1}: NUL character in a PO file")
    try:
        po = polib.pofile(text, wrapwidth=78)
    except (OSError, ValueError) as e:
        msg = str(e)
        m = re.search(r"\(line (\d+)\)", msg)
        line = m.group(1) if m else "1"
        raise DocumentError(f"{name}:{line}: malformed PO: {re.sub(r' ?[(]line [0-9]+[)]', '', msg)} (expected "
                            "comments, msgctxt/msgid/msgstr keywords and quoted strings)") from None
    return po


def _entries(po: polib.POFile) -> list[tuple[str, int, str, polib.POEntry]]:
    """(key, line, text, entry) of every message to translate, in file order."""
    out = []
    for e in po:
        if e.obsolete or not e.msgid or (e.translated() and "fuzzy" not in e.flags):
            continue
        out.append((f"L{e.linenum}", e.linenum, e.msgid, e))
        if e.msgid_plural:
            out.append((f"L{e.linenum}:plural", e.linenum, e.msgid_plural, e))
    return out


def read(data: bytes, name: str, src: str | None = None, tgt: str | None = None) -> list[Segment]:
    """The messages to translate of a PO file (``tgt`` checked against its Language header)."""
    po = _load(data, name)
    have = po.metadata.get("Language", "").strip()
    if tgt and have and have.split("_")[0].split("-")[0].lower() != tgt.split("-")[0].lower():
        raise DocumentError(f"{name}: the file's Language header is {have!r} but the job's --tgt is {tgt!r}")
    segs = []
    for key, line, text, entry in _entries(po):
        masked = _masked(text, _printf(entry))
        if inline.plain(masked):
            segs.append(Segment(key, line, masked))
    return segs


def pairs(data: bytes, name: str, src: str | None = None,
          tgt: str | None = None) -> Iterator[tuple[int, str, str]]:
    """(line, msgid, msgstr) of every translated entry (not fuzzy, not obsolete), for ingest;
    a plural entry gives (msgid, msgstr[0]) and (msgid_plural, msgstr[1])."""
    po = _load(data, name)
    have = po.metadata.get("Language", "").strip()
    if tgt and have and have.split("_")[0].split("-")[0].lower() != tgt.split("-")[0].lower():
        raise DocumentError(f"{name}: the file's Language header is {have!r} but the target language is {tgt!r}")
    for e in po.translated_entries():
        if e.msgid_plural:
            forms = e.msgstr_plural
            yield e.linenum, e.msgid, forms.get(0, "")
            if forms.get(1):
                yield e.linenum, e.msgid_plural, forms[1]
        else:
            yield e.linenum, e.msgid, e.msgstr


def _masked(text: str, printf: bool) -> str:
    nodes, _ = _nodes(text, printf)
    return " ".join(inline.mask(nodes).split())


def _nplurals(po: polib.POFile) -> int:
    m = re.search(r"nplurals\s*=\s*(\d+)", po.metadata.get("Plural-Forms", ""))
    return max(1, int(m.group(1))) if m else 2


def _restore(answer: str, text: str, printf: bool) -> str:
    """The answer with its placeholders back (only those the source has, once each)."""
    _, found = _nodes(text, printf)
    tree, _ = inline.parse(answer, inline.source_shape(_masked(text, printf)))
    return "".join(n if isinstance(n, str) else found[n.id - 1] for n in tree)


def write(data: bytes, name: str, filled: dict[str, Filled], tgt: str | None = None) -> tuple[bytes, int]:
    """The PO file with the msgstr of ``filled`` (by key) written and flagged fuzzy; the
    number of entries written."""
    po = _load(data, name)
    n = 0
    done: set[int] = set()
    for key, _, text, entry in _entries(po):
        got = filled.get(key)
        if got is None or not got.fits(_masked(text, _printf(entry))):
            continue
        value = _restore(got.answer, text, _printf(entry))
        if entry.msgid_plural:
            if key.endswith(":plural"):
                for i in range(1 if _nplurals(po) > 1 else 0, _nplurals(po)):
                    entry.msgstr_plural[i] = value
            else:
                entry.msgstr_plural[0] = value
        else:
            entry.msgstr = value
        if "fuzzy" not in entry.flags:
            entry.flags.insert(0, "fuzzy")
        if got.qa:
            note = f"{QA_COMMENT} {'; '.join(got.qa)}"
            entry.tcomment = f"{entry.tcomment}\n{note}" if entry.tcomment else note
        if id(entry) not in done:
            done.add(id(entry))
            n += 1
    if tgt and not po.metadata.get("Language"):
        po.metadata["Language"] = tgt
    return str(po).encode("utf-8") + b"\n", n


__all__ = ["BRACE", "PRINTF", "pairs", "read", "write"]
