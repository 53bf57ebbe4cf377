"""``scoi experiment``: the paper's comparison on the user's own data and models.

A grid (models × methods × k × example order × template) over one test file with
references becomes ordinary jobs, one per cell (``random``: one per seed, averaged, as the
paper reports it), so workers, resume and crash safety are the job queue's. The table is
one row per grid line and model, each score with its 95% bootstrap interval and a paired
bootstrap p-value against the same model's baseline row (docs/method.md §8), all rows
scored on the same resampled test sets. Rerunning an experiment resumes it: the jobs it
already holds are kept, finished ones are not translated again; a rerun naming another
model adds that model's cells.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from scoi.config import sacrebleu_seed
from scoi.core import defaults
from scoi.core.limits import check_range
from scoi.core.methods import REGISTRY
from scoi.core.names import check_name
from scoi.db.queries import load
from scoi.jobs.eval import (METRICS, check_same_references, common_items, done_items, ensure_scores, item_statistics,
                            model_label, score_from_statistics)
from scoi.jobs.significance import DEFAULT_SAMPLES, ScoreOf, paired_p_value, resample_counts, row_interval
from scoi.jobs.create import submit
from scoi.jobs.spec import check_backend_options, Job, JobError, JobSpec
from scoi.jobs.store import find_job_by_name, get_job, latest_segment_scores

SQL = load("experiment")

#: Seeds a ``random`` cell runs with; its row is their mean (docs/method.md §8).
RANDOM_SEEDS = defaults.RANDOM_SEEDS
#: p below this marks a score as significantly different from the baseline's.
ALPHA = 0.05
#: The coverage of the bootstrap interval each score is shown with.
CONFIDENCE = 0.95
#: What a seeded row's ``std`` is: the sample standard deviation (n - 1) of its seeds' scores.
SPREAD = "sample standard deviation of the seeds' scores"
#: A model label: short, and safe inside job names and table headers.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}")

#: An experiment's jobs never reuse the translation memory (scoi.reuse): they measure the model.
REUSE = "off"


@dataclass(frozen=True)
class Cell:
    """One point of the grid: one job. ``model`` is the model's label ("" in a grid built
    without models)."""

    method: str
    k: int
    order: str
    template: str
    seed: int = 0
    model: str = ""

    @property
    def line(self) -> tuple[str, int, str, str]:
        """The table line the cell belongs to, whatever the model (a random cell's seeds share one)."""
        return self.method, self.k, self.order, self.template

    @property
    def row(self) -> tuple[str, str, int, str, str]:
        """The result row: the line, for one model."""
        return (self.model, *self.line)

    def job_name(self, experiment: str) -> str:
        where = f"{experiment}/{self.model}" if self.model else experiment
        return f"{where}/{self.method}-k{self.k}-{self.order}-{self.template}-s{self.seed}"


def grid(methods: Sequence[str], ks: Sequence[int], orders: Sequence[str], templates: Sequence[str],
         *, random_seeds: int = RANDOM_SEEDS, models: Sequence[str] = ("",)) -> list[Cell]:
    """The cells of a grid, model after model (a worker loads each model once), in the
    order given, without repeats. A method without examples (``zero``) has one cell per
    template (k = 0, the first order), whatever ks and orders say; a seeded one
    (``random``) one per seed."""
    cells: list[Cell] = []
    for model in models:
        for method in methods:
            entry = REGISTRY.get(method.partition(":")[0])  # an unknown method is refused at submit
            examples, seeds = (entry.examples, random_seeds if entry.seeded else 1) if entry else (True, 1)
            for template in templates:
                for k in ks:
                    for order in orders:
                        kk, oo = (k, order) if examples else (0, orders[0])
                        for seed in range(seeds):
                            cell = Cell(method, kk, oo, template, seed, model)
                            if cell not in cells:
                                cells.append(cell)
    return cells


def parse_models(values: Sequence[str]) -> dict[str, str]:
    """Label -> backend spec of ``--model`` values, in order: ``LABEL=SPEC`` names a model,
    a bare ``SPEC`` gets :func:`model_label` (the last part of its path). Two models under
    one label, or one model given twice, are refused (JobError)."""
    out: dict[str, str] = {}
    for value in values:
        head, sep, rest = value.partition("=")
        label, spec = (head, rest.strip()) if sep and LABEL.fullmatch(head) else ("", value.strip())
        if not spec:
            raise JobError(f"--model {value!r}: expected a backend spec (hf:DIR, openai:MODEL, ...) or LABEL=SPEC")
        label = label or model_label(spec)
        if not LABEL.fullmatch(label):
            raise JobError(f"--model {value!r}: its label {label!r} is not a short name (letters, digits, . _ + -, "
                           "at most 40); name it with LABEL=SPEC, e.g. xglm=" + spec)
        if spec in out.values():
            raise JobError(f"--model {spec!r} is given twice")
        if label in out:
            raise JobError(f"models {out[label]!r} and {spec!r} share the label {label!r}; name them with "
                           f"LABEL=SPEC, e.g. --model a={out[label]} --model b={spec}")
        out[label] = spec
    if not out:
        raise JobError("an experiment needs one --model at least")
    return out


def merge_models(stored: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """The experiment's models after a rerun: the stored ones, then the given ones it
    lacks. A label already naming another model, or a model under another label, is a
    conflict (JobError): cells and job names are keyed by the label."""
    merged = dict(stored)
    for label, spec in given.items():
        if label in merged and merged[label] != spec:
            raise JobError(f"the experiment's model {label!r} is {merged[label]!r}, not {spec!r}; give the new "
                           f"model another label (--model OTHER={spec})")
        other = next((lab for lab, sp in merged.items() if sp == spec and lab != label), None)
        if other is not None:
            raise JobError(f"model {spec!r} is in the experiment as {other!r}; rerun with --model {other}={spec}")
        merged[label] = spec
    return merged


@dataclass
class ExperimentSpec:
    """What to compare, on which data, with which models (label -> backend spec); ``job``
    settings every cell's job shares (pool, max_new_tokens, backend options, ...)."""

    name: str
    src: str
    tgt: str
    models: dict[str, str]
    methods: list[str]
    ks: list[int] = field(default_factory=lambda: [defaults.K])
    orders: list[str] = field(default_factory=lambda: [defaults.ORDER])
    templates: list[str] = field(default_factory=lambda: [defaults.TEMPLATE])
    baseline: str | None = None
    random_seeds: int = RANDOM_SEEDS
    pool: int = defaults.POOL
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    max_attempts: int = defaults.MAX_ATTEMPTS
    backend_options: dict[str, Any] = field(default_factory=dict)
    embedder: str | None = None  # fuzzy / fuzzy-ann: the embedding model (default: the paper's)
    ctq_model: str | None = None  # ctq: the stored CTQ model (default: the direction's newest fitted one)

    def cells(self) -> list[Cell]:
        return grid(self.methods, self.ks, self.orders, self.templates, random_seeds=self.random_seeds,
                    models=list(self.models))

    def baseline_method(self) -> str:
        """The named baseline, else bm25 when in the grid (the paper's usual reference), else the first method."""
        if self.baseline:
            return self.baseline
        return "bm25" if "bm25" in self.methods else self.methods[0]

    def job_spec(self, cell: Cell) -> JobSpec:
        """The cell's job. A method ``rbm25:VARIANT`` (e.g. ``rbm25:ctq`` beside
        ``rbm25``, whose variant is the default ``moses``) compares R-BM25 variants. Never
        reuses the translation memory (``reuse="off"``): an experiment measures the model,
        and a test sentence stored in the memory must not score the memory's translation."""
        method, _, variant = cell.method.partition(":")
        return JobSpec(src=self.src, tgt=self.tgt, model=self.models[cell.model], method=method, k=cell.k,
                       template=cell.template, name=cell.job_name(self.name), max_attempts=self.max_attempts,
                       pool=self.pool, order=cell.order, seed=cell.seed, max_new_tokens=self.max_new_tokens,
                       backend_options=self.backend_options, embedder=self.embedder, reuse=REUSE,
                       **({"rbm25_variant": variant} if variant else {}),
                       **({"ctq_model": self.ctq_model} if method == "ctq" else {}))

    def grid_json(self) -> dict[str, Any]:
        """The settings a rerun must repeat (the models are compared apart: a rerun may add one)."""
        d = asdict(self)
        for key in ("name", "src", "tgt", "models"):
            d.pop(key)
        if d["ctq_model"] is None:  # absent unless given: experiments stored before it still resume
            d.pop("ctq_model")
        d["baseline"] = self.baseline_method()
        return d


def input_hash(sources: Sequence[str], references: Sequence[str]) -> str:
    """Identifies the test set, so a rerun on another file is refused instead of mixed in."""
    h = hashlib.sha256()
    for s, r in zip(sources, references):
        h.update(s.encode() + b"\t" + r.encode() + b"\n")
    return h.hexdigest()


@dataclass
class Experiment:
    id: int
    name: str
    src: str
    tgt: str
    models: dict[str, str]
    grid: dict[str, Any]
    cells: list[tuple[Cell, Job]]
    result: dict[str, Any] | None = None


def stored_models(grid_json: Mapping[str, Any], model: str) -> dict[str, str]:
    """Label -> spec of a stored experiment: its grid's ``models``, or (an experiment made
    before several models were possible) its one ``model`` under its short label."""
    models = grid_json.get("models")
    if models:
        return {m["label"]: m["model"] for m in models}
    return {model_label(model): model}


def check_spec(spec: ExperimentSpec) -> None:
    """Refuse, before anything is stored, what no cell's job would take: a name with
    control characters, numbers out of range, a secret in the backend options (the grid,
    stored with the experiment, holds them). Each job is checked again when submitted."""
    try:
        check_name("experiment", spec.name)
        for k in spec.ks:
            check_range("k", k, "--k")
        for limit in ("random_seeds", "pool", "max_new_tokens", "max_attempts"):
            check_range(limit, getattr(spec, limit))
    except ValueError as e:
        raise JobError(str(e)) from None
    if not spec.models:
        raise JobError("an experiment needs one --model at least")
    check_backend_options(spec.backend_options)


# --------------------------------------------------------------------------- database
def create_or_resume(conn: psycopg.Connection, spec: ExperimentSpec, sources: Sequence[str],
                     references: Sequence[str], *, input_path: str | None = None,
                     references_path: str | None = None) -> tuple[Experiment, int]:
    """The experiment ``spec.name`` with a job per cell: created (all in one transaction),
    or found as a previous run left it, which must have the same grid and input; models
    the rerun names that the experiment lacks are added with their cells.
    Returns (experiment, jobs created now)."""
    check_spec(spec)
    if not references or len(references) != len(sources):
        raise JobError("an experiment needs --references aligned line by line with --input "
                       f"({len(sources)} source lines, {len(references or [])} reference lines)")
    if not spec.methods:
        raise JobError("no methods to compare")
    if spec.baseline_method() not in spec.methods:
        raise JobError(f"baseline {spec.baseline_method()!r} is not one of the methods ({', '.join(spec.methods)})")
    digest = input_hash(sources, references)
    created = 0
    with conn.transaction():
        conn.execute(SQL["lock_experiments"])
        row = conn.execute(SQL["experiment_by_name"], {"name": spec.name}).fetchone()
        if row is not None:
            exp_id, stored_grid = row[0], dict(row[6])
            models = stored_models(stored_grid, row[5])
            stored_grid.pop("models", None)
            if (row[3], row[4], stored_grid, row[7]) != (spec.src, spec.tgt, spec.grid_json(), digest):
                raise JobError(f"experiment {spec.name!r} exists with another grid, direction or input; rerun it "
                               "with the same options to resume it (adding --model adds a model), or pick another "
                               "name")
            merged = merge_models(models, spec.models)
            if merged != models:
                conn.execute(SQL["update_experiment_grid"], {"experiment_id": exp_id, "grid": json.dumps(
                    {**spec.grid_json(), "models": [{"label": k, "model": v} for k, v in merged.items()]})})
        else:
            merged = dict(spec.models)
            exp_id = conn.execute(SQL["insert_experiment"], {
                "name": spec.name, "src": spec.src, "tgt": spec.tgt, "model": next(iter(merged.values())),
                "grid": json.dumps({**spec.grid_json(),
                                    "models": [{"label": k, "model": v} for k, v in merged.items()]}),
                "input_hash": digest, "input_path": input_path, "references_path": references_path}).fetchone()[0]
        spec = replace(spec, models=merged)
        have = {(r[1], *r[2:]) for r in conn.execute(SQL["experiment_jobs"], {"experiment_id": exp_id}).fetchall()}
        for cell in spec.cells():
            model = merged[cell.model]
            if (model, cell.method, cell.k, cell.order, cell.template, cell.seed) in have:
                continue
            job = find_job_by_name(conn, cell.job_name(spec.name))
            if job is None:
                job_id = submit(conn, spec.job_spec(cell), sources, references, input_path=input_path,
                                references_path=references_path)
                created += 1
            else:
                job_id = job.id
            conn.execute(SQL["insert_experiment_job"], {"experiment_id": exp_id, "job_id": job_id, "model": model,
                                                        "method": cell.method, "k": cell.k, "order": cell.order,
                                                        "template": cell.template, "seed": cell.seed})
    return get_experiment(conn, spec.name), created


def get_experiment(conn: psycopg.Connection, name: str) -> Experiment:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(SQL["experiment_by_name"], {"name": name}).fetchone()
        if row is None:
            raise JobError(f"no experiment {name!r} (see `scoi experiment list`)")
        models = stored_models(row["grid"], row["model"])
        label_of = {spec: label for label, spec in models.items()}
        cells = [(Cell(r["method"], r["k"], r["example_order"], r["template"], r["seed"],
                       label_of.get(r["model"]) or model_label(r["model"])), get_job(conn, r["job_id"]))
                 for r in cur.execute(SQL["experiment_jobs"], {"experiment_id": row["id"]}).fetchall()]
    return Experiment(row["id"], row["name"], row["src_lang"], row["tgt_lang"], models, row["grid"], cells,
                      row["result"])


def list_experiments(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Experiments with their models (label -> spec) and jobs done / total."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(SQL["list_experiments"]).fetchall()
    for r in rows:
        r["models"] = [{"label": k, "model": v} for k, v in stored_models({"models": r["models"]}, r["model"]).items()]
    return rows


def run_jobs(url: str, experiment: Experiment, *, workers: int = 1, batch_size: int = defaults.WORKER_BATCH,
             log: Callable[[str], None] | None = None, read_url: str | None = None,
             progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Translate the experiment's queued items, job after job: in this process with one
    worker (the model loads once), or with a pool of ``workers`` processes per job.
    Items of other jobs are left alone. Returns counts summed over the jobs. ``read_url``:
    the replica the workers select on. ``progress`` gets a line (job n of N, its counts)
    as the jobs go."""
    from scoi.jobs.supervisor import counts_of, progress_text, run_pool, watch_counts
    from scoi.jobs.worker import Worker, WorkerOptions, WorkerStats

    say = log or (lambda msg: None)
    totals = {"done": 0, "failed": 0, "requeued": 0}
    worker = Worker(url, WorkerOptions(batch_size=batch_size, burst=True), read_url=read_url) if workers <= 1 else None
    try:
        for n, (cell, job) in enumerate(experiment.cells, 1):
            opts = WorkerOptions(batch_size=batch_size, burst=True, job_id=job.id)
            prefix = f"job {n} of {len(experiment.cells)} ({job.name}): "
            if progress is not None:
                progress(prefix + "starting")
            if worker is not None:
                worker.opts = opts
                report = (lambda st: progress(progress_text(*counts_of(st), prefix=prefix))) if progress else None
                with watch_counts(worker, report):
                    stats = worker.run().to_dict()
                worker.stats = WorkerStats(worker=worker.id)  # counts per job
            else:
                stats = run_pool(workers, opts, url, read_url=read_url,
                                 progress=(lambda text: progress(prefix + text)) if progress else None)
            for key in totals:
                totals[key] += stats[key]
            say(f"{job.name}: {stats['done']} translated, {stats['failed']} failed")
    finally:
        if worker is not None:
            worker.close()
    return totals


def results(conn: psycopg.Connection, experiment: Experiment, *, comet: str | None = None,
            n_samples: int = DEFAULT_SAMPLES, partial: bool = False) -> dict[str, Any]:
    """The experiment's table (see :func:`table`), computed from its jobs' outputs over the
    items every job translated (BLEU and chrF scored where missing, COMET with ``comet``)
    and stored in ``experiment.result``."""
    jobs = [job for _, job in experiment.cells]
    if not jobs:
        raise JobError(f"experiment {experiment.name!r} has no jobs")
    have = [ensure_scores(conn, job, comet=comet, partial=partial) for job in jobs]
    done = [done_items(conn, job, partial=partial) for job in jobs]
    check_same_references(jobs, done)
    common = common_items(done)
    if not common:
        raise JobError(f"experiment {experiment.name!r}: no sentence is translated by every job yet")
    metrics = [m for m in METRICS if any(m in h for h in have)]
    stats: list[dict[str, np.ndarray | None]] = []
    for job, items in zip(jobs, done):
        by_idx = {d[0]: d for d in items}
        hyps, refs = [by_idx[i][2] for i in common], [by_idx[i][3] for i in common]
        cell: dict[str, np.ndarray | None] = {}
        for metric in metrics:
            if metric == "comet":
                segs = latest_segment_scores(conn, job.id, "comet")
                cell[metric] = (np.column_stack([[segs[i] for i in common], np.ones(len(common))])
                                if all(i in segs for i in common) else None)
            else:
                cell[metric] = item_statistics(metric, experiment.tgt, hyps, refs)
        stats.append(cell)
    out = table([cell for cell, _ in experiment.cells], stats, {m: score_from_statistics(m, experiment.tgt)
                                                                 for m in metrics},
                job_ids=[job.id for job in jobs], baseline=experiment.grid["baseline"], n_samples=n_samples,
                seed=sacrebleu_seed())
    out = {"experiment": experiment.name, "direction": f"{experiment.src}-{experiment.tgt}",
           "models": [{"label": k, "model": v} for k, v in experiment.models.items()], **out}
    conn.execute(SQL["store_result"], {"experiment_id": experiment.id, "result": json.dumps(out, default=str)})
    return out


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


__all__ = ["ALPHA", "CONFIDENCE", "Cell", "Experiment", "ExperimentSpec", "METRICS", "RANDOM_SEEDS", "SPREAD",
           "TSV_HEADERS", "baseline_row", "check_spec", "create_or_resume", "footnotes", "get_experiment", "grid",
           "input_hash", "list_experiments", "merge_models", "metric_table", "parse_models", "results", "row_title",
           "run_jobs", "stored_models", "table", "tsv_rows", "varying"]
