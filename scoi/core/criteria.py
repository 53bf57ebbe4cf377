"""What each pick's number is: the quantity a method's criterion scores a pick with.

A pick's ``criterion`` says which rule chose it; its number (stored in
``selection_pick.coverage`` for history's sake) is a different quantity per rule: SCOI's
running coverage, DPP's residual, a polynomial distance, a cosine, a predicted quality.
Naming it keeps readers from comparing a residual of 6 with a coverage of 0.8
(docs/selection.md, "What a pick's value is"). The view ``selection_pick_text`` names it
with the same table (migration 0039); a test holds the two together.
"""

from __future__ import annotations

#: criterion -> the quantity its value is (None: the pick carries no value).
QUANTITY: dict[str, str | None] = {
    "syntax": "coverage",        # SCOI / syntax / word: the criterion's running best after the pick
    "word": "coverage",
    "poly": "distance",          # poly-topk: polynomial distance to the query (lower: nearer)
    "dpp": "residual",           # dpp: the pick's residual, its gain in log det L_Y
    "rbm25": "rbm25",            # rbm25: the R-BM25 n-gram recall score
    "fuzzy": "cosine",           # fuzzy, fuzzy-ann: cosine of the sentence embeddings
    "predicted-quality": "predicted_quality",  # ctq: the regressor's predicted translation quality
    "bm25": None,                # BM25 order (and the pool-order padding of rbm25 and dpp)
    "random": None,
    "fill": None,                # --fill random's top-up
}


def quantity(criterion: str) -> str | None:
    """The quantity a pick chosen by ``criterion`` carries (None: none, or an unknown criterion)."""
    return QUANTITY.get(criterion)


def value_of(criterion: str, value: float | None) -> dict[str, object] | None:
    """The pick's named value, ``{"kind": ..., "value": ...}``, or None when it has none."""
    kind = quantity(criterion)
    return None if kind is None or value is None else {"kind": kind, "value": value}


__all__ = ["QUANTITY", "quantity", "value_of"]
