"""CTQ Scorer's features of a (test sentence, example pair) tuple (docs/method.md, CTQ Scorer).

Pure: texts, token lists, vectors and token log-likelihoods in, numbers out; no I/O. Each
feature keeps the name the released code (AI4Bharat/CTQScorer, ``cummulate_features.py``)
gives its column, and is computed as that code computes it, rounding included, so a
feature list reads the same in both. Features that need a model scoi may not have
(an embedder, a COMET-QE checkpoint, the LLM's likelihoods) are computed from the
inputs the caller passes, or left out of a model's feature list with the reason
(:data:`NEEDS`, :func:`omitted`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from scoi.core.rbm25 import CTQ_ORDERS, ctq_score, ngram_counts, rbm25_ctq

#: The released code's features, in its column order (``ctqscorer.py``: the twelve it
#: trains on; ``src_ppl`` and ``dst_ppl`` it computes and excludes).
RELEASED = ("no_of_tokens_in_query", "no_of_tokens_in_src_sent", "no_of_tokens_in_dst_sent",
            "labse_score_query_src", "labse_score_query_dst", "labse_score_src_dst", "chrf_score",
            "comet_qe_query_src_score", "comet_qe_query_dst_score", "comet_qe_src_dst_score",
            "src_dst_ppl", "src_dst_query_ppl")
#: scoi's additions (not in the released feature set): the candidate's BM25 score in the
#: pool, and its first-round R-BM25 score (CTQ Scorer's ``ctq`` re-ranking score alone).
EXTRAS = ("bm25_score", "rbm25_score")
FEATURES = RELEASED + EXTRAS
#: What a feature needs beyond the texts: ``embedder`` (the released code: LaBSE; scoi:
#: the sentence embedder given), ``qe`` (COMET-QE wmt20-comet-qe-da), ``llm`` (the
#: translating LLM's token likelihoods: a local transformers model).
NEEDS = {"labse_score_query_src": "embedder", "labse_score_query_dst": "embedder", "labse_score_src_dst": "embedder",
         "comet_qe_query_src_score": "qe", "comet_qe_query_dst_score": "qe", "comet_qe_src_dst_score": "qe",
         "src_dst_ppl": "llm", "src_dst_query_ppl": "llm"}
#: Why a feature is left out when what it needs is not there.
WHY_OMITTED = {
    "embedder": "no sentence embedder given (--embedder): no embedding similarity",
    "qe": "COMET-QE (wmt20-comet-qe-da) is not run by scoi: its example-quality role is left to "
          "labse_score_src_dst when an embedder is given",
    "llm": "no token likelihoods: the model is not a local transformers model (hf:/gguf:), or --no-likelihood",
}
#: The released code's value for a perplexity that is NaN (``rankings_bm25_and_perplexity.py``);
#: an infinite one is replaced by 99999 before training (``ctqscorer.py``).
PPL_NAN, PPL_INF = 999999.0, 99999.0


def no_of_tokens(text: str) -> int:
    """``no_of_tokens_in_query`` / ``_src_sent`` / ``_dst_sent``: whitespace tokens
    (``len(text.split())``, as ``rankings_no_of_tokens.py``)."""
    return len(text.split())


@cache
def _chrf() -> Any:
    from sacrebleu.metrics import CHRF

    return CHRF()  # char order 6, word order 0, beta 2: the ``evaluate`` chrF's defaults


def chrf_score(query: str, src: str) -> float:
    """``chrf_score``: sentence chrF of the test sentence (as hypothesis) against the
    example's source (as reference), rounded to 2 (``rankings_bm25_and_chrf.py``), by
    sacreBLEU itself; :func:`chrf_scores` gives the same numbers for a whole pool faster."""
    return round(float(_chrf().sentence_score(query, [src]).score), 2)


CHRF_ORDER, CHRF_BETA = 6, 2  # sacreBLEU's chrF defaults: character 1..6-grams, F-beta with beta 2


def _char_ngrams(text: str) -> list[Counter[str]]:
    """Character 1..6-gram counts of a text without its whitespace (sacreBLEU's extraction)."""
    line = "".join(text.split())
    return [Counter(line[i:i + n] for i in range(len(line) - n + 1)) for n in range(1, CHRF_ORDER + 1)]


def _chrf_f(stats: list[tuple[int, int, int]]) -> float:
    """chrF from per-order (hyp, ref, match) counts, in sacreBLEU's arithmetic and order
    (effective-order averaging of precision and recall, then F-beta, x100)."""
    factor = CHRF_BETA ** 2
    avg_prec, avg_rec, effective = 0.0, 0.0, 0
    for n_hyp, n_ref, n_match in stats:
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective += 1
    if effective == 0:
        return 0.0
    avg_prec /= effective
    avg_rec /= effective
    if not avg_prec + avg_rec:
        return 0.0
    score = (1 + factor) * avg_prec * avg_rec
    score /= (factor * avg_prec) + avg_rec
    return 100 * score


def chrf_scores(query: str, srcs: Sequence[str]) -> list[float]:
    """:func:`chrf_score` of the query against every source of a pool: the query's
    n-grams counted once (about ten times faster than one sacreBLEU call each)."""
    hyp = _char_ngrams(query)
    out = []
    for src in srcs:
        stats = []
        for h, r in zip(hyp, _char_ngrams(src)):
            match = sum(min(c, r[g]) for g, c in h.items() if g in r)
            stats.append((sum(h.values()) if r else 0, sum(r.values()), match))
        out.append(round(_chrf_f(stats), 2))
    return out


def labse_score(a: np.ndarray, b: np.ndarray) -> float:
    """``labse_score_*``: cosine of two sentence embeddings, rounded to 2
    (``rankings_bm25_and_3_way.py``; a zero vector scores 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return round(float(a @ b) / norm, 2) if norm else 0.0


def perplexity(nll: Sequence[float]) -> float:
    """``src_dst_ppl`` / ``src_dst_query_ppl``: from the negative log-likelihoods (nats)
    of a text's tokens after a BOS token, ``2 ** mean(nll)``, rounded to 2: the released
    perplexity metric's formula (``library/perplexity.py`` exponentiates base 2 the
    natural-log loss); NaN (no token) is 999999 and overflow 99999, as released."""
    if not len(nll):
        return PPL_NAN
    mean = math.fsum(nll) / len(nll)
    if math.isnan(mean):
        return PPL_NAN
    try:
        return round(2.0 ** mean, 2)
    except OverflowError:
        return PPL_INF


def src_dst_text(src: str, tgt: str) -> str:
    """The text ``src_dst_ppl`` scores: the example's source and target, one space between."""
    return f"{src} {tgt}"


def src_dst_query_text(src: str, tgt: str, query: str) -> str:
    """The text ``src_dst_query_ppl`` scores: the example, then the test sentence."""
    return f"{src} {tgt} {query}"


def rbm25_score(query_tokens: Sequence[str], cand_tokens: Sequence[str]) -> float:
    """``rbm25_score`` (scoi's): the candidate's CTQ R-BM25 score before any re-ranking
    round (every n-gram weight its count), over the caller's tokens; 0 when nothing
    matches. By scoi.core.rbm25 itself; :func:`rbm25_scores` gives a pool's faster."""
    picks = rbm25_ctq(query_tokens, [cand_tokens], 1)
    return picks[0][1] if picks else 0.0


def rbm25_scores(query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]]) -> list[float]:
    """:func:`rbm25_score` of every candidate of a pool: per order 1..2, the clipped
    matches of the query's n-grams and their total, scored by scoi.core.rbm25.ctq_score
    (integer sums, so the same floats)."""
    query = [ngram_counts(list(query_tokens), n) for n in range(1, CTQ_ORDERS + 1)]
    totals = [float(sum(q.values())) for q in query]
    out = []
    for toks in cand_tokens:
        matched = []
        for n, q in enumerate(query, start=1):
            c = ngram_counts(list(toks), n)
            matched.append(float(sum(min(cnt, c[g]) for g, cnt in q.items() if g in c)))
        out.append(ctq_score(matched, totals))
    return out


@dataclass
class Inputs:
    """Everything the features of one test sentence's pool are computed from: the pool's
    texts and BM25 scores, tokens for R-BM25, and, when available, embeddings (query
    vector, the examples' source and target vectors) and the LLM's token NLLs of
    :func:`src_dst_text` and :func:`src_dst_query_text` per example."""

    query: str
    srcs: Sequence[str]
    tgts: Sequence[str]
    bm25: Sequence[float]
    query_tokens: Sequence[str]
    cand_tokens: Sequence[Sequence[str]]
    query_vec: np.ndarray | None = None
    src_vecs: np.ndarray | None = None
    tgt_vecs: np.ndarray | None = None
    nll_src_dst: Sequence[Sequence[float]] | None = None
    nll_src_dst_query: Sequence[Sequence[float]] | None = None
    available: frozenset[str] = field(default_factory=frozenset)  # of "embedder", "qe", "llm"


def usable(available: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The features computable with these models available, in :data:`FEATURES` order."""
    return tuple(f for f in FEATURES if NEEDS.get(f) is None or NEEDS[f] in available)


def omitted(available: frozenset[str] | set[str]) -> dict[str, str]:
    """The features left out with these models available, each with the reason."""
    return {f: WHY_OMITTED[NEEDS[f]] for f in FEATURES if f in NEEDS and NEEDS[f] not in available}


def _column(name: str, x: Inputs) -> list[float]:
    n = len(x.srcs)
    if name == "no_of_tokens_in_query":
        return [float(no_of_tokens(x.query))] * n
    if name == "no_of_tokens_in_src_sent":
        return [float(no_of_tokens(s)) for s in x.srcs]
    if name == "no_of_tokens_in_dst_sent":
        return [float(no_of_tokens(t)) for t in x.tgts]
    if name == "chrf_score":
        return chrf_scores(x.query, x.srcs)
    if name == "labse_score_query_src":
        return [labse_score(x.query_vec, v) for v in x.src_vecs]
    if name == "labse_score_query_dst":
        return [labse_score(x.query_vec, v) for v in x.tgt_vecs]
    if name == "labse_score_src_dst":
        return [labse_score(s, t) for s, t in zip(x.src_vecs, x.tgt_vecs)]
    if name == "src_dst_ppl":
        return [perplexity(v) for v in x.nll_src_dst]
    if name == "src_dst_query_ppl":
        return [perplexity(v) for v in x.nll_src_dst_query]
    if name == "bm25_score":
        return [float(s) for s in x.bm25]
    if name == "rbm25_score":
        return rbm25_scores(x.query_tokens, x.cand_tokens)
    raise ValueError(f"feature {name!r} cannot be computed here; computable: {', '.join(usable(x.available))}")


def feature_matrix(features: Sequence[str], x: Inputs) -> np.ndarray:
    """(pool size, len(features)) float64: one row per example, columns in ``features``
    order (a model's stored list). ValueError for a feature these inputs cannot give."""
    missing = [f for f in features if f in NEEDS and NEEDS[f] not in x.available]
    if missing:
        raise ValueError(f"features {', '.join(missing)} need {', '.join(sorted({NEEDS[f] for f in missing}))}, "
                         "which is not available")
    cols = [_column(f, x) for f in features]
    return np.array(cols, dtype=np.float64).T.reshape(len(x.srcs), len(features))


def feature_dicts(features: Sequence[str], matrix: np.ndarray) -> list[Mapping[str, float]]:
    """The rows of a feature matrix as {name: value} (for --json and the stored rows)."""
    return [dict(zip(features, map(float, row))) for row in matrix]


__all__ = ["EXTRAS", "FEATURES", "Inputs", "NEEDS", "RELEASED", "WHY_OMITTED", "chrf_score", "chrf_scores",
           "feature_dicts", "feature_matrix", "labse_score", "no_of_tokens", "omitted", "perplexity", "rbm25_score",
           "rbm25_scores", "src_dst_query_text", "src_dst_text", "usable"]
