"""Helpers shared by the CLI commands: errors, JSON output, the database URL."""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

from scoi.core import defaults
from scoi.core.methods import method_help
from scoi.core.names import printable

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    """A rich Console built on first use: ``scoi select --json`` prints no rich output,
    and importing rich costs a one-off command ~30-50 ms."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def get(self) -> Console:
        """The Console itself, for rich APIs that need a real one (Progress, Live)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


console: Console = _LazyConsole(stderr=False)  # type: ignore[assignment]
err_console: Console = _LazyConsole(stderr=True)  # type: ignore[assignment]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print an actionable error and exit non-zero."""
    from rich.text import Text

    err_console.print(Text.assemble(("error: ", "bold red"), printable(message)), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def say(text: str, *, err: bool = False) -> None:
    """Print a line of user or database text as it is, control characters escaped
    (scoi.core.names.printable): no rich markup (``[failed, 2 attempts]``, ``[bold]`` stay),
    no wrapping at 80 columns when stdout is not a terminal, no ESC sequence reaching the
    terminal from a name or an error stored in the database."""
    (err_console if err else console).print(printable(text), markup=False, highlight=False, soft_wrap=True)


def emit_json(obj: Any) -> None:
    """One JSON object on one line of stdout (the last line, for scripts)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


Progress = Callable[[int], None]


@contextmanager
def rate_bar(label: str, unit: str, show: bool) -> Iterator[tuple[Progress | None, Progress | None]]:
    """A progress bar with a rate column for long work (ingest, reanalyze): yields
    ``(advance, set_total)`` callbacks, or ``(None, None)`` when not shown (``--json``, or
    stdout is not a terminal)."""
    if not show:
        yield None, None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(f"{{task.fields[rate]}} {unit}/s"),
                  TimeRemainingColumn(), console=console.get()) as bar:  # type: ignore[attr-defined]
        task = bar.add_task(label, total=None, rate="-")
        t0 = time.perf_counter()

        def advance(n: int) -> None:
            bar.advance(task, n)
            bar.update(task, rate=f"{bar.tasks[0].completed / max(time.perf_counter() - t0, 1e-9):.0f}")

        yield advance, lambda total: bar.update(task, total=total)


@contextmanager
def status_line(show: bool) -> Iterator[Callable[[str], None] | None]:
    """A live line on stderr for long work of open size (a worker: the queue may grow):
    a spinner, the text last given and the elapsed time; log lines printed through
    ``err_console`` go above it. Yields the update callback, or None when not shown
    (``--quiet``, or stderr is not a terminal); nothing is left on screen at the end."""
    if not show:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=err_console.get(), transient=True) as bar:  # type: ignore[attr-defined]
        task = bar.add_task("starting", total=None)
        yield lambda text: bar.update(task, description=text)


T = TypeVar("T")


def run_batches(label: str, unit: str, show_bar: bool, errors: tuple[type[Exception], ...],
                work: Callable[[Progress | None, Progress | None], T]) -> T:
    """Run batch-committing work (ingest, reanalyze) under a :func:`rate_bar`: its expected
    ``errors`` and Ctrl-C become a clear message and a non-zero exit; committed batches stay."""
    try:
        with rate_bar(label, unit, show_bar) as (advance, set_total):
            return work(advance, set_total)
    except errors as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted; batches already committed are kept, rerun to continue", code=130)


#: ``--parser`` help, shared by every command that takes it.
PARSER_HELP = ("A language's parser, repeatable: a spaCy package (fr=fr_core_news_md), a pipeline directory "
               "(de=/path/to/pipeline: spacy-stanza, spacy-udpipe or your own), ru=natasha, or L=none (no trees).")


def parser_options(parser: list[str]) -> dict[str, str]:
    """``--parser fr=fr_core_news_md`` options over ``SCOI_PARSERS`` (see scoi.config)."""
    from scoi.config import parse_parser_overrides, parser_overrides_from_env

    from scoi.parsers import parser_name

    try:
        return {lang: parser_name(name)
                for lang, name in {**parser_overrides_from_env(), **parse_parser_overrides(parser)}.items()}
    except ValueError as e:
        fail(str(e))


def given_parsers(parser: list[str]) -> dict[str, str]:
    """The ``--parser`` options alone (not SCOI_PARSERS): what a job or schedule records in
    its params and signature (the selection then refuses a source parsed otherwise)."""
    from scoi.config import parse_parser_overrides
    from scoi.parsers import parser_name

    try:
        return {lang: parser_name(name) for lang, name in parse_parser_overrides(parser).items()}
    except ValueError as e:
        fail(str(e))


def database_url(steps: Steps | None = None) -> str:
    """The libpq URL of the configured database, migrated to head (checked without
    SQLAlchemy or Alembic when there is nothing to migrate: see ``ensure_migrated``)."""
    from scoi.db.engine import ensure_migrated, resolve_database

    try:
        info = resolve_database()
        if steps is not None:
            steps.step("server start/connect")
        ensure_migrated(info.url)
        if steps is not None:
            steps.step("migration check")
    except Exception as e:  # noqa: BLE001 - shown to the user with the reason
        fail(f"cannot open the database: {one_line(str(e))}")
    return info.url


def one_line(text: str) -> str:
    """``text`` on one line: libpq's messages span lines ("Connection refused\n\tIs the server
    running…"), which :func:`fail` would otherwise print as a literal ``\n\t``."""
    return " ".join(text.split())


def process_age() -> float | None:
    """Seconds since this process started (Linux ``/proc``, 10 ms resolution), or None:
    the start-up split counts the interpreter and the imports before any scoi code ran."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Steps:
    """Wall and CPU time of a command's steps, printed to stderr by ``--verbose`` (so
    ``--json`` output stays one object per line on stdout).

    The first step runs from the process start (wall: ``/proc``; CPU: ``process_time``,
    which counts from the start too), so it holds the interpreter and the imports.
    """

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float | None]] = []  # name, wall ms, cpu ms
        self._origin_wall = time.perf_counter() - (process_age() or 0.0)
        self._wall, self._cpu = self._origin_wall, 0.0

    def step(self, name: str) -> None:
        """Close the step ``name``: the time since the previous one ended."""
        wall, cpu = time.perf_counter(), time.process_time()
        self.rows.append((name, (wall - self._wall) * 1000, (cpu - self._cpu) * 1000))
        self._wall, self._cpu = wall, cpu

    def part(self, name: str, wall_ms: float) -> None:
        """A part of the last step, timed by the code that did it (wall only)."""
        self.rows.append((name, wall_ms, None))

    def print(self) -> None:
        total_wall = (time.perf_counter() - self._origin_wall) * 1000
        lines = ["start-up split (ms)          wall      cpu"]
        for name, wall, cpu in self.rows:
            lines.append(f"  {name:<26}{wall:8.1f} {'' if cpu is None else f'{cpu:8.1f}'}")
        lines.append(f"  {'total':<26}{total_wall:8.1f} {time.process_time() * 1000:8.1f}")
        loaded = [m for m in ("torch", "sqlalchemy", "alembic") if sys.modules.get(m) is not None]
        lines.append(f"  heavy modules imported: {', '.join(loaded) or 'none'} (of torch, sqlalchemy, alembic)")
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()


def print_rows(headers: list[str], rows: list[list[str]]) -> None:
    """A table, control characters of every cell escaped: on a terminal a rich table whose
    long cells fold (never cut, never read as markup); otherwise TSV, header first (csv
    quoting, as `job export`), since a pipe or a file has no width to fit and rich would
    cut names and models to a few characters."""
    rows = [[printable(cell) for cell in row] for row in rows]
    if not console.is_terminal:
        writer = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        sys.stdout.flush()
        return
    from rich.table import Table

    table = Table(*headers)
    for row in rows:
        table.add_row(*table_cells(row))
    console.print(table)


def table_cells(cells: list[str]) -> list[Any]:
    """Cells for a rich table: control characters escaped, long text folded, never read as markup."""
    from rich.text import Text

    return [Text(printable(cell), overflow="fold") for cell in cells]


def parse_key_values(items: list[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` options (``--backend-opt``) as a dict; a VALUE that parses as JSON
    (numbers, true, lists) is taken as such, anything else as a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"{option} {item!r}: expected KEY=VALUE, e.g. max_retries=0 or base_url=http://host:8000/v1")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
        except RecursionError:
            fail(f"{option} {printable(key.strip())!r}: the JSON value is nested too deeply")
    return out


def given_where(items: list[str]) -> dict[str, str] | None:
    """The ``--where KEY=VALUE`` options as one metadata filter (scoi.core.exact.parse_where)."""
    from scoi.core.exact import parse_where

    try:
        return parse_where(items)
    except ValueError as e:
        fail(str(e))


# --------------------------------------------------------------------------- option help shared by commands
METHOD_HELP = method_help()
WHERE_HELP = ("Only pairs whose metadata (pair.meta) has KEY equal to VALUE, compared as strings; repeatable, "
              "all must hold. KEY: letters, digits and _ . : - (e.g. --where domain=legal).")
EMBEDDER_HELP = ("Embedding model of --method fuzzy / fuzzy-ann (the --model given to `scoi embed`; default: "
                 f"{defaults.EMBEDDER}).")
CTQ_MODEL_HELP = ("--method ctq: the CTQ Scorer model (scoi ctq list) that ranks the pool; default: the newest fitted "
                  "one for the direction (docs/method.md, CTQ Scorer).")
RBM25_HELP = ("R-BM25 variant (--method rbm25): moses (default: CTQ Scorer's re-ranking over Moses tokens, "
              "scoi's; better end to end) | ctq (CTQ Scorer's code exactly, its tokenizer too: the published "
              "numbers) | agrawal (Agrawal et al.'s release).")
ORDER_HELP = ("Example order in the prompt: reverse (default, as published: the first example selected comes "
              "last, right before the sentence) | selection (first selected first) | random (seeded by --seed).")
BACKEND_OPT_HELP = ("Backend option KEY=VALUE (repeatable), stored with the job. Secrets (api_key, tokens, "
                    "passwords) are refused: set SCOI_OPENAI_API_KEY in the workers' environment instead.")
SOURCE_SQL_HELP = ("Source: one query returning (key, text) rows, run read-only as a role that may only read "
                   "(scoi_reader: GRANT SELECT ON the tables TO scoi_reader); only keys the job does not hold "
                   "yet are added.")
SOURCE_URL_HELP = ("Database of --source-sql (default: scoi's, read as the role scoi_reader): a URL or conninfo "
                   "without password (PGPASSWORD, ~/.pgpass, service=NAME), or env:NAME_URL; its role must only read "
                   "(no superuser, no server files or programs, no signals).")
SOURCE_TIMEOUT_HELP = ("Seconds --source-sql may run (its statement_timeout; it waits at most 5 s for a lock) "
                       "before it is cancelled.")
DEST_TABLE_HELP = "Destination: [SCHEMA.]TABLE upserted by key when an item is done (needs --source-sql)."
DEST_KEY_HELP = "Its key column (needs a unique constraint)."
DEST_COLUMN_HELP = "Its column that receives the translation."
DEST_URL_HELP = "Database of --dest-table (default: scoi's); same rules as --source-url."
