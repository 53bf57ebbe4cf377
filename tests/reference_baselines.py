"""Slow, literal R-BM25 and DPP (docs/method.md §7.1, §7.2), to check scoi.core.rbm25 and
scoi.core.dpp against.

Plain dictionaries and loops, straight from the text: R-BM25 keeps a weight per test n-gram
(trigrams tracked too for the CTQ variant, as the released code does) and rescores every
candidate from scratch each round; DPP builds the kernel entry by entry and takes, at each
step, the candidate that maximises det(L_{Y ∪ {i}}) — computed as a determinant, not by
the incremental Cholesky update of the fast path. The only shared pieces are the score
formulas' constants and tolerances (the tie and stopping rules must be the same rules).
"""

from __future__ import annotations

import math

import numpy as np

from scoi.core.dpp import RESIDUAL_TOL, TIE_TOL
from scoi.core.pool import Choice


# ------------------------------------------------------------------ R-BM25 (§7.1)
def ngrams(tokens, lo: int, hi: int) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for n in range(lo, hi + 1):
        for i in range(len(tokens) - n + 1):
            g = tuple(tokens[i:i + n])
            out[g] = out.get(g, 0) + 1
    return out


def rbm25_ctq(query_tokens, cand_tokens, n_picks: int) -> list[tuple[int, float]]:
    """CTQ Scorer's loop: orders 1-3 tracked, 1-2 scored, λ = 0.25, stop at a best score <= 0."""
    weights = {g: float(c) for g, c in ngrams(query_tokens, 1, 3).items()}
    cands = [ngrams(t, 1, 3) for t in cand_tokens]
    picks: list[tuple[int, float]] = []
    while len(picks) < n_picks:
        best, best_j, best_matched = 0.0, None, {}
        for j, grams in enumerate(cands):
            matched = {g: min(w, grams[g]) for g, w in weights.items() if g in grams}
            power = 0.0
            for n in (1, 2):
                hit = sum(v for g, v in matched.items() if len(g) == n)
                total = sum(w for g, w in weights.items() if len(g) == n)
                if hit:
                    power += n / 4 * math.log(hit / total)
            score = 0.0 if power == 0 else round(math.e ** power, 2)
            if score > best:
                best, best_j, best_matched = score, j, matched
        if best_j is None:
            break
        picks.append((best_j, best))
        cands[best_j] = {}
        for g in best_matched:
            weights[g] *= 0.25
    return picks


def rbm25_agrawal(query_tokens, cand_tokens, n_picks: int) -> list[tuple[int, float]]:
    """Agrawal et al.'s loop: orders 1-4, smoothed geometric mean x100, λ = 0.1, stop below 1."""
    weights = {g: float(c) for g, c in ngrams(query_tokens, 1, 4).items()}
    cands = [{g: float(c) for g, c in ngrams(t, 1, 4).items()} for t in cand_tokens]
    picks: list[tuple[int, float]] = []
    while len(picks) < n_picks:
        scores = []
        for grams in cands:
            correct, total = [0.0] * 4, [0.0] * 4
            for g, w in weights.items():
                total[len(g) - 1] += w
                if g in grams:
                    correct[len(g) - 1] += min(w, grams[g])
            scores.append(_bleu_like(correct, total))
        if not scores:
            break
        j = max(range(len(scores)), key=lambda i: (scores[i], -i))
        if scores[j] < 1.0:
            break
        picks.append((j, scores[j]))
        for g in weights:
            if g in cands[j]:
                weights[g] *= 0.1
        cands[j] = {g: 0.0 for g in cands[j]}
    return picks


def _bleu_like(correct, total) -> float:
    """exp(mean of ln p_n) over the orders the sentence has; p_n = 100·correct/total, or,
    without a match, 100 / (2^h · total) where h counts the unmatched orders up to n."""
    if not any(correct):
        return 0.0
    n_eff = sum(1 for t in total if t > 0)
    logs = []
    for n in range(n_eff):
        if correct[n]:
            logs.append(math.log(100.0 * correct[n] / total[n]))
        else:
            halvings = sum(1 for m in range(n + 1) if not correct[m])
            logs.append(math.log(100.0 / (2.0 ** halvings * total[n])))
    return math.exp(sum(logs) / n_eff)


# ------------------------------------------------------------------ DPP (§7.2)
def bm25_vectors(query_tokens, cand_tokens) -> list[list[float]]:
    """W[i][t]: BM25 (k1 = 1.2, b = 0.75, Lucene idf over the pool) of query token t, one
    entry per occurrence, lowercased."""
    query = [t.lower() for t in query_tokens]
    docs = [[t.lower() for t in toks] for toks in cand_tokens]
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n if n else 0.0
    rows = []
    for d in docs:
        row = []
        for t in query:
            df = sum(1 for other in docs if t in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = d.count(t)
            ratio = len(d) / avgdl if avgdl > 0 else 0.0
            row.append(idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * ratio)))
        rows.append(row)
    return rows


def kernel(distances, vectors, theta: float = 0.5) -> np.ndarray:
    n = len(distances)
    q = [math.exp((0.0 if math.isinf(d) else 1 / (1 + d)) / (2 * theta)) for d in distances]
    norms = [math.sqrt(sum(x * x for x in v)) for v in vectors]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            cos = 0.0
            if norms[i] > 0 and norms[j] > 0:
                cos = sum(a * b for a, b in zip(vectors[i], vectors[j])) / (norms[i] * norms[j])
            L[i, j] = q[i] * cos * q[j]
    return L


def greedy_map(L: np.ndarray, k: int, trace: list | None = None) -> list[tuple[int, float]]:
    """Each step: the candidate maximising det(L_{Y+i}) (gain det(L_{Y+i}) / det(L_Y));
    first within TIE_TOL of the best; stop when the best gain <= RESIDUAL_TOL. ``trace``
    receives each step's gains."""
    n = len(L)
    chosen: list[int] = []
    picks: list[tuple[int, float]] = []
    while len(chosen) < min(k, n):
        base = np.linalg.det(L[np.ix_(chosen, chosen)]) if chosen else 1.0
        gains = {i: np.linalg.det(L[np.ix_(chosen + [i], chosen + [i])]) / base for i in range(n) if i not in chosen}
        if trace is not None:
            trace.append(list(gains.values()))
        top = max(gains.values())
        j = min(i for i, g in gains.items() if g >= top - TIE_TOL)
        if not gains[j] > RESIDUAL_TOL:
            break
        chosen.append(j)
        picks.append((j, float(gains[j])))
    return picks


def dpp(distances, query_tokens, candidates, k: int) -> list[tuple[int, float]]:
    return greedy_map(kernel(distances, bm25_vectors(query_tokens, [c.tokens for c in candidates])), k)


def select(distances, query_tokens, candidates, k: int, method: str, rbm25_variant: str = "ctq") -> list[Choice]:
    """The ``rbm25`` and ``dpp`` branches of :func:`scoi.core.greedy.select` (``distances``:
    the polynomial distances of the candidates, for DPP): the picks, then (except for
    Agrawal's R-BM25) the other candidates in pool order, labelled bm25."""
    if method == "rbm25":
        impl = rbm25_agrawal if rbm25_variant == "agrawal" else rbm25_ctq  # moses and ctq differ in tokens only
        picks = [Choice(i, "rbm25", s) for i, s in impl(query_tokens, [list(c.tokens) for c in candidates], k)]
        if rbm25_variant == "agrawal":
            return picks
    else:
        picks = [Choice(i, "dpp", g) for i, g in dpp(distances, query_tokens, candidates, k)]
    for i in range(len(candidates)):
        if len(picks) < k and i not in [p.index for p in picks]:
            picks.append(Choice(i, "bm25", None))
    return picks


# ------------------------------------------------------------------ Fuzzy (docs/method.md §7)
def fuzzy(query, candidates, k: int) -> list[tuple[int, float]]:
    """Cosine of each candidate with the query from the formula u·v / (|u| |v|) (0 for a zero
    vector), then a plain Python sort: cosine descending, lower index first on ties."""
    def cos(u, v) -> float:
        nu, nv = math.sqrt(sum(x * x for x in u)), math.sqrt(sum(x * x for x in v))
        return 0.0 if nu == 0 or nv == 0 else sum(a * b for a, b in zip(u, v)) / (nu * nv)

    scored = [(i, cos(list(map(float, query)), list(map(float, c)))) for i, c in enumerate(candidates)]
    return sorted(scored, key=lambda t: (-t[1], t[0]))[:max(k, 0)]
