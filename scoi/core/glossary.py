"""Glossary matching and term checks, on word tokens (pure: no I/O; docs/glossary.md).

A glossary entry is a source term and the target term an output must use. The caller
(scoi.glossary) tokenises terms and sentences the same way — Moses tokens, or a spaCy
pipeline's tokens and lemmas where the language has a lemmatizer — and this module
compares token sequences:

* Case rule: a term matches whatever the case of the text (``Conseil`` = ``conseil``),
  unless it is an acronym (two or more letters, all capitals: ``ONU``, ``TVA``), which
  matches only as written, so ``ONU`` is not ``onu``. Acronyms are matched on their
  forms only, never on lemmas.
* A term of several words is a sequence of tokens; it matches where the sentence has
  those tokens in a row, by form, or by lemma (every token of the term's lemma key equal
  to the sentence's lemma at that place).
* Longest match first, then leftmost: a span of the sentence goes to one entry only, the
  first one in glossary order among those of that length; matches do not overlap
  (``chambre de commerce`` wins over ``chambre`` and ``commerce``).

The term check of an output asks, for each matched entry, whether the output has the
target term's tokens in a row, by the same rules (form, or lemma where lemmas exist).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Entry", "Index", "Match", "build_index", "check_terms", "contains", "find_matches", "is_acronym", "key_of",
           "term_accuracy"]


def is_acronym(term: str) -> bool:
    """Whether ``term`` is matched case-sensitively: at least two letters, every cased
    letter a capital (``ONU``, ``TVA``, ``COVID-19``)."""
    letters = [c for c in term if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters if c.lower() != c.upper())


def key_of(tokens: Sequence[str], exact: bool) -> tuple[str, ...]:
    """The comparison key of some tokens: as they are for an exact-case term, else casefolded."""
    return tuple(tokens) if exact else tuple(t.casefold() for t in tokens)


@dataclass(frozen=True)
class Entry:
    """One glossary entry as the matcher sees it: the terms, the note, and the token keys
    (``src_key`` as given by :func:`key_of`; lemma keys casefolded, None without a lemmatizer)."""

    src: str
    tgt: str
    note: str | None
    src_key: tuple[str, ...]
    tgt_key: tuple[str, ...]
    src_lemmas: tuple[str, ...] | None = None
    tgt_lemmas: tuple[str, ...] | None = None

    @property
    def exact(self) -> bool:
        return is_acronym(self.src)


@dataclass(frozen=True)
class Match:
    """An entry found in a sentence: tokens ``start``..``end`` (exclusive)."""

    entry: Entry
    start: int
    end: int

    def to_dict(self) -> dict[str, str | None]:
        return {"src": self.entry.src, "tgt": self.entry.tgt, "note": self.entry.note}


def _occurs_at(forms: Sequence[str], lemmas: Sequence[str] | None, i: int, key: tuple[str, ...],
               lemma_key: tuple[str, ...] | None, exact: bool) -> bool:
    n = len(key)
    if n and i + n <= len(forms) and key_of(forms[i:i + n], exact) == key:
        return True
    if exact or lemma_key is None or lemmas is None or not lemma_key:
        return False
    m = len(lemma_key)
    return i + m <= len(lemmas) and tuple(t.casefold() for t in lemmas[i:i + m]) == lemma_key


@dataclass(frozen=True)
class Index:
    """A glossary's entries indexed by their first word (form casefolded, and lemma), so a
    sentence is matched in time of its length, not of the glossary's size."""

    entries: tuple[Entry, ...]
    by_form: dict[str, tuple[int, ...]]
    by_lemma: dict[str, tuple[int, ...]]


def build_index(entries: Sequence[Entry]) -> Index:
    """The :class:`Index` of ``entries`` (their order kept: it breaks ties)."""
    by_form: dict[str, list[int]] = {}
    by_lemma: dict[str, list[int]] = {}
    for order, e in enumerate(entries):
        if e.src_key:
            by_form.setdefault(e.src_key[0].casefold(), []).append(order)
        if e.src_lemmas and not e.exact:
            by_lemma.setdefault(e.src_lemmas[0], []).append(order)
    return Index(tuple(entries), {k: tuple(v) for k, v in by_form.items()},
                 {k: tuple(v) for k, v in by_lemma.items()})


def find_matches(forms: Sequence[str], lemmas: Sequence[str] | None, entries: Sequence[Entry] | Index) -> list[Match]:
    """The entries found in a sentence of tokens ``forms`` (and their ``lemmas``, aligned,
    or None), longest first, then leftmost, then in glossary order, without overlap;
    returned in sentence order. ``entries``: a list, or its :func:`build_index` (built once
    per glossary, which is what makes a large glossary cheap)."""
    if lemmas is not None and len(lemmas) != len(forms):
        raise ValueError(f"{len(lemmas)} lemmas for {len(forms)} tokens")
    idx = entries if isinstance(entries, Index) else build_index(entries)
    found: list[tuple[int, int, int, Entry]] = []  # (-length, start, entry order, entry)
    for i, form in enumerate(forms):
        orders = set(idx.by_form.get(form.casefold(), ()))
        if lemmas is not None:
            orders.update(idx.by_lemma.get(lemmas[i].casefold(), ()))
        for order in sorted(orders):
            e = idx.entries[order]
            if _occurs_at(forms, None, i, e.src_key, None, e.exact):
                found.append((-len(e.src_key), i, order, e))
            elif _occurs_at(forms, lemmas, i, (), e.src_lemmas, e.exact):
                found.append((-len(e.src_lemmas or ()), i, order, e))
    taken = [False] * len(forms)
    out: list[Match] = []
    for neg, start, _, e in sorted(found, key=lambda f: f[:3]):
        end = start - neg
        if any(taken[start:end]):
            continue
        taken[start:end] = [True] * (end - start)
        out.append(Match(e, start, end))
    return sorted(out, key=lambda m: m.start)


def contains(forms: Sequence[str], lemmas: Sequence[str] | None, key: tuple[str, ...],
             lemma_key: tuple[str, ...] | None, exact: bool) -> bool:
    """Whether tokens ``forms`` (lemmas ``lemmas``) hold ``key`` in a row, by form under the
    case rule, or by lemma."""
    return any(_occurs_at(forms, lemmas, i, key, lemma_key, exact) for i in range(len(forms)))


def check_terms(matches: Sequence[Match], forms: Sequence[str], lemmas: Sequence[str] | None) -> list[dict]:
    """The term check of an output of tokens ``forms``/``lemmas``: for each entry matched
    in its source (once per entry), ``{src, tgt, found}``."""
    seen: set[tuple[str, str]] = set()
    out = []
    for m in matches:
        e = m.entry
        if (e.src, e.tgt) in seen:
            continue
        seen.add((e.src, e.tgt))
        exact = is_acronym(e.tgt)
        out.append({"src": e.src, "tgt": e.tgt,
                    "found": contains(forms, lemmas, e.tgt_key, e.tgt_lemmas, exact)})
    return out


def term_accuracy(checks: Sequence[Sequence[dict]]) -> tuple[int, int]:
    """(found, required) over the term checks of several outputs."""
    required = sum(len(c) for c in checks)
    found = sum(1 for c in checks for t in c if t.get("found"))
    return found, required
