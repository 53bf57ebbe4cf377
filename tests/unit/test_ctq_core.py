"""CTQ Scorer's pure parts (scoi.core.ctq_*): each feature against a slow literal version of
its definition, the regressor's forward pass and stored bytes, and the selection rule."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.core import ctq_features as cf
from scoi.core.ctq_rank import rank_by_quality
from scoi.core.ctq_regressor import Regressor, model_signature
from tests.helpers.hypothesis import examples

WORDS = st.sampled_from(["le", "chat", "dort", "la", "maison", "bleue", "un", "chien", "court", ".", ",", "?", "12"])
SENTENCE = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)


def literal_chrf(hyp: str, ref: str, beta: float = 2.0) -> float:
    """chrF (Popović 2015) as sacreBLEU defines it: character 1..6-grams without whitespace,
    precision and recall averaged over the orders both sides have, F-beta, x100."""
    h, r = "".join(hyp.split()), "".join(ref.split())
    prec_sum = rec_sum = 0.0
    effective = 0
    for n in range(1, 7):
        hg = Counter(h[i:i + n] for i in range(len(h) - n + 1))
        rg = Counter(r[i:i + n] for i in range(len(r) - n + 1))
        match = sum(min(c, rg[g]) for g, c in hg.items())
        if hg:
            prec_sum += match / sum(hg.values())
        if rg:
            rec_sum += match / sum(rg.values())
        effective += bool(hg) and bool(rg)
    if not effective:
        return 0.0
    p, rc = prec_sum / effective, rec_sum / effective
    return 0.0 if p + rc == 0 else 100 * (1 + beta ** 2) * p * rc / (beta ** 2 * p + rc)


def literal_rbm25(query: list[str], cand: list[str]) -> float:
    """CTQ Scorer's R-BM25 score of one candidate before any re-ranking: per order n in
    1..2, the clipped matches of the query's n-grams over their count; P = sum over orders
    with a match of (n/4) ln(matched/total); round(e^P, 2), or 0 when P is 0."""
    power = 0.0
    for n in (1, 2):
        q = Counter(tuple(query[i:i + n]) for i in range(len(query) - n + 1))
        c = Counter(tuple(cand[i:i + n]) for i in range(len(cand) - n + 1))
        matched = sum(min(cnt, c[g]) for g, cnt in q.items())
        if matched:
            power += n / 4 * math.log(matched / sum(q.values()))
    return 0.0 if power == 0 else round(math.e ** power, 2)


@settings(max_examples=examples(200), deadline=None)
@given(SENTENCE)
def test_no_of_tokens_counts_whitespace_separated_words(text: str) -> None:
    spaced = text.replace(" ", " \t ", 1) + "  "
    words, inside = 0, False
    for ch in spaced:
        if not ch.isspace() and not inside:
            words += 1
        inside = not ch.isspace()
    assert cf.no_of_tokens(spaced) == words


@settings(max_examples=examples(200), deadline=None)
@given(SENTENCE, SENTENCE)
def test_chrf_score_is_sentence_chrf_of_the_query_against_the_example_source(query: str, src: str) -> None:
    assert abs(cf.chrf_score(query, src) - literal_chrf(query, src)) <= 0.01


@settings(max_examples=examples(300), deadline=None)
@given(SENTENCE, st.lists(SENTENCE | st.just(""), max_size=4))
def test_a_pools_chrf_scores_are_sacrebleus_exactly(query: str, srcs: list[str]) -> None:
    assert cf.chrf_scores(query, srcs) == [cf.chrf_score(query, s) for s in srcs]


def test_chrf_score_rounds_to_two_decimals_and_is_100_for_the_same_text() -> None:
    assert cf.chrf_score("le chat dort", "le chat dort") == 100.0
    assert cf.chrf_score("le chat dort", "un chien court") == round(cf.chrf_score("le chat dort", "un chien court"), 2)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=3, max_size=3), st.lists(st.floats(-5, 5), min_size=3, max_size=3))
def test_labse_score_is_the_rounded_cosine(a: list[float], b: list[float]) -> None:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    expected = 0.0 if norm == 0 else round(dot / norm, 2)
    assert abs(cf.labse_score(np.array(a), np.array(b)) - expected) <= 0.01 + 1e-12


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.floats(0, 20), min_size=1, max_size=30))
def test_perplexity_is_two_to_the_mean_nll_as_released(nll: list[float]) -> None:
    total = 0.0
    for x in nll:
        total += x
    assert cf.perplexity(nll) == pytest.approx(round(2 ** (total / len(nll)), 2), abs=0.011)


def test_perplexity_of_nothing_or_overflow_takes_the_released_placeholders() -> None:
    assert cf.perplexity([]) == cf.PPL_NAN == 999999.0
    assert cf.perplexity([float("nan")]) == cf.PPL_NAN
    assert cf.perplexity([5000.0]) == cf.PPL_INF


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=10), st.lists(WORDS, min_size=1, max_size=10))
def test_rbm25_score_is_the_first_round_ctq_score(query: list[str], cand: list[str]) -> None:
    assert cf.rbm25_score(query, cand) == literal_rbm25(query, cand)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(WORDS, max_size=10), st.lists(st.lists(WORDS, max_size=10), max_size=4))
def test_a_pools_rbm25_scores_are_the_rbm25_modules_exactly(query: list[str], cands: list[list[str]]) -> None:
    assert cf.rbm25_scores(query, cands) == [cf.rbm25_score(query, c) for c in cands]


def test_perplexity_texts_join_example_and_query_with_spaces() -> None:
    assert cf.src_dst_text("Il pleut.", "It rains.") == "Il pleut. It rains."
    assert cf.src_dst_query_text("Il pleut.", "It rains.", "Il neige.") == "Il pleut. It rains. Il neige."


def test_feature_matrix_columns_follow_the_given_order_and_refuse_what_is_missing() -> None:
    x = cf.Inputs("le chat dort", ["le chat", "un chien court vite"], ["the cat", "a dog runs fast"], [3.5, 1.25],
                  ["le", "chat", "dort"], [["le", "chat"], ["un", "chien", "court", "vite"]])
    m = cf.feature_matrix(["bm25_score", "no_of_tokens_in_src_sent", "no_of_tokens_in_query", "chrf_score"], x)
    assert m.shape == (2, 4)
    assert m[:, 0].tolist() == [3.5, 1.25] and m[:, 1].tolist() == [2, 4] and m[:, 2].tolist() == [3, 3]
    assert m[0, 3] == cf.chrf_score("le chat dort", "le chat")
    with pytest.raises(ValueError, match="labse_score_query_src need embedder"):
        cf.feature_matrix(["labse_score_query_src"], x)
    assert cf.usable(frozenset()) == ("no_of_tokens_in_query", "no_of_tokens_in_src_sent", "no_of_tokens_in_dst_sent",
                                      "chrf_score", "bm25_score", "rbm25_score")
    assert set(cf.omitted(frozenset({"llm"}))) == {f for f in cf.FEATURES if cf.NEEDS.get(f) in ("embedder", "qe")}


def _literal_forward(reg: Regressor, row: list[float]) -> float:
    h = [x * s + m for x, s, m in zip(row, reg.x_scale, reg.x_min)]
    for layer, (w, b) in enumerate(zip(reg.coefs, reg.intercepts)):
        h = [sum(h[i] * w[i][j] for i in range(len(h))) + b[j] for j in range(len(b))]
        if layer < len(reg.coefs) - 1:
            h = [max(v, 0.0) for v in h]
    return (h[0] - reg.y_min) / reg.y_scale


def _random_regressor(seed: int) -> Regressor:
    rng = np.random.default_rng(seed)
    sizes = [3, 5, 4, 1]
    return Regressor(rng.normal(size=3), rng.uniform(0.1, 2, size=3),
                     tuple(rng.normal(size=(a, b)) for a, b in zip(sizes, sizes[1:])),
                     tuple(rng.normal(size=b) for b in sizes[1:]), 0.2, 1.7)


@pytest.mark.parametrize("seed", range(5))
def test_regressor_predicts_the_scaled_mlp_and_survives_its_bytes(seed: int) -> None:
    reg = _random_regressor(seed)
    x = np.random.default_rng(seed + 100).normal(size=(6, 3))
    expected = [_literal_forward(reg, row.tolist()) for row in x]
    assert reg.predict(x) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    again = Regressor.from_bytes(reg.to_bytes())
    assert np.array_equal(again.predict(x), reg.predict(x))
    with pytest.raises(ValueError, match="not a stored CTQ regressor"):
        Regressor.from_bytes(b"not an archive")


def test_model_signature_names_the_features_and_the_bytes() -> None:
    data = _random_regressor(0).to_bytes()
    sig = model_signature("m", ["a", "b"], data)
    assert sig.startswith("m@f:") and sig != model_signature("m", ["b", "a"], data)
    assert sig != model_signature("m", ["a", "b"], _random_regressor(1).to_bytes())


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.50001, 0.9]), max_size=12), st.integers(0, 14))
def test_rank_by_quality_takes_the_best_k_with_ties_in_pool_order(scores: list[float], k: int) -> None:
    left = list(range(len(scores)))
    expected = []
    while left and len(expected) < k:  # the first of the highest, repeatedly
        best = left[0]
        for i in left:
            if round(scores[i], 4) > round(scores[best], 4):
                best = i
        expected.append(best)
        left.remove(best)
    assert [i for i, _ in rank_by_quality(scores, k)] == expected


def test_likelihood_features_need_a_local_model_and_can_be_turned_off() -> None:
    from scoi.ctq import available_models

    assert available_models("hf:/models/m", None) == {"llm"}
    assert available_models("gguf:/models/m.gguf", "/models/emb") == {"llm", "embedder"}
    assert available_models("hf:/models/m", "/models/emb", likelihood=False) == {"embedder"}
    assert available_models("openai:m", None) == frozenset()
    assert "src_dst_ppl" not in cf.usable(available_models("hf:/models/m", None, likelihood=False))
