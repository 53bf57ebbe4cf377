"""``scoi corpora`` (the listing, ``export`` and ``rm``) and ``scoi pairs rm``: writing out and
deleting what was ingested.

Each delete is one transaction (ingest/delete.py): all of it or nothing, even under
``kill -9``, seen whole by the next query, and safe to rerun.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from scoi.cli import ingest_cmd
from scoi.cli.common import console, database_url, emit_json, fail, rate_bar

if TYPE_CHECKING:
    from ingest.delete import DeleteSummary

corpora_app = typer.Typer(help="List corpora (no command), write one out (`export`), or delete one (`rm`).",
                          invoke_without_command=True)
pairs_app = typer.Typer(help="Delete pairs by id, by the file they came from, or by metadata.", no_args_is_help=True)


@corpora_app.callback()
def corpora(ctx: typer.Context,
            json_out: bool = typer.Option(False, "--json", help="Print a JSON array (of corpora; with "
                                                                "--languages, of languages)."),
            languages: bool = typer.Option(False, "--languages",
                                           help="Only the languages: sentences with and without trees, by parser.")
            ) -> None:
    """List corpora with their pair counts, then per language how many sentences have
    dependency trees and from which parser (methods such as scoi need the source's trees).
    `scoi corpora rm NAME` deletes one."""
    if ctx.invoked_subcommand is None:
        ingest_cmd.corpora(json_out=json_out, languages=languages)


@corpora_app.command("rm")
def corpora_rm(name: str = typer.Argument(..., help="The corpus to delete (as `scoi corpora` lists it)."),
               yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
               dry_run: bool = typer.Option(False, "--dry-run", help="Count what would go, delete nothing."),
               json_out: bool = typer.Option(False, "--json", help="Print one JSON object: pairs and sentences "
                                                                   "deleted.")) -> None:
    """Delete a corpus: its pairs, the sentences no other corpus uses (with their BM25
    index entries: the index stays exact), its ingest runs, and the corpus itself.

    One transaction; recorded selections keep their rows, their link to a deleted pair
    becomes empty. Refused while an ingest into the corpus runs.
    """
    from ingest.delete import remove_corpus

    _delete(lambda conn, dry: remove_corpus(conn, name, dry_run=dry), f"corpus {name}", yes, dry_run, json_out)


@corpora_app.command("export")
def corpora_export(name: str = typer.Argument(..., help="The corpus to write (as `scoi corpora` lists it)."),
                   fmt: str = typer.Option("tmx", "--format", "-f",
                                           help="tmx (TMX 1.4b) | jsonl | tsv (header, metadata as "
                                                "columns), each what `scoi ingest` reads back."),
                   output: str = typer.Option(..., "--output", "-o",
                                              help="The file to write (replaced atomically at the end), "
                                                   "or - for stdout."),
                   src: str | None = typer.Option(None, "--src", help="The language written as the source "
                                                                      "(TMX srclang); default: the corpus's."),
                   tgt: str | None = typer.Option(None, "--tgt", help="The other language (default: the "
                                                                      "corpus's other one)."),
                   json_out: bool = typer.Option(False, "--json", help="With -o FILE: print one JSON object "
                                                                       "(pairs, output, format).")) -> None:
    """Write a corpus's pairs with their metadata (pair.meta) as TMX 1.4b, JSON lines or TSV,
    so that `scoi ingest` of the file gives the same pairs and the same metadata.

    Streamed: a corpus of any size stays out of memory. A pair holds both directions:
    --src en writes an fr-en corpus as en→fr. Metadata TMX cannot hold exactly go into
    one <prop type="x-scoi-json"> (docs/ingest.md, "Export")."""
    from scoi.corpora_export import CORPUS_EXPORT_FORMATS, ExportError, corpus_for_export, export_to_path, \
        write_corpus
    from scoi.db import connect

    if fmt not in CORPUS_EXPORT_FORMATS:
        fail(f"unknown format {fmt!r}; expected one of {', '.join(CORPUS_EXPORT_FORMATS)}", 2)
    to_stdout = output == "-"
    try:
        with connect(database_url()) as conn:
            corpus = corpus_for_export(conn, name, src, tgt)
            if to_stdout:
                n = write_corpus(conn, corpus, fmt, sys.stdout.buffer)
                sys.stdout.flush()
                return
            with rate_bar("exporting", "pairs", not json_out and sys.stdout.isatty()) as (advance, set_total):
                if set_total:
                    set_total(corpus["pairs"])
                n = export_to_path(conn, corpus, fmt, Path(output), advance)
    except ExportError as e:
        fail(str(e))
    if json_out:
        emit_json({"corpus": name, "pairs": n, "output": output, "format": fmt,
                   "src_lang": corpus["src_lang"], "tgt_lang": corpus["tgt_lang"]})
    else:
        console.print(f"{n} pairs of {name} ({corpus['src_lang']}→{corpus['tgt_lang']}) written to {output}",
                      highlight=False, soft_wrap=True, markup=False)


@pairs_app.command("rm")
def pairs_rm(ids: list[int] = typer.Option([], "--id", help="A pair id (repeatable), as `scoi select` and the "
                                                            "recorded selections give them."),
             file: str | None = typer.Option(None, "--file", help="The pairs the ingests of this file inserted."),
             where: list[str] = typer.Option([], "--where", metavar="KEY=VALUE",
                                             help="The pairs whose metadata (pair.meta) hold KEY = VALUE, or "
                                                  "VALUE in a list (repeatable: all must hold)."),
             corpus: str | None = typer.Option(None, "--corpus", help="Only pairs of this corpus."),
             yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
             dry_run: bool = typer.Option(False, "--dry-run", help="Count what would go, delete nothing."),
             json_out: bool = typer.Option(False, "--json", help="Print one JSON object: pairs and sentences "
                                                                 "deleted, ids that named no pair.")) -> None:
    """Delete pairs, and the sentences no other pair uses (with their BM25 index entries:
    the index stays exact). Name them one way: --id, --file or --where.

    One transaction; deleting pairs already gone deletes nothing.
    """
    from ingest.delete import remove_pairs

    given = [flag for flag, v in (("--id", ids), ("--file", file), ("--where", where)) if v]
    if len(given) != 1:
        fail("name the pairs one way: --id N (repeatable), --file PATH or --where KEY=VALUE"
             + (f" (given: {', '.join(given)})" if given else ""), 2)
    if ids and corpus:
        fail("--corpus goes with --file or --where (a pair id names one pair already)", 2)
    conditions = {}
    for item in where:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--where {item!r}: expected KEY=VALUE, e.g. --where client=acme", 2)
        conditions[key.strip()] = value
    what = (f"pairs {', '.join(map(str, ids))}" if ids else f"the pairs of {file}" if file
            else "the pairs with " + ", ".join(where))
    _delete(lambda conn, dry: remove_pairs(conn, ids=ids or None, file=file, where=conditions or None,
                                           corpus=corpus, dry_run=dry), what, yes, dry_run, json_out)


def _delete(run: Callable[..., DeleteSummary], what: str, yes: bool, dry_run: bool, json_out: bool) -> None:
    """Count (a rolled-back run), ask unless --yes, delete, refresh statistics, report."""
    from ingest.delete import DeleteError
    from ingest.runs import vacuum_analyze
    from scoi.db import connect

    url = database_url()
    try:
        with connect(url) as conn:
            if not (yes or dry_run):
                if not sys.stdin.isatty():
                    fail(f"deleting {what} needs --yes when not run from a terminal (or --dry-run to count)", 2)
                counted = run(conn, True)
                if not typer.confirm(f"delete {what}: {counted.pairs} pairs, {counted.sentences} sentences?"):
                    raise typer.Exit(1)
            with console.status(f"deleting {what}...") if not json_out and sys.stdout.isatty() else nullcontext():
                summary = run(conn, dry_run)
            if summary.pairs and not dry_run:
                conn.autocommit = True  # VACUUM: the rewritten posting blocks leave dead row versions
                vacuum_analyze(conn)
    except DeleteError as e:
        fail(str(e))
    if json_out:
        emit_json({**summary.to_dict(), "dry_run": dry_run})
        return
    verb = "would delete" if dry_run else "deleted"
    console.print(f"{verb} {summary.pairs} pairs and {summary.sentences} sentences no other pair uses",
                  highlight=False, soft_wrap=True, markup=False)
    if summary.missing_ids:
        console.print(f"note: no pair {', '.join(map(str, summary.missing_ids))} (already deleted, or never stored)",
                      highlight=False, soft_wrap=True, markup=False)

