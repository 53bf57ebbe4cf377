"""The fuzzy lookup's order (docs/method.md §8): match % descending, ties by BM25 score
descending, then pair id ascending; the minimum and n applied after. Pure."""

from __future__ import annotations

from scoi.lookup import rank

QUERY = ["le", "chat", "dort", "."]


def test_ranked_by_match_then_bm25_then_pair_id() -> None:
    pool = [
        (7, 3.0, ["le", "chien", "dort", "."]),   # 75
        (5, 9.0, ["le", "chat", "mange", "."]),  # 75, higher BM25
        (3, 3.0, ["le", "rat", "dort", "."]),     # 75, same BM25 as 7, lower id
        (9, 1.0, ["Le", "chat", "dort", "."]),   # 100 (case ignored)
        (2, 8.0, ["un", "oiseau", "chante"]),     # 0
    ]
    assert [(p, m) for p, m, _ in rank(QUERY, pool, n=10, min_match=0)] == [
        (9, 100.0), (5, 75.0), (3, 75.0), (7, 75.0), (2, 0.0)]
    assert [p for p, _, _ in rank(QUERY, pool, n=2, min_match=0)] == [9, 5]
    assert [p for p, _, _ in rank(QUERY, pool, n=10, min_match=76)] == [9]
    assert rank(QUERY, [], n=5, min_match=0) == []
