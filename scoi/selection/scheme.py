"""Which analysis scheme queries are parsed with: exactly the stored sentences' (their terms
are comparable only within one scheme), checked before anything is parsed, with the
command that fixes each refusal."""

from __future__ import annotations

from typing import Any

import psycopg

from scoi.core import methods
from scoi.db.queries import load
from scoi.parsers import NO_TREES, Scheme, add_trees_hint, choose_parser, parser_name, parser_version
from scoi.selection.types import SelectionError

SQL = load("select")


def direction_exists(conn: psycopg.Connection, src: str, tgt: str) -> bool:
    """Whether some corpus holds src-tgt pairs (in either direction: one ingest serves both)."""
    return conn.execute(SQL["direction_exists"], {"lang": src.lower(), "tgt": tgt.lower()}).fetchone()[0] > 0


def trees_missing(conn: psycopg.Connection, src: str, method: str) -> str | None:
    """Why ``method`` cannot run with source ``src`` for lack of trees (some of its stored
    sentences have none: no parser at ingest), or None: checked when a job is submitted."""
    if not methods.method(method).trees:
        return None
    if not any(r[3] == "none" for r in conn.execute(SQL["lang_schemes"], {"lang": src.lower()}).fetchall()):
        return None
    return (f"method {method} needs dependency trees of the {src} sentences, which were stored without (ingested "
            f"with --no-trees, or with no {src} parser installed); {add_trees_hint(src)}")


def no_trees(conn: psycopg.Connection, src: str, method: str) -> str:
    """Why ``method`` cannot run on a source stored without trees, and the fix."""
    return trees_missing(conn, src, method) or (
        f"method {method} needs dependency trees of the {src} sentences: scoi reanalyze --lang {src}")


def scheme_rows(conn: psycopg.Connection, src: str) -> list[Any]:
    """The parser rows the stored ``src`` sentences use (one index probe per row, ~0.07 ms)."""
    return conn.execute(SQL["lang_schemes"], {"lang": src}).fetchall()


def labels(conn: psycopg.Connection, parser_id: int | None) -> list[str]:
    """The label inventory of a parser row, in index order."""
    return [r[0] for r in conn.execute(SQL["labels_for_lang"], {"parser_id": parser_id}).fetchall()]


def stored_scheme(conn: psycopg.Connection, src: str, override: str | None, method: str
                  ) -> tuple[Scheme, int | None]:
    """The analysis scheme of the source language's stored sentences and its parser row.

    Mixed or old ('moses') schemes, another pipeline or another installed version are
    refused. A method that reads no tree (its registry entry's ``trees`` is false) runs
    whatever the trees are, without parsing the query when the stored scheme cannot be
    used (``NO_TREES``)."""
    rows = scheme_rows(conn, src)
    treeless = not methods.method(method).trees
    if not rows:  # nothing stored yet (empty corpora): the parser ingest would use
        return choose_parser(src, override, required=not treeless).scheme, None
    try:
        return check_schemes(conn, src, rows, override, method)
    except SelectionError:
        if treeless:
            return NO_TREES, None
        raise


def check_schemes(conn: psycopg.Connection, src: str, rows: list[Any], override: str | None, method: str
                  ) -> tuple[Scheme, int | None]:
    """:func:`stored_scheme`'s checks: exactly one usable scheme, or SelectionError."""
    fix = f"scoi reanalyze --lang {src}"
    schemes = [Scheme(name, version, tree_tokens) for _, name, version, tree_tokens in rows]
    if len(schemes) > 1:
        raise SelectionError(
            f"the stored {src} sentences were analysed with {len(schemes)} different schemes "
            f"({', '.join(map(str, schemes))}), whose terms are not comparable; bring them all to the "
            f"current scheme: {fix}")
    scheme = schemes[0]
    if not scheme.has_trees:
        raise SelectionError(no_trees(conn, src, method))
    if scheme.tree_tokens == "moses":
        raise SelectionError(
            f"the stored {src} sentences were analysed with the old scheme {scheme} (trees over the "
            f"Moses tokens, before migration 0007), not as SCOI's authors parse; re-analyse them: "
            f"scoi db upgrade, then {fix}")
    wanted = parser_name(override) if override else None
    if wanted and wanted != scheme.name:
        raise SelectionError(
            f"parser {override!r} requested for {src!r}, but the stored {src} sentences were "
            f"analysed with {scheme}; drop the override, or re-analyse them with it: "
            f"{fix} --parser {src}={override}")
    installed = parser_version(scheme.name)
    if installed != scheme.version:
        have = f"{scheme.name}=={installed} is installed" if installed else f"{scheme.name} is not installed"
        raise SelectionError(
            f"the stored {src} sentences were analysed with {scheme}, but {have}; queries must be "
            f"parsed with the same parser: install {scheme.name} version {scheme.version}, or re-analyse "
            f"the stored sentences with the installed one: {fix}")
    return scheme, rows[0][0]


__all__ = ["check_schemes", "direction_exists", "labels", "no_trees", "scheme_rows", "stored_scheme",
           "trees_missing"]
