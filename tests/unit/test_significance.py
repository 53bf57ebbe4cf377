"""The paired bootstraps against literal loop versions: over segment scores (COMET), and
the experiment rows' intervals and p-values against scoring each resampled test set."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.jobs.eval import item_statistics, sacrebleu_metric, score_from_statistics
from scoi.jobs.significance import paired_bootstrap_means, paired_p_value, resample_counts, row_interval
from tests.helpers.hypothesis import examples


def literal(base: list[float], systems: list[list[float]], n_samples: int, seed: int = 12345):
    """sacreBLEU's paired bootstrap procedure written out, one resample at a time."""
    rng = np.random.default_rng(seed)
    n = len(base)
    idxs = rng.choice(n, size=(n_samples, n), replace=True)
    out = []
    # numpy's mean for each average, so ties (common with discrete scores) break as in the fast path
    base_means = [float(np.mean([base[i] for i in row])) for row in idxs]
    for sys_scores in systems:
        sys_means = [float(np.mean([sys_scores[i] for i in row])) for row in idxs]
        diffs = [abs(s - b) for s, b in zip(sys_means, base_means)]
        centre = float(np.mean(diffs))
        observed = abs(float(np.mean(sys_scores)) - float(np.mean(base)))
        count = sum(1 for d in diffs if d - centre > observed)
        srt = sorted(sys_means)
        lo = n_samples // 40
        out.append((sum(sys_means) / n_samples, 0.5 * (srt[n_samples - lo - 1] - srt[lo]),
                    (count + 1) / (n_samples + 1)))
    return out


scores = st.floats(min_value=-2, max_value=2, allow_nan=False, width=32)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(min_value=2, max_value=30).flatmap(
    lambda n: st.tuples(st.lists(scores, min_size=n, max_size=n), st.lists(scores, min_size=n, max_size=n))))
def test_fast_equals_literal(pair):
    base, system = pair
    fast = paired_bootstrap_means(base, [system], n_samples=200)
    (mean, ci, p), = literal(base, [system], 200)
    assert fast[0].p_value is None
    assert abs(fast[1].mean - mean) < 1e-9 and abs(fast[1].ci - ci) < 1e-9
    if abs(np.mean(system) - np.mean(base)) > 1e-9:
        assert fast[1].p_value == p


def test_identical_systems_are_not_significant_and_a_shift_is():
    rng = np.random.default_rng(0)
    base = list(rng.normal(0.5, 0.1, 200))
    same, better = paired_bootstrap_means(base, [base, [x + 0.05 for x in base]])[1:]
    assert same.p_value == 1.0
    assert better.p_value < 0.01


# --------------------------------------------------------------------------- experiment rows
def slow_row(hyp_seeds: list[list[str]], refs: list[str], metric, n_samples: int, seed: int):
    """A row's score, interval and resampled scores the obvious way: draw each resampled
    test set, score every seed's outputs on it with sacrebleu's corpus_score, average."""
    rng = np.random.default_rng(seed)
    idxs = rng.choice(len(refs), size=(n_samples, len(refs)), replace=True)
    samples = []
    for row in idxs:
        per_seed = [metric.corpus_score([hyps[i] for i in row], [[refs[i] for i in row]]).score for hyps in hyp_seeds]
        samples.append(sum(per_seed) / len(per_seed))
    full = sum(metric.corpus_score(h, [refs]).score for h in hyp_seeds) / len(hyp_seeds)
    srt = sorted(samples)
    lo = n_samples // 40
    return full, srt[lo], srt[n_samples - lo - 1], samples


def slow_p(system: list[float], base: list[float], observed: float) -> float:
    diffs = [abs(s - b) for s, b in zip(system, base)]
    centre = sum(diffs) / len(diffs)
    return (sum(1 for d in diffs if d - centre > observed) + 1) / (len(diffs) + 1) if observed else 1.0


WORDS = st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away"])
SENTENCE = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(min_value=2, max_value=12).flatmap(lambda n: st.tuples(
    st.lists(SENTENCE, min_size=n, max_size=n), st.lists(st.lists(SENTENCE, min_size=n, max_size=n),
                                                         min_size=1, max_size=3),
    st.lists(SENTENCE, min_size=n, max_size=n))), st.sampled_from(["bleu", "chrf"]))
def test_row_interval_equals_scoring_each_resampled_test_set(data, metric_name):
    """The fast path (per-item statistics, counts @ stats) gives the same scores, interval
    and p-value as drawing each resampled test set and scoring it with sacrebleu."""
    refs, system_seeds, base = data
    score_of, n = score_from_statistics(metric_name, "en"), 60
    counts = resample_counts(len(refs), n, seed=7)
    fast = row_interval([item_statistics(metric_name, "en", h, refs) for h in system_seeds], score_of, counts)
    fast_base = row_interval([item_statistics(metric_name, "en", base, refs)], score_of, counts)
    metric = sacrebleu_metric(metric_name, "en")
    full, low, high, samples = slow_row(system_seeds, refs, metric, n, seed=7)
    _, _, _, base_samples = slow_row([base], refs, metric, n, seed=7)
    assert fast.score == pytest.approx(full, abs=1e-9)
    assert (fast.low, fast.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert np.allclose(fast.samples, samples, atol=1e-9) and np.allclose(fast_base.samples, base_samples, atol=1e-9)
    assert paired_p_value(fast, fast_base) == slow_p(samples, base_samples, abs(full - fast_base.score))


def test_row_interval_of_means_is_the_segment_bootstrap():
    """COMET-like rows (statistics: score, 1): the interval brackets the mean, a shifted
    system is significant, the same system is not."""
    rng = np.random.default_rng(1)
    segs = rng.normal(0.5, 0.1, 300)
    mean_of = lambda s: float(s[0] / s[1])  # noqa: E731
    counts = resample_counts(300, 500, seed=3)
    stats = lambda x: np.column_stack([x, np.ones(len(x))])  # noqa: E731
    base = row_interval([stats(segs)], mean_of, counts)
    same = row_interval([stats(segs)], mean_of, counts)
    better = row_interval([stats(segs + 0.05)], mean_of, counts)
    assert base.low < base.score < base.high and base.score == pytest.approx(segs.mean())
    assert paired_p_value(same, base) == 1.0 and paired_p_value(better, base) < 0.01
    assert counts.sum(axis=1).tolist() == [300.0] * 500  # each resampled set has as many items as the test set
