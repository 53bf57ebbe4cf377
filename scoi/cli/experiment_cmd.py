"""``scoi experiment run | show | plot | list``: models × methods × k × order × template as
jobs, a table per metric, a plot."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import console, database_url, emit_json, fail, print_rows, say, status_line, table_cells
from scoi.cli.job_options import EXPERIMENT, JobOptions, job_options
from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.core.names import printable

experiment_app = typer.Typer(help="Compare selection methods across models on a test file with references "
                                  "(the paper's table), with intervals, p-values and a plot.",
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


def _models(model: list[str], models: str | None) -> list[str]:
    """The --model values, then the --models list's."""
    given = list(model) + (_split(models, "models") if models is not None else [])
    if not given:
        fail("give the model(s) to compare: --model SPEC (repeatable, or LABEL=SPEC) or --models SPEC,SPEC")
    return given


def metric_tables(result: dict) -> list:
    """The rich tables of an experiment's result, one per metric (scoi.jobs.experiment_table.metric_table)."""
    from rich import box
    from rich.table import Table

    from scoi.jobs.experiment_table import metric_table

    names = {"bleu": "BLEU", "chrf": "chrF", "comet": "COMET"}
    tables = []
    for metric in result["metrics"]:
        headers, rows = metric_table(result, metric)
        t = Table(*headers, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, title_justify="left",
                  title=f"{names.get(metric, metric)}: {result['experiment']}, {result['direction']}, "
                        f"{result['n_items']} sentences")
        for row in rows:
            t.add_row(*table_cells(row))
        tables.append(t)
    return tables


def _print_table(result: dict) -> None:
    """One table per metric on a terminal; long TSV (one header) when stdout is a pipe or a file."""
    from rich.text import Text

    from scoi.jobs.experiment_table import TSV_HEADERS, footnotes, tsv_rows

    if not console.is_terminal:
        print_rows(TSV_HEADERS, tsv_rows(result))
        return
    for t in metric_tables(result):
        console.print(t)
    for note in footnotes(result):
        console.print(Text(printable(note)), highlight=False)  # wrapped to the terminal, never read as markup


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
    name: str = typer.Argument(..., help="Experiment name; rerun with the same options to resume (a new --model "
                                         "adds that model's cells)."),
    model: list[str] = typer.Option([], "--model", "-m",
                                    help="A model to compare, repeatable: a backend spec (hf:DIR, gguf:FILE, "
                                         "openai:MODEL, ...) or LABEL=SPEC; tables name it by LABEL, else by the "
                                         "last part of its path."),
    models: str | None = typer.Option(None, "--models", help="Comma-separated models, as --model (added after them)."),
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
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the table as JSON (keys: docs/jobs.md)."),
    opts: JobOptions = JobOptions(),
) -> None:
    """Queue one job per grid cell (or resume them), translate them, print the tables.

    The grid is models × methods × k × order × template (random: one job per seed). One
    table per metric (BLEU, chrF, COMET with --comet): rows are methods (and k / order /
    template where several are given), a column group per model with the score, its 95%
    bootstrap interval and the paired bootstrap p-value against the same model's baseline
    row (* when p < 0.05). Piped, the table is long TSV. It is stored with the experiment:
    `scoi experiment show NAME` prints it again. Rerunning resumes; a rerun with another
    --model adds it; another grid, direction or input under the same name is refused. The
    jobs never reuse the translation memory (--reuse off): an experiment measures the model.
    """
    from scoi.db.engine import resolve_read_url
    from scoi.jobs.experiment import create_or_resume, run_jobs
    from scoi.jobs.experiment_grid import ExperimentSpec, parse_models
    from scoi.jobs.spec import read_lines, JobError
    from scoi.jobs.store import connect

    try:
        labelled = parse_models(_models(model, models))
        sources, refs = read_lines(input_file), read_lines(references)
    except JobError as e:
        fail(str(e))
    spec = ExperimentSpec(name=name, src=opts.src.lower(), tgt=opts.tgt.lower(), models=labelled,
                          methods=_split(methods, "methods"), ks=_ints(ks, "k"), orders=_split(orders, "orders"),
                          templates=_split(templates, "templates"), baseline=baseline, random_seeds=random_seeds,
                          pool=opts.pool, max_new_tokens=opts.max_new_tokens, backend_options=opts.backend_options(),
                          embedder=opts.embedder, ctq_model=opts.ctq_model)
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
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the table as JSON (keys: docs/jobs.md)."),
) -> None:
    """The experiment's tables, from its jobs' current outputs (scored where missing).

    One table per metric, a column group per model: score (* when p < 0.05 against the
    model's baseline row), 95% bootstrap interval, p-value; long TSV when piped."""
    _report(database_url(), name, comet=comet, samples=samples, partial=partial, json_out=json_out)


@experiment_app.command("plot")
def plot(
    name: str = typer.Argument(..., help="Experiment name."),
    output: Path = typer.Option(..., "--output", "-o", help="Image file to write: .png or .svg."),
    metric: str = typer.Option("bleu", "--metric", help="bleu | chrf | comet: the metric to plot."),
    comet: str | None = typer.Option(None, "--comet", help="COMET checkpoint, to add or refresh COMET scores first."),
    samples: int = typer.Option(defaults.BOOTSTRAP_SAMPLES, "--samples", min=10, max=LIMITS["samples"][1],
                                help="Bootstrap resamples, when the table is computed now."),
    json_out: bool = typer.Option(False, "--json", help="Print {\"file\", \"panels\", \"metric\"} as JSON."),
) -> None:
    """Each method's score with its 95% bootstrap interval, one panel per model (matplotlib).

    Drawn from the table `experiment run` / `show` stored (computed now when there is none,
    or with --comet). The baseline is orange; a filled marker means p < 0.05 against it."""
    from scoi.jobs.eval import METRICS, EvalError
    from scoi.jobs.experiment import get_experiment, results
    from scoi.jobs.plot import PlotError, draw, plot_format
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import connect
    from scoi.outfile import OutputError

    if metric not in METRICS:
        fail(f"--metric {metric!r}: expected one of {', '.join(METRICS)}")
    try:
        plot_format(output)
    except PlotError as e:
        fail(str(e))
    with connect(database_url()) as conn:
        try:
            experiment = get_experiment(conn, name)
            result = experiment.result
            if comet or not result or "metrics" not in result:  # none yet, or one stored before intervals
                result = results(conn, experiment, comet=comet, n_samples=samples)
        except (EvalError, JobError) as e:
            fail(str(e))
    try:
        n = draw(result, output, metric=metric)
    except (PlotError, OutputError) as e:
        fail(str(e))
    if json_out:
        emit_json({"file": str(output), "panels": n, "metric": metric})
    else:
        say(f"wrote {output}: {metric}, {n} panel(s), one per model")


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
    print_rows(["name", "direction", "models", "jobs done", "created", "table computed"],
               [[r["name"], f"{r['src_lang']}-{r['tgt_lang']}", ", ".join(m["label"] for m in r["models"]),
                 f"{r['jobs_done']}/{r['jobs']}",
                 str(r["created_at"])[:19], str(r["result_at"] or "")[:19]] for r in rows])
