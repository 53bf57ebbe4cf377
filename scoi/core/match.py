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

import math
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


def unrounded(match: float) -> float:
    """The least unrounded match (0-1) whose rounded % reaches ``match``: half a unit of
    the last decimal below, and a little lower still (float error), so that bounds built
    on it never exclude a sentence that reaches ``match``."""
    return (match - 0.5 * 10 ** -DECIMALS) / 100.0 - 1e-9


def least_bm25_at(match: float, query_len: int, terms: Sequence[tuple[float, int]], ka: float, kc: float) -> float:
    """A lower bound of the BM25 score (scoi.selection.preselect's: sum of idf * query count *
    tf / (tf + ka + kc * dl)) of any stored sentence whose rounded match % against a query
    of ``query_len`` tokens is at least ``match``; ``terms``: (idf, count in the query) of
    the query's indexed tokens (the others are in no stored sentence). Why it holds: with
    unrounded match m, the edit distance is at most (1 - m) * max(q, dl), so
    dl <= q / m, and at least m * q query tokens (as a multiset) are in the sentence, each
    adding at least its idf * 1 / (1 + ka + kc * dl). A sentence scoring below this bound
    cannot reach ``match``: a lookup's small pool is then provably as good as any larger one."""
    m = unrounded(match)
    if m <= 0.0 or query_len == 0:
        return 0.0
    shared = math.ceil(query_len * m - 1e-9)
    units = sorted(idf for idf, cnt in terms for _ in range(cnt))
    units = [0.0] * max(0, query_len - len(units)) + units  # unindexed query tokens: in no sentence
    longest = query_len / m
    return math.fsum(units[:shared]) / (1.0 + ka + kc * longest)


def check_min_match(value: float | None) -> float | None:
    """``value`` when it is a usable --min-match (0-100), else ValueError naming it."""
    if value is not None and not 0.0 <= value <= 100.0:
        raise ValueError(f"min match {value:g} is not a percentage; expected a number from 0 to 100")
    return value


__all__ = ["DECIMALS", "check_min_match", "least_bm25_at", "match_all", "match_percent", "normalise", "unrounded"]
