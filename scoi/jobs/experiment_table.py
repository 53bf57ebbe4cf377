"""An experiment's result table: one row per model and grid line, each score with its
bootstrap interval and paired p-value against the model's baseline row, and its printed
forms (terminal tables, footnotes, long TSV). Pure: scoi.jobs.experiment computes the
per-item statistics it starts from."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scoi.jobs.experiment_grid import ALPHA, CONFIDENCE, SPREAD, Cell
from scoi.jobs.significance import DEFAULT_SAMPLES, ScoreOf, paired_p_value, resample_counts, row_interval


# --------------------------------------------------------------------------- the table (pure)
def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def table(cells: Sequence[Cell], stats: Sequence[Mapping[str, np.ndarray | None]], scorers: Mapping[str, ScoreOf],
          *, job_ids: Sequence[int], baseline: str, n_samples: int = DEFAULT_SAMPLES,
          seed: int | None = 12345) -> dict[str, Any]:
    """One row per model and grid line (a random cell's seeds averaged), from each cell's
    per-item statistics per metric (items x statistics, the same items for every cell;
    None: the metric is not scored for that cell). Every row is scored on the same
    ``n_samples`` resampled test sets: its 95% percentile interval, and its paired
    p-value against its model's baseline row (the ``baseline`` method's row with the
    same k, order and template if there is one, else the same template, else the first).
    The JSON keys are documented in docs/jobs.md (Experiments)."""
    groups: dict[tuple, list[int]] = {}
    for i, cell in enumerate(cells):
        groups.setdefault(cell.row, []).append(i)
    n_items = next((len(st) for cs in stats for st in cs.values() if st is not None), 0)
    counts = resample_counts(n_items, n_samples, seed) if n_items else None
    rows: list[dict[str, Any]] = []
    intervals: list[dict[str, Any]] = []
    for key, members in groups.items():
        first = cells[members[0]]
        row: dict[str, Any] = {"model": first.model, "method": first.method, "k": first.k, "order": first.order,
                               "template": first.template, "seeds": len(members),
                               "jobs": [job_ids[i] for i in members], "baseline": first.method == baseline,
                               "tested_against": None, "scores": {}}
        ivs: dict[str, Any] = {}
        for metric, score_of in scorers.items():
            seed_stats = [stats[i].get(metric) for i in members]
            if counts is None or any(st is None for st in seed_stats):
                row["scores"][metric] = None
                continue
            iv = row_interval(seed_stats, score_of, counts)
            per_seed = [score_of(st.sum(axis=0)) for st in seed_stats]
            ivs[metric] = iv
            row["scores"][metric] = {"score": _r(iv.score), "low": _r(iv.low), "high": _r(iv.high), "p_value": None,
                                     "significant": False,
                                     "std": _r(float(np.std(per_seed, ddof=1))) if len(per_seed) > 1 else None}
        rows.append(row)
        intervals.append(ivs)
    for i, row in enumerate(rows):
        if row["baseline"]:
            continue
        j = baseline_row(rows, i, baseline)
        if j is None:
            continue
        row["tested_against"] = j
        for metric, iv in intervals[i].items():
            if metric in intervals[j]:
                p = paired_p_value(iv, intervals[j][metric])
                row["scores"][metric].update(p_value=_r(p), significant=p < ALPHA)
    return {"metrics": list(scorers), "baseline": baseline, "alpha": ALPHA, "confidence": CONFIDENCE,
            "n_samples": n_samples, "n_items": n_items, "spread": "std", "rows": rows}


def baseline_row(rows: Sequence[Mapping[str, Any]], i: int, baseline: str) -> int | None:
    """The row row ``i`` is tested against: its model's ``baseline`` row with the same k,
    order and template, else the same template, else its model's first baseline row."""
    row = rows[i]
    mine = [j for j, r in enumerate(rows) if r["model"] == row["model"] and r["method"] == baseline]
    for same in (("k", "order", "template"), ("template",), ()):
        found = [j for j in mine if all(rows[j][c] == row[c] for c in same)]
        if found:
            return found[0]
    return None


# --------------------------------------------------------------------------- printing (pure)
def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def varying(result: Mapping[str, Any]) -> list[str]:
    """The grid columns (k, order, template) with more than one value in the table."""
    return [c for c in ("k", "order", "template") if len({r[c] for r in result["rows"]}) > 1]


def row_title(row: Mapping[str, Any]) -> str:
    return row["method"] + (" (baseline)" if row["baseline"] else "") + (
        f" ×{row['seeds']} seeds" if row["seeds"] > 1 else "")


def metric_table(result: Mapping[str, Any], metric: str) -> tuple[list[str], list[list[str]]]:
    """The terminal table of one metric: a line per grid line, a column group per model
    (score, with * when p < alpha; its 95% interval, to one decimal so two models fit 80
    columns; p). A seeded row is followed by a
    line holding its seeds' standard deviation."""
    labels = [m["label"] for m in result["models"]]
    cols = varying(result)
    headers = ["method", *cols]
    for label in labels:
        headers += [label, "95% CI", "p"]
    lines: dict[tuple, dict[str, Mapping[str, Any]]] = {}
    for row in result["rows"]:
        lines.setdefault((row["method"], row["k"], row["order"], row["template"]), {})[row["model"]] = row
    out: list[list[str]] = []
    for by_model in lines.values():
        any_row = next(iter(by_model.values()))
        line = [row_title(any_row), *(str(any_row[c]) for c in cols)]
        spread = ["  sd of seeds", *("" for _ in cols)]
        for label in labels:
            s = (by_model.get(label) or {}).get("scores", {}).get(metric)
            if s is None:
                line += ["-", "", ""]
                spread += ["", "", ""]
                continue
            mark = "*" if s["significant"] else ""
            line += [_num(s["score"]) + mark, f"{_num(s['low'], 1)}–{_num(s['high'], 1)}",
                     "-" if s["p_value"] is None else f"{s['p_value']:.3f}"]
            spread += [_num(s["std"]) if s["std"] is not None else "", "", ""]
        out.append(line)
        if any_row["seeds"] > 1:
            out.append(spread)
    return headers, out


def footnotes(result: Mapping[str, Any]) -> list[str]:
    """The notes under the tables, each only when it applies."""
    notes = [f"95% CI: percentile bootstrap interval over {result['n_samples']} resampled test sets of "
             f"{result['n_items']} sentences (the same sets for every row)"]
    if any(r["tested_against"] is not None for r in result["rows"]):
        notes.append(f"* p < {result['alpha']} against the same model's {result['baseline']} row (paired bootstrap; "
                     "p is given for every row but the baseline's)")
    seeded = [r for r in result["rows"] if r["seeds"] > 1]
    if seeded:
        notes.append(f"{seeded[0]['method']} ×{seeded[0]['seeds']} seeds: the mean of its seeds' scores; its CI and p "
                     "are those of that mean; sd of seeds: " + SPREAD)
    named = [f"{m['label']} = {m['model']}" for m in result["models"] if m["label"] != m["model"]]
    if named:
        notes.append("models: " + ", ".join(named))
    return notes


TSV_HEADERS = ["model", "method", "k", "order", "template", "seeds", "metric", "score", "ci_low", "ci_high",
               "p_value", "significant", "std", "baseline"]


def tsv_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """The table as long TSV rows (TSV_HEADERS): one line per model, grid line and metric,
    empty fields where a value does not apply, so a pipe gets every number unrounded."""
    out = []
    for r in result["rows"]:
        for metric in result["metrics"]:
            s = r["scores"].get(metric)
            if s is None:
                continue
            out.append([r["model"], r["method"], str(r["k"]), r["order"], r["template"], str(r["seeds"]), metric,
                        str(s["score"]), str(s["low"]), str(s["high"]),
                        "" if s["p_value"] is None else str(s["p_value"]),
                        "" if r["tested_against"] is None else str(s["significant"]).lower(),
                        "" if s["std"] is None else str(s["std"]), str(r["baseline"]).lower()])
    return out


__all__ = ["TSV_HEADERS", "baseline_row", "footnotes", "metric_table", "row_title", "table", "tsv_rows", "varying"]
