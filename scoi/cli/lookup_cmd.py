"""``scoi lookup``: the stored pairs closest to a sentence by match %, as a CAT tool's
translation-memory pane shows them."""

from __future__ import annotations

import typer

from scoi.cli.common import WHERE_HELP, console, database_url, emit_json, fail, given_where, table_cells
from scoi.core import defaults
from scoi.core.limits import LIMITS


def lookup(
    text: str = typer.Argument(..., help="The sentence to look up (source language)."),
    src: str = typer.Option(..., "--src", help="Source language code."),
    tgt: str = typer.Option(..., "--tgt", help="Target language code."),
    min_match: float = typer.Option(defaults.LOOKUP_MIN_MATCH, "--min-match", min=0, max=100,
                                    help="Lowest match % shown. Default 70, the CAT tools' fuzzy-match "
                                    "threshold: below it a stored segment is not a TM match. From 50 on, every "
                                    "stored sentence that can reach it is checked; below 50, only the --pool "
                                    "closest by BM25."),
    n: int = typer.Option(defaults.LOOKUP_N, "-n", "--n", min=1, help="Matches shown at most."),
    pool: int = typer.Option(defaults.LOOKUP_POOL, "--pool", min=1, max=LIMITS["pool"][1],
                             help="Exact BM25 candidates the match % is computed on when --min-match is below "
                                  "50, or when the count filter keeps too many (docs/method.md §8)."),
    corpus: list[str] = typer.Option([], "--corpus", help="Only look in these corpora (repeatable)."),
    where: list[str] = typer.Option([], "--where", help=WHERE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """The stored pairs whose source is closest to TEXT by match % (word-level edit
    distance), best first: source, target, corpus and metadata. Ties: BM25, then pair id."""
    from scoi.lookup import lookup as find
    from scoi.parsers import ParserNotAvailable
    from scoi.selection.selector import SelectionError, Selector

    from scoi.db.engine import resolve_read_url

    url = database_url()
    meta = given_where(where)
    try:
        # bm25: a method that needs no tree, so a memory stored without a parser serves too.
        with Selector(src, tgt, url=url, read_url=resolve_read_url(), corpora=corpus or None, method="bm25",
                      where=meta) as sel:
            result = find(sel, text.strip(), n=n, min_match=min_match, pool=pool)
    except (SelectionError, ValueError, ParserNotAvailable) as e:
        fail(str(e))
    if json_out:
        emit_json(result.to_dict())
        return
    if not result.matches:
        among = ("; --min-match 0 lists the closest anyway" if result.search.get("path") == "count"
                 else f" (among the {pool} closest by BM25)")
        console.print(f"no stored {result.src_lang} sentence matches at {min_match:g}% or more{among}",
                      highlight=False, markup=False)
        return
    from rich.table import Table

    table = Table(title=f"{len(result.matches)} best matches", show_lines=False)
    for col in ("match %", "pair", "corpus", "source", "target"):
        table.add_column(col, overflow="fold")
    for m in result.matches:
        table.add_row(*table_cells([f"{m.match:g}", str(m.pair_id), m.corpus, m.src, m.tgt]))
    console.print(table)
