"""``scoi select`` and ``scoi prompt``: pick examples for sentences, show the prompt."""

from __future__ import annotations

from pathlib import Path

import typer

from scoi.cli.common import (CTQ_MODEL_HELP, EMBEDDER_HELP, METHOD_HELP, ORDER_HELP, PARSER_HELP, RBM25_HELP, WHERE_HELP, Steps,
                             console, database_url, emit_json, err_console, fail, given_where, parser_options, say,
                             table_cells)
from scoi.core import defaults
from scoi.core.criteria import value_of
from scoi.core.limits import LIMITS
from scoi.core.methods import INDEX, REGISTRY

EF_HELP = "fuzzy-ann: HNSW candidates searched per query (pgvector hnsw.ef_search; larger: better recall, slower)."


VERBOSE_HELP = ("Print where the command's time went (imports, server, migration check, spaCy, query) to stderr, "
                "and, with SCOI_READ_DATABASE_URL, where the query read and how far behind the replica was.")

# The options scoi select and scoi prompt share, declared once (typer reads them, never changes them).
SRC = typer.Option(..., "--src", help="Source language code.")
TGT = typer.Option(..., "--tgt", help="Target language code.")
K = typer.Option(defaults.K, "-k", "--k", min=0, max=LIMITS["k"][1], help="Number of examples.")
METHOD = typer.Option(defaults.METHOD, "--method", help=METHOD_HELP)
RBM25_VARIANT = typer.Option(defaults.RBM25_VARIANT, "--rbm25-variant", help=RBM25_HELP)
EMBEDDER = typer.Option(None, "--embedder", help=EMBEDDER_HELP)
CTQ_MODEL = typer.Option(None, "--ctq-model", help=CTQ_MODEL_HELP)
WHERE = typer.Option([], "--where", help=WHERE_HELP)
POOL = typer.Option(defaults.POOL, "--pool", min=1, max=LIMITS["pool"][1], help="Candidates preselected by BM25.")
MIN_MATCH_HELP = ("Keep only candidates whose match % (word-level edit-distance similarity, docs/method.md) is at "
                  "least this, for every method; fewer than k examples when too few qualify (the output says so).")
GLOSSARY = typer.Option(None, "--glossary", help="A glossary's name (scoi glossary list): show the terms found in "
                                                 "the sentence (docs/glossary.md).")


def _glossary_terms(name: str | None, src: str, tgt: str, texts: list[str]) -> list[list[dict]] | None:
    """The glossary terms found in each text (``{src, tgt, note}``), or None without a glossary."""
    if name is None:
        return None
    from scoi.glossary import GlossaryError, entries, match
    from scoi.jobs.store import connect

    try:
        with connect(database_url()) as conn:
            found = entries(conn, name, src.lower(), tgt.lower())
    except GlossaryError as e:
        fail(str(e))
    return [[m.to_dict() for m in ms] for ms in match(found, texts, src.lower())]


def open_selector(src: str, tgt: str, k: int, method: str, pool: int, similarity: str, word_overlap: str,
                  fill: str, seed: int, corpus: list[str], steps: Steps, rbm25_variant: str = defaults.RBM25_VARIANT,
                  embedder: str | None = None, ef_search: int = defaults.EF_SEARCH, parser: list[str] | None = None,
                  where: list[str] | None = None, min_match: float | None = None, ctq_model: str | None = None):
    """A Selector warmed up (its parser, Moses tables and model loaded), each start-up step
    timed in ``steps``; one line and exit 1 when it cannot be built."""
    from scoi.db.engine import resolve_read_url
    from scoi.embedding.embedder import EmbedderError
    from scoi.embedding.embeddings import EmbeddingError
    from scoi.parsers import ParserNotAvailable
    from scoi.selection.selector import SelectionError, Selector

    steps.step("imports")
    url = database_url(steps)
    try:
        # Reads from SCOI_READ_DATABASE_URL's replica when set; --record writes to the primary.
        sel = Selector(src, tgt, url=url, read_url=resolve_read_url(), corpora=corpus or None, k=k, method=method,
                       pool=pool, similarity=similarity, word_overlap=word_overlap, fill=fill, seed=seed,
                       rbm25_variant=rbm25_variant, embedder=embedder, ef_search=ef_search,
                       parser=parser_options(parser or []).get(src.lower()), where=given_where(where or []),
                       min_match=min_match, ctq_model=ctq_model)
        steps.step("selector set-up (SQL)")
        sel.warm(step=steps.step)  # what the first query would load anyway, step by step to time it
    except (SelectionError, ValueError, ParserNotAvailable, EmbedderError, EmbeddingError) as e:
        fail(str(e))
    return sel


def _refuse_blank(text: str) -> None:
    """One line and exit 1 for a blank sentence (the Selector refuses it too), before any
    parser or database is loaded."""
    if not text.strip():
        fail("the sentence to select examples for is blank (empty or only whitespace); give a sentence")


def _query_steps(steps: Steps, result) -> None:
    """The query's parts, as the selector timed them (the parse overlaps the SQL)."""
    steps.step("query")
    t = result.timings_ms
    steps.part("  query analysis", t["analyze"])
    steps.part("  preselection + fetch", t["pool"])
    steps.part("  coverage", t["coverage"])


def select(
    text: str | None = typer.Argument(None, help="Sentence to translate (source language)."),
    src: str = SRC,
    tgt: str = TGT,
    k: int = K,
    method: str = METHOD,
    rbm25_variant: str = RBM25_VARIANT,
    embedder: str | None = EMBEDDER,
    ctq_model: str | None = CTQ_MODEL,
    ef_search: int = typer.Option(defaults.EF_SEARCH, "--ef-search", min=1, max=LIMITS["ef_search"][1],
                                  help=EF_HELP),
    parser: list[str] = typer.Option([], "--parser", help=PARSER_HELP + " The source's must be the one its "
                                                                        "stored sentences were parsed with."),
    pool: int = POOL,
    min_match: float | None = typer.Option(None, "--min-match", min=0, max=100, help=MIN_MATCH_HELP),
    similarity: str = typer.Option(defaults.SIMILARITY, "--similarity", help="Term similarity: distance | cosine."),
    word_overlap: str = typer.Option(defaults.WORD_OVERLAP, "--word-overlap", help="Word coverage: set | multiset."),
    fill: str = typer.Option(defaults.FILL, "--fill", help="With fewer than k candidates: none | random."),
    seed: int = typer.Option(defaults.SEED, "--seed", min=LIMITS["seed"][0], max=LIMITS["seed"][1],
                             help="Seed for random selection and fills."),
    corpus: list[str] = typer.Option([], "--corpus", help="Only use these corpora (repeatable)."),
    where: list[str] = WHERE,
    file: Path | None = typer.Option(None, "--file", help="One query per line; one JSON object per query."),
    record: bool = typer.Option(False, "--record", help="Store the selection for inspection in SQL."),
    explain: bool = typer.Option(False, "--explain", help="JSON candidates as objects with score and text."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    show_sql: bool = typer.Option(False, "--sql", help="Print the SQL statements that preselect and fetch the candidates, and their parameters; run nothing else."),
    glossary: str | None = GLOSSARY,
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP),
) -> None:
    """Select the k examples that best cover a sentence (SCOI), from the database."""
    steps = Steps()
    if (text is None) == (file is None):
        fail("give either a TEXT argument or --file FILE")
    if text is not None:
        _refuse_blank(text)
    queries: list[str] = []
    if file is not None:
        from scoi.text.textfile import TextFileError, read_lines

        try:  # every line checked before the first query runs (or is recorded)
            queries = [line.strip() for line in read_lines(file)]
        except TextFileError as e:
            fail(str(e))
    sel = open_selector(src, tgt, k, method, pool, similarity, word_overlap, fill, seed, corpus, steps, rbm25_variant,
                    embedder, ef_search, parser, where, min_match, ctq_model)
    if show_sql and REGISTRY[method].candidates == INDEX:  # the HNSW search, not a BM25 pool
        from scoi.embedding.embeddings import ann_sql

        console.print(ann_sql(sel.reader, sel.embeddings.row(sel.reader)), highlight=False, markup=False)
        return
    if show_sql:
        from scoi.selection.preselector import depth

        tokens, _ = sel.query.analyze(text or "")
        console.print(sel.engine.statements(), highlight=False, markup=False)
        console.print("-- parameters:", sel.engine.params(tokens, depth(pool)), highlight=False, markup=False)
        return
    if file is not None:
        lines = [query for query in queries if query]  # read and checked once, above
        terms = _glossary_terms(glossary, src, tgt, lines) or [None] * len(lines)
        for out, found in zip(sel.select_many(lines, record=record), terms):  # parsed and preselected in batches
            out = out.to_dict(explain=explain)
            emit_json(out if found is None else {**out, "glossary": found})
        if verbose:
            steps.step("queries")
            steps.print()
        return
    result = sel.select(text, record=record)
    _query_steps(steps, result)
    terms = _glossary_terms(glossary, src, tgt, [text])
    if json_out:
        emit_json(result.to_dict(explain=explain) | ({"glossary": terms[0]} if terms is not None else {}))
    else:
        _print_result(result)
        if terms is not None:
            say("glossary terms: " + ("; ".join(f"{t['src']} \u2192 {t['tgt']}" for t in terms[0]) or "none"))
    if verbose:
        steps.step("output")
        steps.print()
        _print_read(result)


def _print_read(result) -> None:
    """With a replica configured: where the query read, and the replica's position (stderr)."""
    if result.read is not None:
        err_console.print(result.read.describe(), highlight=False, markup=False, soft_wrap=True)  # one line, whatever the width


def _print_result(result) -> None:
    from rich.table import Table

    table = Table(title=f"{result.method}: {len(result.selected)} of {len(result.candidates)} candidates",
                  show_lines=False)
    for col in ("#", "criterion", "value", "match %", "pair", "source", "target"):
        table.add_column(col, overflow="fold")
    for i, p in enumerate(result.selected, 1):
        named = value_of(p.criterion, p.coverage)  # what the number is: coverage, residual, distance, ...
        cov = "" if named is None else f"{named['kind'].replace('_', ' ')} {p.coverage:.3f}"
        match = "" if p.match is None else f"{p.match:g}"
        table.add_row(*table_cells([str(i), p.criterion, cov, match, str(p.pair_id), p.src, p.tgt]))
    console.print(table)
    if result.notice:
        console.print(result.notice, highlight=False, markup=False)
    t = result.timings_ms
    console.print(f"preselection + fetch {t['pool']:.1f} ms, coverage {t['coverage']:.1f} ms"
                  + (f"; recorded as selection {result.selection_id}" if result.selection_id else ""),
                  highlight=False)


def prompt(
    text: str = typer.Argument(..., help="Sentence to translate (source language)."),
    src: str = SRC,
    tgt: str = TGT,
    k: int = K,
    method: str = METHOD,
    rbm25_variant: str = RBM25_VARIANT,
    embedder: str | None = EMBEDDER,
    ctq_model: str | None = CTQ_MODEL,
    template: str = typer.Option(defaults.TEMPLATE, "--template", help="xglm | alpaca | path to a Jinja2 template."),
    order: str = typer.Option(defaults.ORDER, "--order", help=ORDER_HELP),
    pool: int = POOL,
    seed: int = typer.Option(defaults.SEED, "--seed", min=LIMITS["seed"][0], max=LIMITS["seed"][1],
                             help="Seed for random selection and order."),
    corpus: list[str] = typer.Option([], "--corpus", help="Only use these corpora (repeatable)."),
    where: list[str] = WHERE,
    min_match: float | None = typer.Option(None, "--min-match", min=0, max=100, help=MIN_MATCH_HELP),
    glossary: str | None = typer.Option(None, "--glossary", help="A glossary's name: its terms found in TEXT go into "
                                                                 "the prompt (docs/glossary.md)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP),
) -> None:
    """Print the prompt that would be sent to the LLM for TEXT."""
    from scoi.core.prompt import Example, render_prompt

    _refuse_blank(text)
    steps = Steps()
    sel = open_selector(src, tgt, k, method, pool, defaults.SIMILARITY, defaults.WORD_OVERLAP, defaults.FILL, seed, corpus,
                    steps, rbm25_variant, embedder, where=where, min_match=min_match, ctq_model=ctq_model)
    result = sel.select(text)
    _query_steps(steps, result)
    terms = _glossary_terms(glossary, src, tgt, [text])
    try:
        out = render_prompt(text, [Example(p.src, p.tgt) for p in result.selected], sel.src, sel.tgt,
                            template=template, order=order, seed=seed, glossary=terms[0] if terms else ())
    except ValueError as e:
        fail(str(e))
    typer.echo(out, nl=False)
    typer.echo()
    if verbose:
        steps.step("prompt + output")
        steps.print()
        _print_read(result)
