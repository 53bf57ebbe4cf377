"""``scoi gaps``: what the translation memory lacks for a job, a schedule or a file of sentences."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import METHOD_HELP, Steps, console, database_url, emit_json, fail, print_rows, rate_bar
from scoi.core import defaults


def gaps(
    job: list[str] = typer.Option([], "--job", help="A job id or name (repeatable): its recorded selections."),
    schedule: str | None = typer.Option(None, "--schedule", help="A schedule's name: every job its runs grew."),
    file: Path | None = typer.Option(None, "--file", help="Sentences, one per line, selected now (nothing stored)."),
    src: str | None = typer.Option(None, "--src", help="With --file: source language code."),
    tgt: str | None = typer.Option(None, "--tgt", help="With --file: target language code."),
    method: str = typer.Option(defaults.METHOD, "--method", help="With --file: " + METHOD_HELP),
    k: int = typer.Option(defaults.K, "-k", "--k", min=0, help="With --file: examples per sentence."),
    limit: int = typer.Option(defaults.GAPS_LIMIT, "--limit", min=1, help="Rows per kind (words, terms)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Words and tree terms that no selected example covers and no pool example contains,
    ranked by how many sentences lack them: what your memory lacks."""
    from scoi.gaps import GapError, job_gaps, schedule_gaps, sentence_gaps
    from scoi.jobs.spec import read_lines, JobError
    from scoi.jobs.store import connect

    if sum([bool(job), schedule is not None, file is not None]) != 1:
        fail("give one of --job JOB (repeatable), --schedule NAME or --file FILE")
    if file is not None and (src is None or tgt is None):
        fail("--file needs --src and --tgt")
    if file is None and (src or tgt):
        fail("--src and --tgt go with --file (a job knows its languages)")
    url = database_url()
    try:
        if file is not None:
            from scoi.cli.select_cmd import open_selector

            sentences = read_lines(file)
            sel = open_selector(src, tgt, k, method, defaults.POOL, defaults.SIMILARITY, defaults.WORD_OVERLAP,
                            defaults.FILL, defaults.SEED, [], Steps())
            with sel, rate_bar("gaps", "sentences", not json_out and sys.stdout.isatty()) as (advance, set_total):
                if set_total is not None:
                    set_total(sum(1 for s in sentences if s.strip()))
                report = sentence_gaps(sel, sentences, scope=str(file), k=k, method=method, limit=limit,
                                       progress=advance)
        else:
            with connect(url) as conn:
                report = schedule_gaps(conn, schedule, limit) if schedule else job_gaps(conn, job, limit)
    except (GapError, JobError, ValueError) as e:
        fail(str(e))
    if json_out:
        emit_json(report.to_dict())
        return
    console.print(f"gaps of {report.scope}: {report.selections} sentences", highlight=False, markup=False)
    for kind, rows in (("words", report.words), ("tree terms", report.terms)):
        console.print(f"\n{kind} no example covers and no pool holds ({len(rows)} shown):", highlight=False,
                      markup=False)
        if not rows:
            console.print("  none", highlight=False, markup=False)
            continue
        print_rows([kind[:-1], "sentences", "occurrences", "in memory", "example sentence"],
                   [[r["unit"], str(r["sentences"]), str(r["occurrences"]), "yes" if r["in_memory"] else "no",
                     r["example"][:80]] for r in rows])
