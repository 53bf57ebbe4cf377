"""Match % (docs/method.md, "Match %"): hand-worked values, the normalisation, and
scoi.core.match against the literal dynamic programme in tests/reference.py. Pure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from scoi.core.match import check_min_match, least_bm25_at, match_all, match_percent, normalise
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


INDEXED = ["le", "chat", "dort", ".", "un", "chien", "mange", ","]


def bm25(query: list[str], sentence: list[str], idf: dict[str, float], ka: float, kc: float) -> float:
    """The block engine's BM25 (scoi.selection.preselect), written out: per distinct query token in
    the sentence, idf * its count in the query * tf / (tf + ka + kc * sentence length)."""
    return sum(idf[t] * query.count(t) * sentence.count(t) / (sentence.count(t) + ka + kc * len(sentence))
               for t in set(query) if t in sentence)


@settings(max_examples=examples(400), deadline=None)
@given(query=st.lists(st.sampled_from(INDEXED + ["zèbre", "?"]), min_size=1, max_size=12),
       edits=st.lists(st.tuples(st.integers(0, 20), st.sampled_from(["sub", "del", "ins"]), st.sampled_from(INDEXED)),
                      max_size=6),
       weights=st.lists(st.floats(0.01, 12.0), min_size=len(INDEXED), max_size=len(INDEXED)),
       ka=st.floats(0.0, 1.0), kc=st.floats(0.001, 0.5))
def test_no_sentence_reaching_a_match_scores_below_the_bm25_bound(query, edits, weights, ka, kc) -> None:
    # the stored sentence: the query with words replaced, deleted or inserted, and only
    # indexed words ("zèbre" and "?" are in no stored sentence, so they have no idf)
    sentence = [t for t in query if t in INDEXED]
    for at, op, word in edits:
        i = at % (len(sentence) + 1)
        if op == "ins" or i == len(sentence):
            sentence.insert(i, word)
        elif op == "sub":
            sentence[i] = word
        else:
            del sentence[i]
    idf = dict(zip(INDEXED, weights))
    terms = [(idf[t], query.count(t)) for t in set(query) if t in idf]
    match = ref.match_percent(query, sentence)
    bound = least_bm25_at(match, len(query), terms, ka, kc)
    assert bm25(query, sentence, idf, ka, kc) >= bound - 1e-9
    assert least_bm25_at(0.0, len(query), terms, ka, kc) == 0.0  # a 0 % match needs no shared word


def test_an_exact_match_needs_every_query_word() -> None:
    terms = [(2.0, 1), (0.5, 2)]  # "chat" once, "le" twice
    # 100 %: all 3 tokens shared, at most 3 tokens long: (2 + 0.5 + 0.5) / (1 + 0.3 + 0.1 * 3)
    assert least_bm25_at(100.0, 3, terms, 0.3, 0.1) == pytest.approx(3.0 / 1.6, rel=1e-4)
    # 67 %: 2 of 3 shared (the two cheapest), at most 3 / 0.66995 tokens long
    assert least_bm25_at(66.67, 3, terms, 0.3, 0.1) == pytest.approx(1.0 / (1.3 + 0.1 * 3 / 0.66665), rel=1e-3)
