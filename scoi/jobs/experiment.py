"""``scoi experiment``: the paper's comparison on the user's own data and models.

A grid (models × methods × k × example order × template) over one test file with
references becomes ordinary jobs, one per cell (``random``: one per seed, averaged, as the
paper reports it), so workers, resume and crash safety are the job queue's. The table is
one row per grid line and model, each score with its 95% bootstrap interval and a paired
bootstrap p-value against the same model's baseline row (docs/method.md §8), all rows
scored on the same resampled test sets. Rerunning an experiment resumes it: the jobs it
already holds are kept, finished ones are not translated again; a rerun naming another
model adds that model's cells.

The grid and spec are scoi.jobs.experiment_grid's, the table scoi.jobs.experiment_table's;
this module stores experiments, runs their jobs and computes their results.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from scoi.config import sacrebleu_seed
from scoi.core import defaults
from scoi.db.queries import load
from scoi.jobs.create import submit
from scoi.jobs.eval import (METRICS, check_same_references, common_items, done_items, ensure_scores, item_statistics,
                            model_label, score_from_statistics)
from scoi.jobs.experiment_grid import (Cell, Experiment, ExperimentSpec, check_spec, input_hash, merge_models,
                                       stored_models)
from scoi.jobs.experiment_table import table
from scoi.jobs.significance import DEFAULT_SAMPLES
from scoi.jobs.spec import JobError
from scoi.jobs.store import find_job_by_name, get_job, latest_segment_scores
from scoi.jobs.supervisor import counts_of, progress_text, run_workers, watch_counts
from scoi.jobs.worker import Worker, WorkerOptions
from scoi.jobs.worker_stats import WorkerStats

SQL = load("experiment")


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
                stats = run_workers(workers, opts, url, read_url=read_url,
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


__all__ = ["create_or_resume", "get_experiment", "list_experiments", "results", "run_jobs"]
