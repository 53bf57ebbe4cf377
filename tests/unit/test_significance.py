"""The paired bootstrap over segment scores (COMET) against a literal loop version."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.jobs.significance import paired_bootstrap_means
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
