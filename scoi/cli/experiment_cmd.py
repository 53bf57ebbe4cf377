"""``scoi experiment run | show | list``: methods × k × order × template as jobs, one table."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import console, database_url, emit_json, fail, print_rows, say, status_line
from scoi.cli.job_options import EXPERIMENT, JobOptions, job_options
from scoi.core import defaults
from scoi.core.limits import LIMITS

experiment_app = typer.Typer(help="Compare selection methods on a test file with references (the paper's table).",
                             no_args_is_help=True)


def _split(value: str, what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        fail(f"--{what} is empty; give a comma-separated list")
    return items


def _ints(value: str, what: str) -> list[int]:
    try:
        return [int(v) for v in _split(value, what)]
    except ValueError:
        fail(f"--{what} {value!r}: expected comma-separated whole numbers, e.g. 1,4")


def _print_table(result: dict) -> None:
    from scoi.jobs.experiment import format_cell

    columns = result["columns"]
    varying = [c for c in ("k", "order", "template") if len({r[c] for r in result["rows"]}) > 1]
    headers = ["method", *varying, *columns]
    rows = []
    for r in result["rows"]:
        label = r["method"] + (" (baseline)" if r["baseline"] else "") + (f" ×{r['seeds']} seeds" if r["seeds"] > 1
                                                                            else "")
        rows.append([label, *(str(r[c]) for c in varying), *(format_cell(r, m) for m in columns)])
    print_rows(headers, rows)
    n = max((r.get("n_items", 0) for r in result["rows"]), default=0)
    say(f"{result['experiment']}: {result['direction']}, {result['model']}, {n} sentences; * = differs "
        f"from {result['baseline']} (paired bootstrap, {result['n_samples']} samples, p < "
        f"{result['alpha']}); random rows are the mean of their seeds, tested on the first")


def _report(url: str, name: str, *, comet: str | None, samples: int, partial: bool, json_out: bool) -> None:
    """Score the experiment's jobs where needed, store and print its table."""
    from scoi.jobs.eval import EvalError
    from scoi.jobs.experiment import get_experiment, results
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import connect

    with connect(url) as conn:
        try:
            result = results(conn, get_experiment(conn, name), comet=comet, n_samples=samples, partial=partial)
        except (EvalError, JobError) as e:
            fail(str(e))
    if json_out:
        emit_json(result)
    else:
        _print_table(result)


@experiment_app.command("run")
@job_options(EXPERIMENT)
def run(
    name: str = typer.Argument(..., help="Experiment name; rerun with the same options to resume."),
    input_file: Path = typer.Option(..., "--input", "-i", help="Test sentences, one per line."),
    references: Path = typer.Option(..., "--references", "-r", help="Reference translations, line-aligned."),
    methods: str = typer.Option("zero,random,bm25,rbm25,poly-topk,dpp,scoi", "--methods",
                                help="Comma-separated methods, one table row each (random: mean of --random-seeds; "
                                     "rbm25:ctq / rbm25:agrawal: R-BM25 with that variant, rbm25 alone is moses)."),
    ks: str = typer.Option(str(defaults.K), "--k", help="Comma-separated numbers of examples, e.g. 1,4."),
    orders: str = typer.Option(defaults.ORDER, "--orders", help="Comma-separated example orders (reverse, selection)."),
    templates: str = typer.Option(defaults.TEMPLATE, "--templates",
                                  help="Comma-separated prompt templates (xglm, alpaca, FILE)."),
    baseline: str | None = typer.Option(None, "--baseline", help="Method the others are tested against "
                                                                 "(default: bm25 if compared, else the first)."),
    random_seeds: int = typer.Option(defaults.RANDOM_SEEDS, "--random-seeds", min=1, max=LIMITS["random_seeds"][1],
                                     help="Seeds of the random method (paper: 3)."),
    workers: int = typer.Option(1, "--workers", min=0, max=LIMITS["workers"][1],
                                help="Translate with this many worker processes per job (1: in this process, the "
                                     "model loads once); 0: only queue the jobs, for `scoi worker`s elsewhere."),
    comet: str | None = typer.Option(None, "--comet", help="COMET checkpoint (file or local model directory)."),
    samples: int = typer.Option(defaults.BOOTSTRAP_SAMPLES, "--samples", min=10, max=LIMITS["samples"][1],
                                help="Bootstrap resamples for significance."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the table as JSON."),
    opts: JobOptions = JobOptions(),
) -> None:
    """Queue one job per grid cell (or resume them), translate them, print the table.

    Rows are methods (and k / order / template where several are given), columns BLEU,
    chrF and COMET (with --comet); a * marks a score that differs from the baseline's with
    p < 0.05 (paired bootstrap over the same sentences). The table is stored with the
    experiment: `scoi experiment show NAME` prints it again. The jobs never reuse the
    translation memory (--reuse off): an experiment measures the model.
    """
    from scoi.db.engine import resolve_read_url
    from scoi.jobs.experiment import ExperimentSpec, create_or_resume, run_jobs
    from scoi.jobs.spec import read_lines, JobError
    from scoi.jobs.store import connect

    try:
        sources, refs = read_lines(input_file), read_lines(references)
    except JobError as e:
        fail(str(e))
    spec = ExperimentSpec(name=name, src=opts.src.lower(), tgt=opts.tgt.lower(), model=opts.model,
                          methods=_split(methods, "methods"), ks=_ints(ks, "k"), orders=_split(orders, "orders"),
                          templates=_split(templates, "templates"), baseline=baseline, random_seeds=random_seeds,
                          pool=opts.pool, max_new_tokens=opts.max_new_tokens, backend_options=opts.backend_options(),
                          embedder=opts.embedder)
    url = database_url()
    log = (lambda msg: None) if json_out else (lambda msg: say(msg, err=True))
    with connect(url) as conn:
        try:
            experiment, created = create_or_resume(conn, spec, sources, refs, input_path=str(input_file.resolve()),
                                                   references_path=str(references.resolve()))
        except JobError as e:
            fail(str(e))
    log(f"experiment {name}: {len(experiment.cells)} jobs ({created} new) of {len(sources)} sentences; "
        "--reuse off: the model translates every sentence, even one stored in the memory")
    if workers == 0:
        log("jobs queued; run `scoi worker --burst`, then `scoi experiment show " + name + "`")
        if json_out:
            emit_json({"experiment": name, "jobs": [job.id for _, job in experiment.cells], "created": created})
        return
    try:
        with status_line(sys.stderr.isatty()) as progress:  # stderr: stdout stays clean for --json
            run_jobs(url, experiment, workers=workers, log=log, read_url=resolve_read_url(), progress=progress)
    except KeyboardInterrupt:
        fail("interrupted; rerun the same command to resume", code=130)
    _report(url, name, comet=comet, samples=samples, partial=False, json_out=json_out)


@experiment_app.command("show")
def show(
    name: str = typer.Argument(..., help="Experiment name."),
    comet: str | None = typer.Option(None, "--comet", help="COMET checkpoint, to add or refresh COMET scores."),
    samples: int = typer.Option(defaults.BOOTSTRAP_SAMPLES, "--samples", min=10, max=LIMITS["samples"][1],
                                help="Bootstrap resamples for significance."),
    partial: bool = typer.Option(False, "--partial", help="Score the items done so far of unfinished jobs."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the table as JSON."),
) -> None:
    """The experiment's table, from its jobs' current scores (scored where missing)."""
    _report(database_url(), name, comet=comet, samples=samples, partial=partial, json_out=json_out)


@experiment_app.command("list")
def list_(json_out: bool = typer.Option(False, "--json", help="Print a JSON array.")) -> None:
    """Experiments with their jobs done / total."""
    from scoi.jobs.experiment import list_experiments
    from scoi.jobs.store import connect

    with connect(database_url()) as conn:
        rows = list_experiments(conn)
    if json_out:
        emit_json(rows)
        return
    if not rows:
        console.print("no experiments yet: scoi experiment run NAME --input ... --references ... --model ...")
        return
    print_rows(["name", "direction", "model", "jobs done", "created", "table computed"],
               [[r["name"], f"{r['src_lang']}-{r['tgt_lang']}", r["model"], f"{r['jobs_done']}/{r['jobs']}",
                 str(r["created_at"])[:19], str(r["result_at"] or "")[:19]] for r in rows])
