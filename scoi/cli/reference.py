"""The command reference (docs/cli.md), written from the commands themselves: every
command and subcommand, its arguments and every option with its default and help. Run
``python -m scoi.cli.reference`` after adding or changing a command or option;
tests/unit/test_cli_reference.py fails while one is missing from the reference.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

HEADER = """# Command reference

Every `scoi` command and option, written from the commands' own help by
`python -m scoi.cli.reference` (regenerate after changing a command; a test fails while a
command or option is missing here). The README walks through the everyday commands;
`scoi COMMAND --help` prints the same text.
"""


def commands(app: typer.Typer | None = None) -> Iterator[tuple[list[str], Any]]:
    """(path, click command) of the app and every command under it, groups first."""
    if app is None:
        from scoi.cli.main import app
    yield from _walk(typer.main.get_command(app), ["scoi"])


def _walk(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _walk(sub, [*path, name])


def option_names(cmd: Any) -> list[str]:
    """Every spelling of every option (``-k``, ``--k``, ``--no-prefetch`` ...)."""
    return [o for p in cmd.params if p.param_type_name == "option" for o in (*p.opts, *p.secondary_opts)]


def argument_names(cmd: Any) -> list[str]:
    return [(p.metavar or p.name).upper() for p in cmd.params if p.param_type_name == "argument"]


def _cell(text: str) -> str:
    """Help text as one Markdown table cell (pipes and angle brackets shown, not parsed)."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "\\<").replace(">", "\\>")


def _default(p: Any) -> str:
    if p.required:
        return "required"
    if p.is_flag and not p.secondary_opts:
        return ""
    value = p.default
    if value is None or value == [] or value == ():
        return ""
    if p.secondary_opts:
        return f"`{(p.opts if value else p.secondary_opts)[-1]}`"
    return f"`{value}`"


def render(app: typer.Typer | None = None) -> str:
    """docs/cli.md: a section per command, a table of its options."""
    out = [HEADER]
    for path, cmd in commands(app):
        name = " ".join(path)
        out.append(f"\n{'#' * min(len(path) + 1, 4)} `{name}`\n")
        summary = (cmd.help or "").strip()
        if summary:
            out.append(summary.split("\n\n")[0].replace("\n", " ") + "\n")
        if getattr(cmd, "commands", None):
            out.append("\nCommands: " + ", ".join(f"`{name} {c}`" for c in cmd.commands) + ".\n")
        args = [f"[{a}]" for a in argument_names(cmd)] + (["COMMAND"] if getattr(cmd, "commands", None) else [])
        usage = " ".join([name, *args, "[OPTIONS]"])
        out.append(f"\n    {usage}\n")
        options = [p for p in cmd.params if p.param_type_name == "option"]
        if options:
            out.append("\n| Option | Default | What it does |\n|---|---|---|\n")
            for p in options:
                names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
                out.append(f"| {names} | {_default(p)} | {_cell(p.help or '')} |\n")
    return "".join(out)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    path.write_text(render(), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
