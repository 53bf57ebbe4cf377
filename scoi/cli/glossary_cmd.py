"""``scoi glossary``: term bases whose terms go into prompts and are checked in outputs."""

from __future__ import annotations

from pathlib import Path

import typer

from scoi.cli.common import database_url, emit_json, fail, print_rows, say

glossary_app = typer.Typer(help="Glossaries (TBX, CSV, TSV): terms put into prompts and checked in outputs "
                                "(docs/glossary.md).", no_args_is_help=True)


@glossary_app.command("add")
def add(
    file: Path = typer.Argument(..., help="A TBX file (TBX-Basic or TBX 2019), or CSV/TSV with a header "
                                          "src,tgt[,note] (or the language codes, e.g. fr,en)."),
    src: str = typer.Option(..., "--src", help="Source language code (the language the terms are found in)."),
    tgt: str = typer.Option(..., "--tgt", help="Target language code (the language outputs must use)."),
    name: str | None = typer.Option(None, "--name", help="Glossary name (default: the file name without extension); "
                                                          "adding to an existing glossary adds its new entries."),
    fmt: str | None = typer.Option(None, "--format", help="tbx | csv | tsv (default: from the file name)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Add a glossary file's entries for SRC -> TGT, all or nothing; adding it again adds nothing."""
    from ingest.glossary_files import display_name, read_glossary
    from ingest.records import InputError
    from scoi.core.names import BadName, check_name
    from scoi.glossary import GlossaryError, add as add_entries
    from scoi.jobs.store import connect

    label = name or display_name(str(file))
    try:
        check_name("glossary", label)
        rows = read_glossary(str(file), src.lower(), tgt.lower(), fmt)
        with connect(database_url()) as conn:
            counts = add_entries(conn, label, rows, src, tgt, str(file))
    except (InputError, GlossaryError, BadName) as e:
        fail(str(e))
    if json_out:
        emit_json({"glossary": label, "src": src.lower(), "tgt": tgt.lower(), **counts})
        return
    say(f"glossary {label}: {counts['added']} entries added, {counts['present']} already there "
        f"({counts['read']} read from {file}, {src.lower()} -> {tgt.lower()})")


@glossary_app.command("list")
def list_(json_out: bool = typer.Option(False, "--json", help="Print one JSON object per glossary.")) -> None:
    """The glossaries: name, entries, language pairs."""
    from scoi.glossary import list_glossaries
    from scoi.jobs.store import connect

    with connect(database_url()) as conn:
        rows = list_glossaries(conn)
    if json_out:
        for r in rows:
            emit_json(r)
        return
    if not rows:
        say("no glossary; add one with `scoi glossary add FILE --src fr --tgt en`")
        return
    print_rows(["name", "entries", "pairs", "created"],
               [[r["name"], str(r["entries"]), ", ".join(r["pairs"]), str(r["created_at"])[:19]] for r in rows])


@glossary_app.command("rm")
def rm(name: str = typer.Argument(..., help="The glossary to delete, with its entries.")) -> None:
    """Delete a glossary (jobs that name it then fail their next items with a clear error)."""
    from scoi.glossary import GlossaryError, remove
    from scoi.jobs.store import connect

    try:
        with connect(database_url()) as conn:
            remove(conn, name)
    except GlossaryError as e:
        fail(str(e))
    say(f"glossary {name} deleted")


@glossary_app.command("match")
def match(
    text: str = typer.Argument(..., help="A sentence in the source language."),
    src: str = typer.Option(..., "--src", help="Source language code."),
    tgt: str = typer.Option(..., "--tgt", help="Target language code."),
    glossary: str | None = typer.Option(None, "--glossary", "-g", help="The glossary's name (default: the only "
                                                                        "glossary, when there is one)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """The glossary terms found in TEXT (longest first, case rule and lemmas: docs/glossary.md)."""
    from scoi.glossary import GlossaryError, entries, list_glossaries, match as match_terms
    from scoi.jobs.store import connect

    try:
        with connect(database_url()) as conn:
            if glossary is None:
                names = [g["name"] for g in list_glossaries(conn)]
                if len(names) != 1:
                    fail(f"give --glossary NAME; the glossaries are: {', '.join(names)}" if names else
                         "no glossary; add one with `scoi glossary add FILE --src .. --tgt ..`")
                glossary = names[0]
            found = match_terms(entries(conn, glossary, src, tgt), [text], src.lower())[0]
    except GlossaryError as e:
        fail(str(e))
    terms = [m.to_dict() for m in found]
    if json_out:
        emit_json({"text": text, "glossary": terms})
        return
    if not terms:
        say("no glossary term found")
        return
    print_rows(["source term", "target term", "note"], [[t["src"], t["tgt"], t["note"] or ""] for t in terms])
