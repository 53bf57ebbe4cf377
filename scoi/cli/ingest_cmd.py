"""``scoi ingest``, ``scoi corpora`` and ``scoi ingest-runs``."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import (PARSER_HELP, console, database_url, emit_json, given_parsers, parser_options, print_rows,
                             run_batches)
from scoi.core import defaults
from scoi.core.limits import LIMITS


def ingest(
    file: Path = typer.Argument(..., help="Corpus file (TSV, TMX, JSONL, XLIFF, PO with translations), or the source file of a Moses pair."),
    file2: Path | None = typer.Argument(None, help="Target file of a Moses pair (aligned line by line)."),
    src: str = typer.Option(..., "--src", help="Source language code, e.g. fr."),
    tgt: str = typer.Option(..., "--tgt", help="Target language code, e.g. en."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name (default: from the file name)."),
    fmt: str | None = typer.Option(None, "--format", help="tsv | moses | tmx | jsonl | xliff | po (default: guessed)."),
    workers: int = typer.Option(1, "--workers", min=0, max=LIMITS["workers"][1],
                                help="Parser processes (0 = parse in this process)."),
    parser: list[str] = typer.Option([], "--parser", help=PARSER_HELP),
    require_parser: bool = typer.Option(False, "--require-parser",
                                        help="Refuse a language without a parser (default: store it without "
                                             "trees; `scoi reanalyze --lang L` adds them later)."),
    no_trees: bool = typer.Option(False, "--no-trees",
                                  help="Tokens and the BM25 index only, no dependency trees (several times "
                                       "faster): bm25, rbm25, fuzzy, lookup and reuse work at once, the tree "
                                       "methods once `scoi reanalyze --lang L` has added the trees."),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip and list bad rows instead of stopping."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, max=LIMITS["batch_size"][1],
                                          help="Pairs per transaction, parsed as 4 tasks (default: 2048)."),
    header: bool | None = typer.Option(None, "--header/--no-header",
                                       help="TSV: the first line is a header / is a pair (default: detected, see docs/ingest.md)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Always print notes (which spaCy pipeline parses each language), even when nothing was parsed."),
    embed: str | None = typer.Option(None, "--embed", metavar="MODEL",
                                     help="Then embed both languages' sentences that have no embedding by this "
                                          "sentence-transformers model (as `scoi embed --model MODEL`; for "
                                          "--method fuzzy / fuzzy-ann)."),
    tmx_keep_codes: bool = typer.Option(False, "--tmx-keep-codes",
                                        help="TMX: keep the inline codes' content (<bpt>&lt;b&gt;</bpt>, <ph>...) "
                                             "in the text (default: dropped, their text kept)."),
    on_conflict: str | None = typer.Option(
        None, "--on-conflict", metavar="add|replace|keep",
        help="A source the corpus already holds (from an earlier run) with another target: add the new pair "
             "beside the old, replace the old pair(s), or keep the old and skip the new (default: replace for "
             "TMX, a memory re-exported after corrections; add for TSV, Moses and JSONL corpora)."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: one JSON summary object."),
) -> None:
    """Load a parallel corpus: pairs, Moses tokens, polynomial terms and the BM25 index.

    With --no-trees: no parsing and no terms (a big memory loads several times faster);
    `scoi reanalyze` adds the trees later. Safe to rerun (already-stored pairs are skipped) and to run concurrently.
    """
    from ingest.options import IngestError, IngestOptions
    from ingest.pipeline import ingest_files
    from ingest.records import InputError
    from scoi.embedding.embedder import EmbedderError
    from scoi.embedding.embeddings import EmbeddingError
    from scoi.parsers import ParserNotAvailable

    files = [str(file)] + ([str(file2)] if file2 else [])
    # --no-trees parses nothing: only a --parser given here contradicts it, not SCOI_PARSERS
    overrides = given_parsers(parser) if no_trees else parser_options(parser)
    opts = IngestOptions(files=files, src=src, tgt=tgt, corpus=corpus, fmt=fmt, workers=workers,
                         skip_bad=skip_bad, header=header, parsers=overrides, require_parser=require_parser,
                         embed=embed, tmx_keep_codes=tmx_keep_codes, on_conflict=on_conflict, no_trees=no_trees)
    if batch_size:
        opts.batch_size = batch_size
    url = database_url()
    summary = run_batches("ingest", "pairs", not json_out and sys.stdout.isatty(),
                          (InputError, IngestError, ParserNotAvailable, EmbedderError, EmbeddingError),
                          lambda advance, set_total: ingest_files(opts, url, progress=advance, on_start=set_total))

    if json_out:
        emit_json(__import__("json").loads(summary.to_json()))
        return
    console.print(f"corpus {summary.corpus}: {summary.inserted} pairs inserted, {summary.duplicates} duplicates, "
                  f"{summary.rejected} rejected ({summary.read} read in {summary.seconds:.1f}s, "
                  f"{_rate(summary.pairs_per_second)} pairs/s)", highlight=False, soft_wrap=True, markup=False)
    if summary.replaced or summary.kept_out:
        console.print(f"--on-conflict {summary.on_conflict}: " + (
            f"{summary.replaced} earlier pairs of the same sources replaced ({summary.removed_sentences} sentences "
            "no other pair used deleted)" if summary.on_conflict == "replace"
            else f"{summary.kept_out} pairs not added: their source has another target in the corpus"),
            highlight=False, soft_wrap=True, markup=False)
    for warning in summary.warnings:
        console.print(f"note: {warning}", highlight=False, soft_wrap=True, markup=False)
    if summary.embedder:
        console.print(f"{summary.embedded} sentences embedded with {summary.embedder}",
                      highlight=False, soft_wrap=True, markup=False)
    # Which pipeline parsed (a fallback from the default): only when something was parsed.
    for note in summary.notes if verbose or summary.parsed_sentences else ():
        console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    for r in summary.rejected_rows[:50]:
        console.print(f"  skipped {r.file}:{r.line}: {r.reason}", highlight=False, soft_wrap=True, markup=False)
    if len(summary.rejected_rows) > 50:
        console.print(f"  ... and {len(summary.rejected_rows) - 50} more (see table rejected_row, run {summary.run_id})",
                      highlight=False, soft_wrap=True, markup=False)


def _rate(per_second: float) -> str:
    """A rate people can read: whole numbers from 10 up, two significant digits below
    (a 3-pair ingest of 5 s is 0.6 pairs/s, not 0)."""
    return f"{per_second:.0f}" if per_second >= 10 or per_second == 0 else f"{per_second:.2g}"


def corpora(json_out: bool = typer.Option(False, "--json", help="Print a JSON array (of corpora; with "
                                                                    "--languages, of languages)."),
            languages: bool = typer.Option(False, "--languages",
                                           help="Only the languages: sentences with and without trees, by parser.")
            ) -> None:
    """List corpora with their pair counts, then per language how many sentences have
    dependency trees and from which parser (methods such as scoi need the source's trees)."""
    from scoi.corpora import language_trees, list_corpora
    from scoi.db import connect

    with connect(database_url()) as conn:
        rows = [] if languages else list_corpora(conn)
        langs = language_trees(conn)
    if json_out:
        emit_json(langs if languages else rows)
        return
    if not languages:
        if not rows:
            console.print("no corpora yet: load one with `scoi ingest FILE --src fr --tgt en`")
            return
        print_rows(["corpus", "direction", "pairs", "eligible", "runs", "last ingest"],
                   [[r["name"], f"{r['src_lang']}-{r['tgt_lang']}", str(r["pairs"]), str(r["both_sides_eligible"]),
                     str(r["runs"]), str(r["last_ingest"] or "")[:19]] for r in rows])
        console.print()
    print_rows(["language", "sentences", "with trees", "parser"], _language_rows(langs))


def _language_rows(rows: list[dict]) -> list[list[str]]:
    """One line per language and scheme: sentences, how many have trees, the parser."""
    from scoi.parsers import Scheme

    out = []
    for r in rows:
        scheme = Scheme(r["parser"], r["version"], r["tree_tokens"])
        trees = r["sentences"] if scheme.has_trees else 0
        parser = str(scheme) if scheme.has_trees else f"none (add trees: scoi reanalyze --lang {r['lang']})"
        out.append([r["lang"], str(r["sentences"]), str(trees), parser])
    return out


def ingest_runs(corpus: str | None = typer.Option(None, "--corpus", help="Only the runs of this corpus."),
                limit: int = typer.Option(defaults.INGEST_RUNS_SHOWN, "--limit", min=1, max=LIMITS["limit"][1],
                                          help="How many runs, newest first."),
                json_out: bool = typer.Option(False, "--json", help="Print a JSON array.")) -> None:
    """List recent ingest runs: running, done, failed, or dead (its process is gone, e.g. killed)."""
    from ingest.runs import list_runs
    from scoi.db import connect

    with connect(database_url()) as conn:
        rows = list_runs(conn, corpus, limit)
    if json_out:
        emit_json(rows)
        return
    if not rows:
        console.print("no ingest runs yet")
        return
    print_rows(["run", "corpus", "state", "started", "read", "inserted", "duplicates", "rejected", "host:pid", "error"],
               [[str(r["run_id"]), r["corpus"], r["state"], str(r["started_at"])[:19], str(r["pairs_read"]),
                 str(r["inserted"]), str(r["duplicates"]), str(r["rejected"]), f"{r['host']}:{r['pid']}",
                 (r["error"] or "")[:200]] for r in rows])
