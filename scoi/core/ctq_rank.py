"""CTQ Scorer's selection rule: the top k of the BM25 pool by predicted quality.

Pure. The released code (``ctqscorer.py``, ``generate_ctqscorer_ranking``) sorts each test
sentence's pool by the predicted score, highest first, with Python's stable sort, after a
pandas sort by sentence that does not promise to keep the pool's order; its prompts then
take the first k. scoi keeps equal scores in pool (BM25) order, so ties are reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

from scoi.core.pool import Choice, Ranking

#: What a ctq pick's criterion says (its value: the predicted quality).
CRITERION = "predicted-quality"
#: The released code rounds each prediction to 4 decimals before sorting: ties it makes
#: fall back to pool order, as here.
ROUND = 4


def rank_by_quality(predicted: Sequence[float], k: int) -> list[tuple[int, float]]:
    """(pool index, rounded prediction) of the ``k`` best-predicted candidates, best first;
    ties in pool order. min(k, pool) picks."""
    scores = [round(float(p), ROUND) for p in predicted]
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable: ties keep pool order
    return [(i, scores[i]) for i in order[:max(k, 0)]]


def ctq_picks(r: Ranking, k: int) -> list[Choice]:
    """``--method ctq``'s ranking function (its registry entry's): the pool's top ``k`` by the
    quality ``r.model`` (scoi.ctq.CtqRanker) predicts from ``r.texts``."""
    if r.model is None or r.texts is None:
        raise ValueError("method ctq ranks with a trained CTQ Scorer model and the pool's texts; none were given")
    if not r.texts.sources or k <= 0:
        return []
    predicted = r.model.predict(r.texts.query, r.texts.sources, r.texts.targets, r.texts.scores)
    return [Choice(i, CRITERION, score) for i, score in rank_by_quality(predicted, k)]


__all__ = ["CRITERION", "ROUND", "ctq_picks", "rank_by_quality"]
