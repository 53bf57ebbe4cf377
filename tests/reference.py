"""Slow, literal implementations of docs/method.md §3, §4 and §7, to check the fast code against,
and of §5's pool rule (one pair per source sentence, the best-ranked): :func:`distinct_pool`;
the candidates ``select`` is given are such a pool.

Plain Python loops over plain lists; every coverage of a candidate set is recomputed from
scratch, as the authors' released code does (docs/method.md §4). ``select`` has the same signature
and result type as :func:`scoi.core.greedy.select`, so benchmarks can time one against the
other. The only shared pieces are the data classes and the tie rule
(:func:`scoi.core.coverage.argmax_first` / :func:`~scoi.core.coverage.improves`): both
implementations must break ties by the same rule, or they could legitimately differ.

Word overlap definitions (same as the fast code): ``set`` = unique tokens, W_Z the union;
``multiset`` = token counts, W_Z the multiset *sum* of the examples, intersection = min.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from scoi.core.coverage import argmax_first, improves
from scoi.core.greedy import check_args
from scoi.core.pool import Features, Choice

from tests import reference_baselines as baselines

Vec = list[int]


def _rows(terms: np.ndarray) -> list[Vec]:
    """Term array -> list of plain int lists (one per term, repeats kept)."""
    return [[int(v) for v in row] for row in np.asarray(terms)]


def l1(s: Vec, t: Vec) -> int:
    return sum(abs(a - b) for a, b in zip(s, t))


def sim(s: Vec, t: Vec, similarity: str = "distance") -> float:
    """c(s, t): 1/(1 + L1) or cosine (0 when a vector is zero)."""
    if similarity == "distance":
        return 1.0 / (1.0 + l1(s, t))
    dot = sum(a * b for a, b in zip(s, t))
    ns = math.sqrt(sum(a * a for a in s))
    nt = math.sqrt(sum(b * b for b in t))
    return dot / (ns * nt) if ns > 0 and nt > 0 else 0.0


def syn_set_cov(query_terms, example_terms_list, similarity: str = "distance") -> float:
    """(1/|T_x|) Σ_{s∈T_x} max_{t∈T_Z} c(s, t); 0.0 for empty Z or empty T_x."""
    tx = _rows(query_terms)
    tz = [t for terms in example_terms_list for t in _rows(terms)]
    if not tx or not tz:
        return 0.0
    total = 0.0
    for s in tx:
        best = 0.0
        for t in tz:
            best = max(best, sim(s, t, similarity))
        total += best
    return total / len(tx)


def word_set_cov(query_tokens, example_tokens_list, overlap: str = "set") -> float:
    """|W_x ∩ W_Z| / |W_x|, 0.0 when x has no tokens."""
    if overlap == "set":
        wx = list(dict.fromkeys(query_tokens))
        if not wx:
            return 0.0
        hit = 0
        for w in wx:
            if any(w in toks for toks in example_tokens_list):
                hit += 1
        return hit / len(wx)
    if not query_tokens:
        return 0.0
    hit = 0
    for w in dict.fromkeys(query_tokens):
        in_x = sum(1 for tok in query_tokens if tok == w)
        in_z = sum(1 for toks in example_tokens_list for tok in toks if tok == w)
        hit += min(in_x, in_z)
    return hit / len(query_tokens)


def poly_distance(p, q) -> float:
    """docs/method.md §7 d(P, Q); both empty -> 0.0, one empty -> inf."""
    ps, qs = _rows(p), _rows(q)
    if not ps and not qs:
        return 0.0
    if not ps or not qs:
        return math.inf
    num = sum(min(l1(s, t) for t in qs) for s in ps) + sum(min(l1(s, t) for s in ps) for t in qs)
    return num / (len(ps) + len(qs))


def select(
    query_terms: np.ndarray,
    query_tokens: Sequence[str],
    candidates: Sequence[Features],
    k: int = 4,
    method: str = "scoi",
    similarity: str = "distance",
    word_overlap: str = "set",
    seed: int = 0,
    *,
    rbm25_variant: str = "ctq",
    embeddings: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[Choice]:
    """Same contract as :func:`scoi.core.greedy.select`, computed the slow way (R-BM25, DPP
    and Fuzzy in ``tests/reference_baselines.py``)."""
    check_args(method, similarity, word_overlap, k)
    n = len(candidates)
    if method == "zero" or k == 0 or n == 0:
        return []
    if method in ("fuzzy", "fuzzy-ann"):
        if embeddings is None:
            raise ValueError(f"method {method!r} ranks by sentence embeddings; none were given")
        return [Choice(i, "fuzzy", c) for i, c in baselines.fuzzy(embeddings[0], embeddings[1], k)]
    if method in ("rbm25", "dpp"):
        dists = [poly_distance(query_terms, c.terms) for c in candidates]
        return baselines.select(dists, query_tokens, candidates, k, method, rbm25_variant)
    if method == "bm25":
        return [Choice(i, "bm25", None) for i in range(min(k, n))]
    if method == "random":
        order = np.random.default_rng(seed).permutation(n)[:k]
        return [Choice(int(i), "random", None) for i in order]
    if method == "poly-topk":
        dists = [poly_distance(query_terms, c.terms) for c in candidates]
        order = sorted(range(n), key=lambda i: (dists[i], i))[:k]
        return [Choice(i, "poly", dists[i]) for i in order]

    def coverage(criterion: str, cover: list[int]) -> float:
        if criterion == "syntax":
            return syn_set_cov(query_terms, [candidates[i].terms for i in cover], similarity)
        return word_set_cov(query_tokens, [list(candidates[i].tokens) for i in cover], word_overlap)

    picks: list[Choice] = []
    chosen: list[int] = []  # Z
    cover: list[int] = []  # Z_cur
    best = {"syntax": -math.inf, "word": -math.inf}
    while len(chosen) < k and len(chosen) < n:
        if method in ("syntax", "word"):
            criterion = method
        else:
            even = "syntax" if method == "scoi" else "word"
            odd = "word" if method == "scoi" else "syntax"
            criterion = even if len(chosen) % 2 == 0 else odd
        unselected = [z for z in range(n) if z not in chosen]
        covs = [coverage(criterion, cover + [z]) for z in unselected]
        top = max(covs)
        winner = unselected[argmax_first(covs)]
        if improves(top, best[criterion]):
            chosen.append(winner)
            cover.append(winner)
            best[criterion] = top
            picks.append(Choice(winner, criterion, top))
        else:
            cover = []
            best[criterion] = -math.inf
    return picks


def same_sentence(a: str, b: str) -> bool:
    """docs/method.md §5: two sources are one sentence when they are equal in NFC with every
    run of whitespace read as one space and the ends stripped."""
    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()

    return norm(a) == norm(b)


def distinct_pool(ranked, n: int) -> list:
    """The pool of docs/method.md §5 from candidates ranked by BM25 (best first, ties by pair
    id; objects with ``src``): walk the ranking, skip a candidate whose source sentence an
    earlier kept one has, stop at ``n`` kept."""
    pool: list = []
    for cand in ranked:
        if len(pool) == n:
            break
        if not any(same_sentence(kept.src, cand.src) for kept in pool):
            pool.append(cand)
    return pool


def word_levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance between two token lists: insertions, deletions and substitutions of
    whole tokens, each costing 1 (the textbook dynamic programme, one row at a time)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = row
    return prev[-1]


def match_percent(query_tokens: Sequence[str], tokens: Sequence[str]) -> float:
    """Match % as docs/method.md defines it: tokens lower-cased (punctuation kept),
    100 * (1 - distance / longer length), two decimals; 100 for two empty sentences."""
    a, b = [t.lower() for t in query_tokens], [t.lower() for t in tokens]
    if not a and not b:
        return 100.0
    return round(100.0 * (1.0 - word_levenshtein(a, b) / max(len(a), len(b))), 2)
