"""R-BM25: n-gram recall re-ranking of the BM25 pool with coverage (docs/method.md §7.1).

Pure: token lists in, (candidate index, score) lists out; no I/O. Three variants:

- ``moses`` (default): CTQ Scorer's re-ranking over the Moses tokens, punctuation kept
  (scoi's variant; end to end it translated better than the published tokenization).
- ``ctq``: CTQ Scorer's re-ranking exactly as released, which produced the published
  R-BM25 rows: Indic NLP's trivial tokenizer without the tokens ``.``, ``,``, ``?``
  (:func:`ctq_tokens`).
- ``agrawal``: Agrawal et al.'s release (BLEU-style smoothed recall, λ = 0.1, threshold 1).

Both keep a weight per distinct n-gram of the test sentence, score every candidate by its
recall of the weighted n-grams, take the best, multiply the weights of the n-grams it matched
by λ, and repeat. The candidate × n-gram counts are one matrix built once per query; each
round is one elementwise minimum. Sums run sequentially along the n-gram axis in the order
the released code iterates its dictionaries (:func:`_seq_sum`), and the per-candidate
log/exp/round use :mod:`math`, so the scores are the released code's floats.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from scoi.core.defaults import RBM25_VARIANT as DEFAULT_RBM25_VARIANT
from scoi.core.methods import RBM25_VARIANTS

CTQ_LAMBDA = 0.25
CTQ_ORDERS = 2  # orders scored; the released code also tracks trigrams, which never enter a score
AGRAWAL_LAMBDA = 0.1
AGRAWAL_ORDERS = 4
AGRAWAL_THRESHOLD = 1.0

Gram = tuple[str, ...]


def check_variant(variant: str) -> None:
    """Reject an unknown R-BM25 variant."""
    if variant not in RBM25_VARIANTS:
        raise ValueError(f"unknown R-BM25 variant {variant!r}; expected one of {RBM25_VARIANTS}")


# Indic NLP's trivial tokenizer (indicnlp.tokenize.indic_tokenize.trivial_tokenize_indic,
# what CTQ Scorer's code calls): every ASCII punctuation character and the Indic dandas
# are split off; then runs such as "1 . 5" or "2 , 5" (digits around one of , . : /) are
# joined again, except a run at the very start of the text or right after another.
_TRIVIAL_PUNCT = re.compile(r"([" + string.punctuation + r"\u0964\u0965\uAAF1\uAAF0\uABEB\uABEC\uABED\uABEE\uABEF"
                            r"\u1C7E\u1C7F" + r"])")
_NUMBER_RUN = re.compile(r"([0-9]+ [,.:/] )+[0-9]+")
CTQ_DROPPED = (".", ",", "?")  # tokens CTQ Scorer's code removes before counting n-grams


def trivial_tokenize(text: str) -> list[str]:
    """Indic NLP's ``trivial_tokenize`` (for every language but Urdu), step for step."""
    s = re.sub(r"[ ]+", " ", _TRIVIAL_PUNCT.sub(r" \1 ", text.replace("\t", " "))).strip(" ")
    out, prev = "", 0
    for m in _NUMBER_RUN.finditer(s):
        if m.start() > prev:  # as released: a run at prev (the start, or just after a run) stays split
            out += s[prev:m.start()] + s[m.start():m.end()].replace(" ", "")
            prev = m.end()
    return (out + s[prev:]).split(" ")


def ctq_tokens(text: str) -> list[str]:
    """A sentence's tokens as CTQ Scorer's R-BM25 reads it: the trivial tokenizer's,
    without ``.``, ``,`` and ``?``."""
    return [t for t in trivial_tokenize(text) if t not in CTQ_DROPPED]


@cache
def _tokenizer_13a() -> Any:
    """sacreBLEU's 13a tokenizer, imported on first use (sacrebleu takes ~0.25 s to import)."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def tokens_13a(text: str) -> list[str]:
    """A sentence's tokens as Agrawal et al.'s R-BM25 reads it: 13a, after rstrip."""
    return _tokenizer_13a()(text.rstrip()).split()


def tokenizer(rbm25_variant: str = DEFAULT_RBM25_VARIANT) -> Callable[[str], list[str]] | None:
    """The tokens a variant reads (docs/method.md §7.1), for the method registry: the stored
    Moses tokens for ``moses`` (None), CTQ Scorer's for ``ctq``, 13a for ``agrawal``."""
    check_variant(rbm25_variant)
    return {"moses": None, "ctq": ctq_tokens, "agrawal": tokens_13a}[rbm25_variant]


def ngram_counts(tokens: Sequence[str], n: int) -> Counter[Gram]:
    """Counts of the n-grams of order n, in first-occurrence order."""
    return Counter(zip(*(tokens[i:] for i in range(n))))


class _Grams:
    """The test sentence's n-gram weights ``S`` (one column per distinct n-gram) and every
    candidate's counts of them ``Q`` (candidates × n-grams)."""

    def __init__(self, query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]], max_order: int) -> None:
        query_tokens, cand_tokens = list(query_tokens), [list(t) for t in cand_tokens]
        by_order = [ngram_counts(query_tokens, n) for n in range(1, max_order + 1)]
        grams = [g for counts in by_order for g in counts]  # order by order, first occurrence first
        col = {g: i for i, g in enumerate(grams)}
        self.weights = np.array([by_order[len(g) - 1][g] for g in grams], dtype=np.float64)
        self.order = np.array([len(g) for g in grams], dtype=np.int64)
        self.counts = np.zeros((len(cand_tokens), len(grams)), dtype=np.float64)
        for j, toks in enumerate(cand_tokens):
            for n, query_counts in enumerate(by_order, start=1):
                counts = ngram_counts(toks, n)
                for g in counts.keys() & query_counts.keys():
                    self.counts[j, col[g]] = counts[g]
        self.live = np.ones(len(cand_tokens), dtype=bool)  # not picked yet
        self.orders = [self.order == n for n in range(1, int(self.order.max(initial=0)) + 1)]

    def matched(self) -> list[list[float]]:
        """Σ_g min(S_g, Q_jg) per candidate j and order n (rows: candidates)."""
        hit = np.minimum(self.weights, self.counts)
        return np.stack([_seq_sum(hit[:, cols], axis=1) for cols in self.orders], axis=1).tolist()

    def totals(self) -> list[float]:
        """Σ_g S_g per order n."""
        return [float(_seq_sum(self.weights[cols], axis=0)) for cols in self.orders]

    def take(self, j: int, lam: float) -> None:
        """Candidate j is picked: its matched n-grams' weights times λ, its counts zeroed."""
        self.weights[self.counts[j] > 0] *= lam
        self.counts[j] = 0.0
        self.live[j] = False


def _seq_sum(x: np.ndarray, axis: int) -> np.ndarray:
    """Left-to-right sum (numpy's ``sum`` is pairwise): the released code's Python ``sum``."""
    if x.shape[axis] == 0:
        return np.sum(x, axis=axis)
    return np.take(np.cumsum(x, axis=axis), -1, axis=axis)


def ctq_score(matched: Sequence[float], totals: Sequence[float]) -> float:
    """docs/method.md §7.1 CTQ score: P = Σ_{n: matched_n > 0} (n/4)·ln(matched_n / total_n),
    round(e^P, 2), and 0 when P = 0 (no match, or every scored order fully recalled)."""
    power = 0.0
    for n, (m, t) in enumerate(zip(matched, totals), start=1):
        if m == 0:
            continue
        power += (1 / 4) * n * math.log(m / t)
    return 0.0 if power == 0 else round(math.e ** power, 2)


def agrawal_score(correct: Sequence[float], totals: Sequence[float]) -> float:
    """docs/method.md §7.1 Agrawal score: BLEU-style geometric mean (×100) of the recalls of
    orders 1..n_eff (the orders the test sentence has), an order without a match counting
    100 / (2^m · total) for its m-th such order; 0 when nothing matched."""
    if not any(correct):
        return 0.0
    logs, smooth = [], 1.0
    for c, t in zip(correct, totals):
        if t == 0:
            break
        if c == 0:
            smooth *= 2
            logs.append(math.log(100.0 / (smooth * t)))
        else:
            logs.append(math.log(100.0 * c / t))
    return math.exp(sum(logs) / len(logs))


def _greedy(grams: _Grams, n_picks: int, score: Callable[[list[float], list[float]], float],
            lam: float, good: Callable[[float], bool]) -> list[tuple[int, float]]:
    """Pick the first candidate with the largest score until ``n_picks`` picks or a best
    score that is not ``good``; each pick multiplies its n-grams' weights by ``lam``."""
    picks: list[tuple[int, float]] = []
    while len(picks) < n_picks and grams.weights.size and grams.live.any():
        matched, totals = grams.matched(), grams.totals()
        scores = [score(m, totals) if live else 0.0 for m, live in zip(matched, grams.live)]
        j = int(np.argmax(scores))  # the first of the largest
        if not good(scores[j]):
            break
        picks.append((j, scores[j]))
        grams.take(j, lam)
    return picks


def rbm25_ctq(query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]], n_picks: int,
              lam: float = CTQ_LAMBDA) -> list[tuple[int, float]]:
    """CTQ Scorer's greedy (docs/method.md §7.1): up to ``n_picks`` (index, score) in
    selection order; stops early when the best score is 0. Padding is the caller's."""
    return _greedy(_Grams(query_tokens, cand_tokens, CTQ_ORDERS), n_picks, ctq_score, lam, lambda s: s > 0)


def rbm25_agrawal(query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]], n_picks: int,
                  lam: float = AGRAWAL_LAMBDA, threshold: float = AGRAWAL_THRESHOLD) -> list[tuple[int, float]]:
    """Agrawal et al.'s greedy (docs/method.md §7.1): up to ``n_picks`` (index, score);
    stops when the best score is below ``threshold``. No padding."""
    return _greedy(_Grams(query_tokens, cand_tokens, AGRAWAL_ORDERS), n_picks, agrawal_score, lam,
                   lambda s: s >= threshold)


def rbm25(query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]], n_picks: int,
          variant: str = DEFAULT_RBM25_VARIANT) -> list[tuple[int, float]]:
    """R-BM25 picks of one variant (see :data:`RBM25_VARIANTS`), before any padding. The
    tokens are the caller's: ``moses`` and ``ctq`` score alike and differ in their tokens."""
    check_variant(variant)
    return (rbm25_agrawal if variant == "agrawal" else rbm25_ctq)(query_tokens, cand_tokens, n_picks)
