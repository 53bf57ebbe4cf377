"""The repository stands alone: no tracked file under the checked folders points at files
outside it (a sibling ``shared`` folder, the method's spec file, its sections, or the spec
by name), at issue numbers of a tracker a reader of the code cannot see, or at who ran or
tested what (who else shared the machine, which round of work). What the code relies on is
written in docs/ instead."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("scoi", "ingest", "migrations", "tests", "benchmarks", "docs", "scripts", "docker", ".ci", "README.md",
           "pyproject.toml", "alembic.ini")

# Built from parts so that this file does not match itself.
PATTERNS = {
    "a path to the sibling shared folder": re.compile(re.escape("..") + r"/shared"),
    "a section of the spec file": re.compile("SPEC" + r" §"),
    "the spec file": re.compile("SPEC" + r"\.md"),
    "an issue number": re.compile(r"\b[Ii]ssue" + r"s? #?\d+|\(issue" + r" \d+\)"),
    # The spec by name, not the NAME=... placeholder of backend specs.
    "the spec by name": re.compile(r"\b(?:[Tt]he|[Ss]o|[Pp]er|[Ss]ee|[Bb]y|[Ii]n)\s+" + "SPEC" + r"\b|"
                                   + "SPEC" + r"(?:'s|\s+(?:fixes|says|defines|requires|gives|section))\b"),
    "a note on who ran or tested it": re.compile(
        r"\b[Ee]ngine" + r"ers?\b|\b(?:two|three|four|five|six|seven|eight|nine|ten|\d+) other " + r"sessions\b|"
        r"\b[Rr]ound" + r" \d+'s\b|\b[Tt]est" + r"ers?'s?\b"),
}

ALLOWED = {
    # the one place that knows where the development data lives (beside the repository)
    "benchmarks/shared_data.py",
}
ALLOWED_FOLDERS: tuple[str, ...] = ()


def tracked_files() -> list[str]:
    """The files git tracks under FOLDERS (a clean clone's files, not local scratch)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *FOLDERS], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [name for name in out.stdout.decode().split("\0") if name]


def offending_lines(text: str) -> list[tuple[int, str]]:
    """(line number, what it points at) for each line holding an outside reference."""
    return [(number, what) for number, line in enumerate(text.splitlines(), 1)
            for what, pattern in PATTERNS.items() if pattern.search(line)]


def test_the_patterns_catch_what_they_are_for():
    bad = ["see ../" + "shared/data", "SPEC" + " §4", "SPEC" + ".md", "(issue" + " 14)", "Issue" + " 15: x",
           "issue" + " #3", "the " + "SPEC" + "'s worked examples", "so " + "SPEC" + " fixes the tie rule",
           "shared with seven other " + "engin" + "eers' runs", "shared with seven other " + "sessions",
           "Round" + " 2's run was slow", "the 2026-11-24 " + "test" + "er's run"]
    assert [len(offending_lines(line)) for line in bad] == [1] * len(bad)
    assert offending_lines("docs/method.md §7; an issue with this; shared/data; tissue 4") == []
    assert offending_lines("--model NAME=" + "SPEC (repeatable), " + "SPEC as for submit; JobSpec; "
                           "a session-level lock; round 1 of the greedy; reviewers take the file") == []


def test_no_tracked_file_points_outside_the_repository():
    files = tracked_files()
    assert "scoi/__init__.py" in files  # the listing works
    found = []
    for name in files:
        if name in ALLOWED or name.startswith(ALLOWED_FOLDERS):
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):  # binary data, or deleted in the work tree
            continue
        found += [f"{name}:{number}: {what}" for number, what in offending_lines(text)]
    assert not found, "references to outside the repository:\n" + "\n".join(found)


def test_the_allow_list_names_existing_files():
    files = set(tracked_files())
    assert ALLOWED <= files, sorted(ALLOWED - files)
