"""``scoi reanalyze``: move stored sentences to the current analysis scheme (migration 0007)."""

from __future__ import annotations

import sys

import typer

from scoi.cli.common import PARSER_HELP, console, database_url, emit_json, parser_options, run_batches
from scoi.core.limits import LIMITS


def reanalyze(
    lang: list[str] = typer.Option([], "--lang", help="Language to re-analyse (repeatable; default: every "
                                                      "language with sentences on another scheme)."),
    workers: int = typer.Option(1, "--workers", min=0, max=LIMITS["workers"][1],
                                help="Parser processes (0 = parse in this process)."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, max=LIMITS["batch_size"][1],
                                          help="Sentences per transaction and parse task (default: 512)."),
    parser: list[str] = typer.Option([], "--parser", help=PARSER_HELP),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: one JSON summary object."),
) -> None:
    """Re-parse the stored sentences whose trees were built with another analysis scheme.

    Run after `scoi db upgrade` on a database ingested before trees were built over the
    parser's own tokens, to add trees to a language stored without (`scoi ingest --no-trees`,
    or no parser installed at ingest), or to move to another pipeline or version. Only the trees'
    terms change; tokens, the BM25 index and pairs are kept. Safe to interrupt and rerun,
    and to run beside an ingest.
    """
    from ingest.reanalyze import DEFAULT_BATCH, ReanalyzeError, ReanalyzeOptions, reanalyze as run
    from scoi.parsers import ParserNotAvailable

    opts = ReanalyzeOptions(langs=lang, workers=workers, batch_size=batch_size or DEFAULT_BATCH,
                            parsers=parser_options(parser))
    url = database_url()
    summary = run_batches("reanalyze", "sentences", not json_out and sys.stdout.isatty(),
                          (ReanalyzeError, ParserNotAvailable),
                          lambda advance, set_total: run(opts, url, progress=advance, on_start=set_total))

    if json_out:
        emit_json(__import__("json").loads(summary.to_json()))
        return
    for note in summary.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    if not summary.todo:
        console.print("nothing to re-analyse: every stored sentence is on the current analysis scheme",
                      highlight=False, soft_wrap=True, markup=False)
        return
    for lg, n in summary.todo.items():
        console.print(f"{lg}: {n} sentences to {summary.schemes[lg]}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"{summary.reanalyzed} sentences re-analysed ({summary.skipped} already moved by another run) "
                  f"in {summary.seconds:.1f}s", highlight=False, soft_wrap=True, markup=False)
