"""Match %: how close a stored source sentence is to the query, as a CAT tool's
translation memory reports it (docs/method.md, "Match %").

Word-level edit distance on the sentences' Moses tokens (the ``sentence.tokens`` stored at
ingest, and the query's from the same analyser), compared case-insensitively, punctuation
tokens kept::

    match = round(100 * (1 - levenshtein(a, b) / max(len(a), len(b))), 2)

(100 for two empty token lists). Whitespace never counts: the tokens carry none. Pure: no
I/O; rapidfuzz computes the distance (on lists of tokens, not characters).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rapidfuzz.distance import Levenshtein

#: decimals a match % is rounded to (stored, compared with --min-match, shown)
DECIMALS = 2


def normalise(tokens: Sequence[str]) -> list[str]:
    """The tokens a match compares: lower-cased (a capital at the start of a sentence does
    not make it another segment); punctuation tokens stay, since a changed question mark
    or comma changes the translation a translator must write."""
    return [t.lower() for t in tokens]


def match_percent(a: Sequence[str], b: Sequence[str]) -> float:
    """Match % (0-100) of two token lists (already :func:`normalise`-d)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 100.0
    return round(100.0 * (1.0 - Levenshtein.distance(a, b) / longest), DECIMALS)


def match_all(query: Sequence[str], candidates: Iterable[Sequence[str]]) -> list[float]:
    """Match % of each candidate's tokens against the query's (both raw Moses tokens)."""
    q = normalise(query)
    return [match_percent(q, normalise(c)) for c in candidates]


def check_min_match(value: float | None) -> float | None:
    """``value`` when it is a usable --min-match (0-100), else ValueError naming it."""
    if value is not None and not 0.0 <= value <= 100.0:
        raise ValueError(f"min match {value:g} is not a percentage; expected a number from 0 to 100")
    return value


__all__ = ["DECIMALS", "check_min_match", "match_all", "match_percent", "normalise"]
