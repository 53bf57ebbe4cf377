"""Inline codes as numbered placeholders: what the model sees, what comes back, what it broke.

A CAT file's segment is text with inline codes (XLIFF ``<g>``, ``<x/>``, ``<pc>``, ``<ph/>``,
...; PO placeholders ``%s``, ``{name}``). The model must keep them, in the right places, but
not see their markup: each code becomes a numbered token, which models copy reliably

* ``<N>`` ... ``</N>``: a code around text (XLIFF 1.2 ``<g>``/``<mrk>``, 2.x ``<pc>``/``<mrk>``);
* ``<N/>``: a code on its own (``<x/>``, ``<bx/>``, ``<ex/>``, ``<ph>``, ``<sc/>``, ``<ec/>``,
  ``<bpt>``, ``<ept>``, ``<it>``, a printf or brace placeholder).

Tokens are numbered from 1 per segment in document order. Selection runs on :func:`plain`,
the text without tokens. An answer is read back with :func:`parse`: a tree of text, codes on
their own and codes around text, keeping only the tokens that form a well-nested structure
of the source's codes, so whatever the model wrote, the rebuilt target is well-formed; every
way the answer departs from the source is a QA flag (:func:`check`):

* ``missing <N>`` (or ``</N>``, ``<N/>``): a code of the source is not in the answer;
* ``extra <N/>``: a token the source has not, or one written twice;
* ``misnested </N>``: a code whose pair is broken or crossed, or that moved into or out of
  another code (``<2/>`` inside ``<1>``...``</1>`` in the source, outside it in the answer);
* ``invented <b>``: markup in the answer (an HTML/XML tag) where the source had none.

Pure: no I/O; the formats (scoi.jobs.documents) turn XML and PO entries into trees and back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

#: A placeholder token: ``<N>``, ``</N>`` or ``<N/>`` (N: 1 to 9999).
TOKEN = re.compile(r"<(/?)([1-9][0-9]{0,3})(/?)>")
#: Markup a model may invent: an XML/HTML start, end or empty tag (tokens are not markup).
MARKUP = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")


@dataclass(frozen=True)
class Ph:
    """A code on its own: ``<N/>``."""

    id: int


@dataclass(frozen=True)
class Pc:
    """A code around text: ``<N>`` children ``</N>``."""

    id: int
    children: tuple["Node", ...] = field(default_factory=tuple)


Node = Union[str, Ph, Pc]


def mask(nodes: list[Node] | tuple[Node, ...]) -> str:
    """The text the model sees: text as it is, codes as tokens."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, Ph):
            out.append(f"<{node.id}/>")
        else:
            out.append(f"<{node.id}>{mask(node.children)}</{node.id}>")
    return "".join(out)


def plain(text: str) -> str:
    """``text`` without its tokens, spaces collapsed: what selection matches on. A code
    around text goes (``<1>ici</1>``: ``ici``); a code on its own leaves a space (a line
    break or an image between two words must not glue them)."""
    return " ".join(TOKEN.sub(lambda m: " " if m.group(3) else "", text).split())


def has_tokens(text: str) -> bool:
    return TOKEN.search(text) is not None


def _shape(nodes: tuple[Node, ...] | list[Node], parent: int = 0,
           out: dict[int, tuple[str, int]] | None = None) -> dict[int, tuple[str, int]]:
    """Code id -> (kind ``pc``/``ph``, the id of the code around it, 0 at the top)."""
    out = {} if out is None else out
    for node in nodes:
        if isinstance(node, Ph):
            out[node.id] = ("ph", parent)
        elif isinstance(node, Pc):
            out[node.id] = ("pc", parent)
            _shape(node.children, node.id, out)
    return out


def source_shape(masked: str) -> dict[int, tuple[str, int]]:
    """The codes of a masked source: id -> (kind, enclosing code id). A masked source is
    always well-nested (it was made by :func:`mask`)."""
    return _shape(parse(masked, None)[0])


def _token_label(closing: str, num: str, empty: str) -> str:
    return f"<{closing}{num}{empty}>"


def parse(answer: str, shape: dict[int, tuple[str, int]] | None) -> tuple[list[Node], list[str]]:
    """The answer as a tree of the source's codes, and the QA flags of what had to be left
    out. ``shape`` (:func:`source_shape`): the codes the source has; None takes every token
    as it comes (reading a masked source). Only tokens that fit are kept: a code the source
    has, once, of the same kind, paired and nested properly; the others are dropped (their
    text kept) and flagged, so building the target from the tree never breaks the XML."""
    flags: list[str] = []
    # Pass 1: which tokens are kept. A stack of open codes; a close that matches the top
    # pairs; one that matches a lower entry closes it and drops the opens above (crossed).
    toks = list(TOKEN.finditer(answer))
    keep: set[int] = set()  # indexes into toks
    seen: set[int] = set()
    stack: list[tuple[int, int]] = []  # (code id, token index)
    for i, m in enumerate(toks):
        closing, num, empty = m.group(1), int(m.group(2)), m.group(3)
        label = _token_label(m.group(1), m.group(2), m.group(3))
        if closing and empty:
            flags.append(f"extra {label}")
            continue
        kind = "ph" if empty else "pc"
        known = shape is None or (num in shape and shape[num][0] == kind)
        if not closing:
            if not known or num in seen:
                flags.append(f"extra {label}")
                continue
            seen.add(num)
            if empty:
                keep.add(i)
            else:
                stack.append((num, i))
            continue
        ids = [n for n, _ in stack]
        if num not in ids:
            flags.append(f"{'misnested' if num in seen else 'extra'} {label}")
            continue
        while stack[-1][0] != num:
            dropped, _ = stack.pop()
            flags.append(f"misnested <{dropped}>")
        _, j = stack.pop()
        keep.update((i, j))
    for dropped, _ in stack:
        flags.append(f"missing </{dropped}>")
    # Pass 2: build the tree from the kept tokens.
    root: list[Node] = []
    frames: list[tuple[int, list[Node]]] = [(0, root)]
    pos = 0

    def text(s: str) -> None:
        if s:
            children = frames[-1][1]
            if children and isinstance(children[-1], str):
                children[-1] += s
            else:
                children.append(s)

    for i, m in enumerate(toks):
        text(answer[pos:m.start()])
        pos = m.end()
        if i not in keep:
            continue
        num = int(m.group(2))
        if m.group(3):
            frames[-1][1].append(Ph(num))
        elif not m.group(1):
            frames.append((num, []))
        else:
            done_id, children = frames.pop()
            frames[-1][1].append(Pc(done_id, tuple(children)))
    text(answer[pos:])
    return root, flags


def check(masked_source: str, answer: str) -> list[str]:
    """The QA flags of an answer against its masked source (empty: every code kept, in
    place, and no markup invented). Order of codes within one level may change: a
    translation moves words."""
    shape = source_shape(masked_source)
    tree, flags = parse(answer, shape)
    got = _shape(tree)
    flagged = {int(m.group(2)) for f in flags for m in TOKEN.finditer(f)}
    for num, (kind, parent) in sorted(shape.items()):
        if num not in got:
            if num not in flagged:
                flags.append(f"missing <{num}/>" if kind == "ph" else f"missing <{num}>")
        elif got[num][1] != parent:
            flags.append(f"misnested <{num}/>" if kind == "ph" else f"misnested <{num}>")
    source_markup = set(MARKUP.findall(TOKEN.sub("", masked_source)))
    for tag in MARKUP.findall(TOKEN.sub("", answer)):
        if tag not in source_markup:
            flags.append(f"invented {tag}")
    return list(dict.fromkeys(flags))


__all__ = ["MARKUP", "TOKEN", "Node", "Pc", "Ph", "check", "has_tokens", "mask", "parse", "plain", "source_shape"]
