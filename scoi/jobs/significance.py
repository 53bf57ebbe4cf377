"""Is a difference between two jobs' scores real? Paired tests over the same items.

BLEU and chrF use sacreBLEU's own paired bootstrap (``sacrebleu.significance.PairedTest``,
the procedure of Moses' ``bootstrap-hypothesis-difference-significance.pl``; corpus
statistics are resampled, not sentence scores). COMET, whose system score is the mean of
its segment scores, gets the same procedure over the stored segment scores: the same
resampled item sets for both systems, the test statistic |mean_sys − mean_base| centred
on its bootstrap mean, p = (#{stat > observed} + 1) / (n + 1), and the 95% interval as
sacreBLEU estimates it (half the width between the 2.5th and 97.5th resampled scores).
Both use sacreBLEU's seed (``SACREBLEU_SEED``, default 12345) so a rerun gives the same p.
One departure, for both: a system whose score equals the baseline's gets p = 1 (the
procedure's formula gives 1/(n+1), which would call identical outputs significant).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from scoi.config import sacrebleu_seed
from scoi.core import defaults

DEFAULT_SAMPLES = defaults.BOOTSTRAP_SAMPLES  # sacreBLEU's default for the paired bootstrap


@dataclass(frozen=True)
class Paired:
    """One system's score against the baseline: the bootstrap mean and 95% interval
    (± ``ci``) of the system's score, and the p-value of its difference (None for the
    baseline itself)."""

    score: float
    mean: float
    ci: float
    p_value: float | None


def _mean_ci(samples: np.ndarray) -> tuple[float, float]:
    """sacreBLEU's estimate_ci: mean and half the width of the central 95%."""
    s = np.sort(samples)
    lo = len(s) // 40
    return float(s.mean()), float(0.5 * (s[len(s) - lo - 1] - s[lo]))


def _p_value(sample_diffs: np.ndarray, observed: float) -> float:
    stats = sample_diffs - sample_diffs.mean()
    return (int(np.sum(stats > observed)) + 1) / (len(stats) + 1)


def paired_bootstrap_means(baseline: Sequence[float], systems: Sequence[Sequence[float]], *,
                           n_samples: int = DEFAULT_SAMPLES, scale: float = 1.0) -> list[Paired]:
    """Paired bootstrap over segment scores (COMET): element 0 is the baseline, then
    one :class:`Paired` per system. All lists are scores of the same items, in the same
    order. ``scale`` multiplies reported scores (COMET is stored x100)."""
    base = np.asarray(baseline, dtype=np.float64)
    n = len(base)
    if n == 0 or any(len(s) != n for s in systems):
        raise ValueError("paired scores need the same, non-empty list of items for every system")
    idxs = np.random.default_rng(sacrebleu_seed()).choice(n, size=(n_samples, n), replace=True)
    base_samples = base[idxs].mean(axis=1)
    out = [Paired(float(base.mean()) * scale, *(v * scale for v in _mean_ci(base_samples)), None)]
    for sys_scores in systems:
        arr = np.asarray(sys_scores, dtype=np.float64)
        samples = arr[idxs].mean(axis=1)
        mean, ci = _mean_ci(samples)
        observed = abs(float(arr.mean()) - float(base.mean()))
        p = _p_value(np.abs(samples - base_samples), observed) if observed > 0 else 1.0
        out.append(Paired(float(arr.mean()) * scale, mean * scale, ci * scale, p))
    return out


def paired_bootstrap_sacrebleu(metric, baseline: Sequence[str], systems: Sequence[Sequence[str]],
                               references: Sequence[str], *, n_samples: int = DEFAULT_SAMPLES) -> list[Paired]:
    """sacreBLEU's paired bootstrap with ``metric`` (a sacrebleu metric object, configured
    as the scores were: scoi.jobs.eval.sacrebleu_metric); element 0 is the baseline."""
    from sacrebleu.significance import PairedTest

    named = [("baseline", list(baseline))] + [(f"system{i}", list(s)) for i, s in enumerate(systems, 1)]
    _, results = PairedTest(named, {"metric": metric}, [list(references)], test_type="bs", n_samples=n_samples)()
    rows = next(v for k, v in results.items() if k != "System")
    base_score = float(rows[0].score)
    return [Paired(float(r.score), float(r.mean), float(r.ci),
                   None if i == 0 else 1.0 if float(r.score) == base_score else float(r.p_value))
            for i, r in enumerate(rows)]


# --------------------------------------------------------------------------- experiment rows
#: A row's corpus score from its per-item statistics summed over a (resampled) test set.
ScoreOf = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class RowInterval:
    """A table row's score (the mean of its seeds' corpus scores), the 95% bootstrap
    percentile interval of that score, and its resampled scores (for paired tests)."""

    score: float
    low: float
    high: float
    samples: np.ndarray


def resample_counts(n_items: int, n_samples: int, seed: int) -> np.ndarray:
    """How often each item is drawn in each of ``n_samples`` resampled test sets
    (``n_samples`` x ``n_items``): the same draws as sacreBLEU's
    ``rng.choice(n, size=(n_samples, n))``, counted so a resampled sum is one product."""
    idxs = np.random.default_rng(seed).choice(n_items, size=(n_samples, n_items), replace=True)
    counts = np.zeros((n_samples, n_items), dtype=np.float64)
    np.add.at(counts, (np.arange(n_samples)[:, None], idxs), 1.0)
    return counts


def percentile_interval(samples: np.ndarray) -> tuple[float, float]:
    """The central 95% of the resampled scores: the 2.5th and 97.5th of them, as
    sacreBLEU's estimate_ci picks them (no interpolation)."""
    s = np.sort(samples)
    lo = len(s) // 40
    return float(s[lo]), float(s[len(s) - lo - 1])


def row_interval(seed_stats: Sequence[np.ndarray], score_of: ScoreOf, counts: np.ndarray) -> RowInterval:
    """A row's score and interval from its seeds' per-item statistics (items x stats, the
    same items in the same order for every seed and row): each resampled test set is
    scored once per seed from the summed statistics, and the seeds' scores averaged, so a
    random row's interval is that of the seed-averaged score the table shows."""
    if not seed_stats:
        raise ValueError("a row needs the statistics of one seed at least")
    full = float(np.mean([score_of(st.sum(axis=0)) for st in seed_stats]))
    samples = np.zeros(counts.shape[0], dtype=np.float64)
    for st in seed_stats:
        sums = counts @ st
        samples += np.array([score_of(row) for row in sums], dtype=np.float64)
    samples /= len(seed_stats)
    low, high = percentile_interval(samples)
    return RowInterval(full, low, high, samples)


def paired_p_value(system: RowInterval, baseline: RowInterval) -> float:
    """sacreBLEU's paired bootstrap p-value of the difference between two rows scored on
    the same resampled test sets; 1 when their scores are equal (see the module docstring)."""
    observed = abs(system.score - baseline.score)
    if observed == 0:
        return 1.0
    return _p_value(np.abs(system.samples - baseline.samples), observed)


__all__ = ["DEFAULT_SAMPLES", "Paired", "RowInterval", "ScoreOf", "paired_bootstrap_means",
           "paired_bootstrap_sacrebleu", "paired_p_value", "percentile_interval", "resample_counts", "row_interval"]
