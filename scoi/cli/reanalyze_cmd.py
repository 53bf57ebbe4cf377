"""``scoi reanalyze``: move stored sentences to the current analysis scheme (migration 0007)."""

from __future__ import annotations

import sys

import typer

from scoi.cli.common import console, database_url, emit_json, fail, rate_bar


def reanalyze(
    lang: list[str] = typer.Option([], "--lang", help="Language to re-analyse (repeatable; default: every "
                                                      "language with sentences on another scheme)."),
    workers: int = typer.Option(1, "--workers", min=0, help="Parser processes (0 = parse in this process)."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1,
                                          help="Sentences per transaction and parse task (default: 512)."),
    parser: list[str] = typer.Option([], "--parser", help="A language's spaCy pipeline: fr=fr_core_news_md."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: one JSON summary object."),
) -> None:
    """Re-parse the stored sentences whose trees were built with another analysis scheme.

    Run after `scoi db upgrade` on a database ingested before trees were built over the
    parser's own tokens (or to move to another pipeline or version). Only the trees'
    terms change; tokens, the BM25 index and pairs are kept. Safe to interrupt and rerun,
    and to run beside an ingest.
    """
    from ingest.reanalyze import DEFAULT_BATCH, ReanalyzeError, ReanalyzeOptions, reanalyze as run
    from scoi.analysis import ParserNotAvailable
    from scoi.config import parse_parser_overrides, parser_overrides_from_env

    try:
        overrides = {**parser_overrides_from_env(), **parse_parser_overrides(parser)}
    except ValueError as e:
        fail(str(e))
    opts = ReanalyzeOptions(langs=lang, workers=workers, batch_size=batch_size or DEFAULT_BATCH, parsers=overrides)
    url = database_url()
    show_bar = not json_out and sys.stdout.isatty()
    try:
        with rate_bar("reanalyze", "sentences", show_bar) as (advance, set_total):
            summary = run(opts, url, progress=advance, on_start=set_total)
    except (ReanalyzeError, ParserNotAvailable) as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted; batches already committed are kept, rerun to continue", code=130)

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
