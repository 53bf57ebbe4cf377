"""``scoi db``: where the database is, migrations, integrity checks, stopping the embedded server."""

from __future__ import annotations

import typer

from scoi.cli.common import console, emit_json, fail

app = typer.Typer(help="Database location and schema migrations.", no_args_is_help=True)


@app.command()
def status(json_out: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Where the database is, a psql-ready connection string, and the schema revision."""
    from scoi.db.engine import get_engine, redact, resolve_database
    from scoi.db.migrate import current_revision, head_revision

    try:
        info = resolve_database()
        engine = get_engine(info.url, migrate=False)
        rev = current_revision(engine)
    except Exception as e:  # noqa: BLE001
        fail(f"cannot reach the database: {e}")
    data = {"url": redact(info.url), "embedded": info.embedded,
            "data_dir": str(info.data_dir) if info.data_dir else None,
            "revision": rev, "head": head_revision()}
    if json_out:
        emit_json(data)
        return
    kind = "embedded PostgreSQL" if info.embedded else "PostgreSQL from SCOI_DATABASE_URL"
    console.print(f"database:  {kind}")
    if info.data_dir:
        console.print(f"data dir:  {info.data_dir}")
    console.print(f"schema:    {rev or 'not migrated'} (head {data['head']})")
    console.print("open it with:")
    console.print(f"  psql '{data['url']}'", highlight=False, soft_wrap=True)


@app.command()
def upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Apply schema migrations (also done automatically on first use)."""
    from scoi.db.engine import get_engine
    from scoi.db.migrate import RevisionError, check_revision, current_revision, upgrade as do_upgrade

    try:
        check_revision(revision, allowed=("head", "heads"), step="+")  # before the server is started
    except RevisionError as e:
        fail(str(e))
    engine = get_engine(migrate=False)
    do_upgrade(engine, revision)
    console.print(f"schema at {current_revision(engine)}")


@app.command()
def downgrade(revision: str = typer.Argument(..., help="Target revision, e.g. 'base' or '0001'.")) -> None:
    """Revert schema migrations down to REVISION (drops the tables of later revisions)."""
    from scoi.db.engine import get_engine
    from scoi.db.migrate import RevisionError, check_revision, current_revision, downgrade as do_downgrade

    try:
        check_revision(revision, allowed=("base",), step="-")  # before the server is started
    except RevisionError as e:
        fail(str(e))
    engine = get_engine(migrate=False)
    do_downgrade(engine, revision)
    console.print(f"schema at {current_revision(engine) or 'base'}")


@app.command()
def check(json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
          jobs: int = typer.Option(0, "--jobs", "-j", min=0, show_default=False,
                                   help="Sessions running checks at once, on one snapshot "
                                        "(default: the CPU count, 2 to 4).")) -> None:
    """Check the stored corpus's integrity (references without foreign keys, counters, BM25
    index); exit 1 if any check finds violations.

    Each check's line is printed as it ends (with --json on stderr, when it is a terminal);
    the checks of one pass over a big table end together, with the pass's time. Ctrl-C
    (SIGTERM) cancels every running statement on the server and exits 130 (143).
    """
    import sys
    import time

    from scoi.cli.common import database_url, err_console
    from scoi.db.check import CheckResult, Terminated, default_jobs, run_checks

    def line(r: CheckResult) -> str:
        mark = "[green]ok[/]  " if r.ok else "[bold red]FAIL[/]"
        return f"{mark} {r.violations:>8}  {r.name}: {r.description} ({r.seconds:.1f} s)"

    show = console if not json_out else err_console if sys.stderr.isatty() else None
    progress = (lambda r: show.print(line(r), highlight=False, soft_wrap=True)) if show is not None else None
    try:
        url = database_url()
        t0 = time.perf_counter()
        results = run_checks(url, jobs=jobs or default_jobs(), progress=progress)
    except KeyboardInterrupt:
        fail("interrupted; the running checks were cancelled on the server", code=130)
    except Terminated as e:
        fail("terminated; the running checks were cancelled on the server", code=int(e.code))
    seconds = time.perf_counter() - t0  # wall time: passes and sessions overlap
    failed = [r for r in results if not r.ok]
    if json_out:
        emit_json({"ok": not failed, "seconds": round(seconds, 3),
                   "checks": [r.to_dict() for r in results]})
    else:
        console.print(f"{len(results) - len(failed)} of {len(results)} checks passed "
                      f"in {seconds:.1f} s")
    if failed:
        raise typer.Exit(1)


@app.command()
def stop() -> None:
    """Stop the embedded PostgreSQL server (it is started again on demand)."""
    from scoi.db.embedded import stop_embedded

    console.print("stopped" if stop_embedded() else "the embedded server was not running")
