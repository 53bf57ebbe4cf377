"""Each method's picks carry a value named by what it is (scoi.core.criteria): the ranking
functions' criteria all have an entry, and the quantities differ where the numbers do."""

from __future__ import annotations

from scoi.core.criteria import QUANTITY, value_of
from scoi.core.ctq_rank import CRITERION as CTQ_CRITERION
from scoi.selection.types import Pick


def test_every_criterion_the_methods_emit_is_named() -> None:
    emitted = {"syntax", "word", "poly", "dpp", "rbm25", "fuzzy", "bm25", "random", "fill", CTQ_CRITERION}
    assert emitted == set(QUANTITY)


def test_the_value_names_the_quantity_not_coverage_for_every_method() -> None:
    assert value_of("dpp", 6.05) == {"kind": "residual", "value": 6.05}
    assert value_of("poly", 0.11) == {"kind": "distance", "value": 0.11}
    assert value_of(CTQ_CRITERION, 71.2) == {"kind": "predicted_quality", "value": 71.2}
    assert value_of("fuzzy", 0.93) == {"kind": "cosine", "value": 0.93}
    assert value_of("word", 0.8) == {"kind": "coverage", "value": 0.8}
    assert value_of("bm25", None) is None and value_of("random", None) is None


def test_a_pick_json_keeps_coverage_as_the_deprecated_alias_beside_value() -> None:
    d = Pick(3, "s", "t", "rbm25", 0.42, 55.0).to_dict()
    assert d["value"] == {"kind": "rbm25", "value": 0.42} and d["coverage"] == 0.42
    assert Pick(4, "s", "t", "bm25", None).to_dict()["value"] is None
