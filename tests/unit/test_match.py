"""Match % (docs/method.md, "Match %"): hand-worked values, the normalisation, and
scoi.core.match against the literal dynamic programme in tests/reference.py. Pure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from scoi.core.match import check_min_match, match_all, match_percent, normalise
from tests import reference as ref
from tests.helpers.hypothesis import examples


def test_one_substituted_word_in_four_is_a_75_percent_match() -> None:
    assert match_all(["Le", "chat", "dort", "."], [["Le", "chien", "dort", "."]]) == [75.0]


def test_insertions_count_against_the_longer_sentence() -> None:
    # 1 insertion, longer sentence 5 tokens: 100 * (1 - 1/5)
    assert match_all(["le", "chat", "dort", "."], [["le", "gros", "chat", "dort", "."]]) == [80.0]
    assert match_all(["a", "b", "c"], [["x", "y"]]) == [0.0]


def test_case_is_ignored_and_punctuation_counts() -> None:
    assert match_all(["Bonjour", "!"], [["bonjour", "!"]]) == [100.0]
    assert match_all(["Bonjour", "!"], [["Bonjour", "?"]]) == [50.0]
    assert normalise(["Paris", ","]) == ["paris", ","]


def test_empty_sentences_and_rounding() -> None:
    assert match_percent([], []) == 100.0
    assert match_percent([], ["a"]) == 0.0
    assert match_percent(["a", "b", "c"], ["a", "b", "x"]) == 66.67  # two decimals


def test_min_match_must_be_a_percentage() -> None:
    assert check_min_match(None) is None and check_min_match(70) == 70
    with pytest.raises(ValueError, match="min match 101 is not a percentage"):
        check_min_match(101)
    with pytest.raises(ValueError, match="from 0 to 100"):
        check_min_match(-1)


WORDS = st.lists(st.sampled_from(["le", "Le", "chat", "chien", ".", ",", "dort", "mange", "?"]), max_size=12)


@settings(max_examples=examples(400), deadline=None)
@given(WORDS, st.lists(WORDS, min_size=1, max_size=5))
def test_match_equals_the_literal_dynamic_programme(query: list[str], candidates: list[list[str]]) -> None:
    assert match_all(query, candidates) == [ref.match_percent(query, c) for c in candidates]


@settings(max_examples=examples(200), deadline=None)
@given(WORDS, WORDS)
def test_match_is_symmetric_and_bounded(a: list[str], b: list[str]) -> None:
    m = match_all(a, [b])[0]
    assert m == match_all(b, [a])[0] and 0.0 <= m <= 100.0
    assert (m == 100.0) == (normalise(a) == normalise(b))
