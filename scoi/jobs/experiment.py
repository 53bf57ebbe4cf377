"""``scoi experiment``: the paper's comparison on the user's own data and model.

A grid (methods × k × example order × template) over one test file with references
becomes ordinary jobs, one per cell (``random``: one per seed, averaged, as the paper
reports it), so workers, resume and crash safety are the job queue's. The table is one
row per cell, one column per metric, each score marked against a baseline row with
``scoi eval``'s paired bootstrap (docs/method.md §8). Rerunning an experiment resumes it:
the jobs it already holds are kept, finished ones are not translated again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from scoi.core import defaults
from scoi.core.methods import REGISTRY
from scoi.db.queries import load
from scoi.jobs.eval import METRICS, compare
from scoi.jobs.significance import DEFAULT_SAMPLES
from scoi.jobs.create import submit
from scoi.jobs.spec import check_backend_options, Job, JobError, JobSpec
from scoi.jobs.store import find_job_by_name, get_job

SQL = load("experiment")

#: Seeds a ``random`` cell runs with; its row is their mean (docs/method.md §8).
RANDOM_SEEDS = defaults.RANDOM_SEEDS
#: p below this marks a score as significantly different from the baseline's.
ALPHA = 0.05


#: An experiment's jobs never reuse the translation memory (scoi.reuse): they measure the model.
REUSE = "off"


@dataclass(frozen=True)
class Cell:
    """One point of the grid: one job."""

    method: str
    k: int
    order: str
    template: str
    seed: int = 0

    @property
    def row(self) -> tuple[str, int, str, str]:
        """The table row the cell belongs to (the seeds of a random cell share one)."""
        return self.method, self.k, self.order, self.template

    def job_name(self, experiment: str) -> str:
        return f"{experiment}/{self.method}-k{self.k}-{self.order}-{self.template}-s{self.seed}"


def grid(methods: Sequence[str], ks: Sequence[int], orders: Sequence[str], templates: Sequence[str],
         *, random_seeds: int = RANDOM_SEEDS) -> list[Cell]:
    """The cells of a grid, in the order given, without repeats. A method without
    examples (``zero``) has one cell per template (k = 0, the first order), whatever ks and
    orders say; a seeded one (``random``) one per seed."""
    cells: list[Cell] = []
    for method in methods:
        entry = REGISTRY.get(method.partition(":")[0])  # an unknown method is refused at submit
        examples, seeds = (entry.examples, random_seeds if entry.seeded else 1) if entry else (True, 1)
        for template in templates:
            for k in ks:
                for order in orders:
                    kk, oo = (k, order) if examples else (0, orders[0])
                    for seed in range(seeds):
                        cell = Cell(method, kk, oo, template, seed)
                        if cell not in cells:
                            cells.append(cell)
    return cells


@dataclass
class ExperimentSpec:
    """What to compare, on which data, with which model; ``job`` holds the settings every
    cell's job shares (pool, max_new_tokens, backend options, ...)."""

    name: str
    src: str
    tgt: str
    model: str
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

    def cells(self) -> list[Cell]:
        return grid(self.methods, self.ks, self.orders, self.templates, random_seeds=self.random_seeds)

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
        return JobSpec(src=self.src, tgt=self.tgt, model=self.model, method=method, k=cell.k,
                       template=cell.template, name=cell.job_name(self.name), max_attempts=self.max_attempts,
                       pool=self.pool, order=cell.order, seed=cell.seed, max_new_tokens=self.max_new_tokens,
                       backend_options=self.backend_options, embedder=self.embedder, reuse=REUSE,
                       **({"rbm25_variant": variant} if variant else {}))

    def grid_json(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("name", "src", "tgt", "model"):
            d.pop(key)
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
    model: str
    grid: dict[str, Any]
    cells: list[tuple[Cell, Job]]
    result: dict[str, Any] | None = None


def check_spec(spec: ExperimentSpec) -> None:
    """Refuse, before anything is stored, what no cell's job would take: a name with
    control characters, numbers out of range, a secret in the backend options (the grid,
    stored with the experiment, holds them). Each job is checked again when submitted."""
    from scoi.core.limits import check_range
    from scoi.core.names import check_name

    try:
        check_name("experiment", spec.name)
        for k in spec.ks:
            check_range("k", k, "--k")
        for limit in ("random_seeds", "pool", "max_new_tokens", "max_attempts"):
            check_range(limit, getattr(spec, limit))
    except ValueError as e:
        raise JobError(str(e)) from None
    check_backend_options(spec.backend_options)


# --------------------------------------------------------------------------- database
def create_or_resume(conn: psycopg.Connection, spec: ExperimentSpec, sources: Sequence[str],
                     references: Sequence[str], *, input_path: str | None = None,
                     references_path: str | None = None) -> tuple[Experiment, int]:
    """The experiment ``spec.name`` with a job per cell: created (all in one transaction),
    or found as a previous run left it, which must have the same grid and input.
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
            if (row[1], row[3], row[4], row[5], row[6], row[7]) != (spec.name, spec.src, spec.tgt, spec.model,
                                                                    spec.grid_json(), digest):
                raise JobError(f"experiment {spec.name!r} exists with another grid, model or input; rerun it with "
                               "the same options to resume it, or pick another name")
            exp_id = row[0]
        else:
            exp_id = conn.execute(SQL["insert_experiment"], {
                "name": spec.name, "src": spec.src, "tgt": spec.tgt, "model": spec.model,
                "grid": json.dumps(spec.grid_json()), "input_hash": digest, "input_path": input_path,
                "references_path": references_path}).fetchone()[0]
        for cell in spec.cells():
            job = find_job_by_name(conn, cell.job_name(spec.name))
            if job is None:
                job_id = submit(conn, spec.job_spec(cell), sources, references, input_path=input_path,
                                references_path=references_path)
                created += 1
            else:
                job_id = job.id
            conn.execute(SQL["insert_experiment_job"], {"experiment_id": exp_id, "job_id": job_id,
                                                        "method": cell.method, "k": cell.k, "order": cell.order,
                                                        "template": cell.template, "seed": cell.seed})
    return get_experiment(conn, spec.name), created


def get_experiment(conn: psycopg.Connection, name: str) -> Experiment:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(SQL["experiment_by_name"], {"name": name}).fetchone()
        if row is None:
            raise JobError(f"no experiment {name!r} (see `scoi experiment list`)")
        cells = [(Cell(r["method"], r["k"], r["example_order"], r["template"], r["seed"]), get_job(conn, r["job_id"]))
                 for r in cur.execute(SQL["experiment_jobs"], {"experiment_id": row["id"]}).fetchall()]
    return Experiment(row["id"], row["name"], row["src_lang"], row["tgt_lang"], row["model"], row["grid"], cells,
                      row["result"])


def list_experiments(conn: psycopg.Connection) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(SQL["list_experiments"]).fetchall()


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
    """The experiment's table (``table``), computed from its jobs' scores (BLEU and chrF
    scored where missing, COMET with ``comet``) and stored in ``experiment.result``."""
    jobs = [job for _, job in experiment.cells]
    base_method = experiment.grid["baseline"]
    base = next(i for i, (cell, _) in enumerate(experiment.cells) if cell.method == base_method)
    columns, rows = compare(conn, jobs, comet=comet, partial=partial, baseline=base, n_samples=n_samples)
    out = table([cell for cell, _ in experiment.cells], rows, columns, baseline=base)
    out.update(experiment=experiment.name, direction=f"{experiment.src}-{experiment.tgt}", model=experiment.model,
               n_samples=n_samples)
    conn.execute(SQL["store_result"], {"experiment_id": experiment.id, "result": json.dumps(out, default=str)})
    return out


# --------------------------------------------------------------------------- the table (pure)
def table(cells: Sequence[Cell], job_rows: Sequence[dict[str, Any]], columns: Sequence[str], *,
          baseline: int) -> dict[str, Any]:
    """One row per grid row (a random cell's seeds averaged), from ``compare``'s rows for
    the cells' jobs (same order). A row's significance is its first seed's paired test
    against the baseline job; ``significant`` says whether p < ALPHA."""
    rows: dict[tuple, dict[str, Any]] = {}
    for cell, jr in zip(cells, job_rows):
        row = rows.setdefault(cell.row, {"method": cell.method, "k": cell.k, "order": cell.order,
                                         "template": cell.template, "jobs": [], "scores": {m: [] for m in columns},
                                         "significance": {}, "baseline": False})
        row["jobs"].append(jr["job_id"])
        for m in columns:
            if m in jr:
                row["scores"][m].append(jr[m])
        if len(row["jobs"]) == 1:
            row["significance"] = {m: {**s, "significant": s["p_value"] is not None and s["p_value"] < ALPHA}
                                   for m, s in (jr.get("significance") or {}).items()}
            row["baseline"] = bool(jr.get("baseline"))
            row["n_items"] = jr.get("n_items", 0)
    out_rows = []
    for row in rows.values():
        scores = row.pop("scores")
        row["seeds"] = len(row["jobs"])
        for m in columns:
            vals = scores[m]
            row[m] = round(sum(vals) / len(vals), 4) if vals else None
        out_rows.append(row)
    return {"columns": list(columns), "rows": out_rows, "baseline": cells[baseline].method, "alpha": ALPHA}


def format_cell(row: dict[str, Any], metric: str) -> str:
    """``45.21*`` when significantly different from the baseline (p < ALPHA), ``45.21``
    otherwise, ``-`` when not scored; the baseline's own scores are unmarked."""
    value = row.get(metric)
    if value is None:
        return "-"
    mark = "*" if (row["significance"].get(metric) or {}).get("significant") and not row["baseline"] else ""
    return f"{value:.2f}{mark}"


__all__ = ["ALPHA", "Cell", "Experiment", "ExperimentSpec", "METRICS", "RANDOM_SEEDS", "check_spec", "create_or_resume",
           "format_cell", "get_experiment", "grid", "input_hash", "list_experiments", "results", "run_jobs", "table"]
