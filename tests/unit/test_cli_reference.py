"""Every command and option is documented: each appears in its command's ``--help`` and in
the command reference, docs/cli.md (linked from README.md), and the reference names no
command or option that is gone. Adding an option without documenting it fails here;
``python -m scoi.cli.reference`` rewrites the reference from the commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scoi.cli.main import app
from scoi.cli.reference import argument_names, commands, option_names

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "cli.md"
HEADING = re.compile(r"^#+ `(scoi[^`]*)`\s*$", re.M)
COMMANDS = [(" ".join(path), cmd) for path, cmd in commands(app)]


def _sections() -> dict[str, str]:
    """docs/cli.md by command: the text under each command's heading, up to the next."""
    text = REFERENCE.read_text(encoding="utf-8")
    heads = list(HEADING.finditer(text))
    return {m[1]: text[m.end():nxt.start() if nxt else len(text)]
            for m, nxt in zip(heads, [*heads[1:], None])}


def _named(option: str, text: str) -> bool:
    """``option`` as a whole word of ``text`` (``--k`` is not in ``--keep``)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_option_is_in_the_commands_help(name: str, cmd) -> None:
    result = CliRunner().invoke(app, [*name.split()[1:], "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    missing = [o for o in option_names(cmd) if not _named(o, result.output)]
    assert not missing, f"`{name} --help` does not show {missing}"
    if getattr(cmd, "commands", None):
        assert all(_named(sub, result.output) for sub in cmd.commands), f"`{name} --help` lacks a subcommand"


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_and_option_is_in_the_reference(name: str, cmd) -> None:
    sections = _sections()
    assert name in sections, f"docs/cli.md has no section `{name}`: run python -m scoi.cli.reference"
    section = sections[name]
    missing = [o for o in option_names(cmd) if f"`{o}`" not in section]
    missing += [a for a in argument_names(cmd) if not _named(a, section)]
    assert not missing, f"docs/cli.md, `{name}`, does not document {missing}: run python -m scoi.cli.reference"


def test_the_reference_names_only_what_exists() -> None:
    """No section or option row outlives its command or option."""
    existing = dict(COMMANDS)
    sections = _sections()
    assert set(sections) == set(existing), f"stale sections: {sorted(set(sections) - set(existing))}"
    for name, section in sections.items():
        rows = re.findall(r"^\| (`-[^|]*) \|", section, re.M)
        documented = {o for row in rows for o in re.findall(r"`(-[^`]+)`", row)}
        stale = documented - set(option_names(existing[name]))
        assert not stale, f"docs/cli.md, `{name}`, documents options it does not have: {sorted(stale)}"


def test_the_readme_links_the_reference() -> None:
    assert "(docs/cli.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
