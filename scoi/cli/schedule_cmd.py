"""``scoi schedule ...``: recurring jobs stored in PostgreSQL and run by ``scoi worker``.

A schedule is a job template (direction, method, k, model, template), a source (a file, or
a SQL query returning key and text) and an optional destination (a table upserted by key,
or a file), run at the ticks of a cron line. Every command with ``--json`` prints one JSON
value on the last line of stdout.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from scoi.cli.common import (DEST_COLUMN_HELP, DEST_KEY_HELP, DEST_TABLE_HELP, DEST_URL_HELP, SOURCE_SQL_HELP,
                             SOURCE_TIMEOUT_HELP, SOURCE_URL_HELP, database_url, emit_json, fail, print_rows, say)
from scoi.cli.job_options import JobOptions, job_options
from scoi.core import defaults
from scoi.core.limits import LIMITS

schedule_app = typer.Typer(help="Recurring translation jobs, stored in PostgreSQL and run by `scoi worker`.",
                           no_args_is_help=True)


def _when(value: datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


def _run(action, *args: Any, **kwargs: Any) -> Any:
    """Call a scoi.jobs.schedules function on a connection; a JobError is a clear exit 1."""
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import connect

    url = database_url()
    with connect(url) as conn:
        try:
            return action(conn, *args, **kwargs)
        except JobError as e:
            fail(str(e))


@schedule_app.command("add")
@job_options()
def add(
    name: str = typer.Argument(..., help="Schedule name (its job gets the same name)."),
    cron: str = typer.Option(..., "--cron", help="Five cron fields, e.g. \"15 2 * * *\" (02:15 every day)."),
    tz: str = typer.Option(defaults.SCHEDULE_TIMEZONE, "--timezone",
                           help="Time zone the cron fields are read in (IANA name)."),
    input_file: Path | None = typer.Option(None, "--input", "-i",
                                           help="Source: a text file in $SCOI_SOURCE_DIR (the workers' "
                                                "--source-dir); each run adds its new lines; or a CAT file "
                                                "(.xlf, .xliff, .po, .pot) there, each run adds its new "
                                                "segments (by key) and keeps the file as read."),
    source_sql: str | None = typer.Option(None, "--source-sql", help=SOURCE_SQL_HELP),
    source_url: str | None = typer.Option(None, "--source-url", help=SOURCE_URL_HELP),
    source_timeout: float = typer.Option(defaults.SOURCE_TIMEOUT, "--source-timeout", help=SOURCE_TIMEOUT_HELP),
    dest_table: str | None = typer.Option(None, "--dest-table", help=DEST_TABLE_HELP),
    dest_key: str | None = typer.Option(None, "--dest-key", help=DEST_KEY_HELP),
    dest_column: str | None = typer.Option(None, "--dest-column", help=DEST_COLUMN_HELP),
    dest_url: str | None = typer.Option(None, "--dest-url", help=DEST_URL_HELP),
    dest_file: Path | None = typer.Option(None, "--dest-file",
                                          help="Destination: a file in $SCOI_DEST_DIR (the workers' --dest-dir), "
                                               "rewritten when the job has nothing left."),
    dest_format: str = typer.Option("tsv", "--dest-format",
                                    help="Format of --dest-file: tsv | jsonl | xliff | po (xliff, po: the CAT "
                                         "file the schedule reads, targets filled)."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the schedule as JSON."),
    opts: JobOptions = JobOptions(),
) -> None:
    """Add a schedule: what to translate, from where, to where, and when.

    Everything is checked before anything is stored: the cron line, the job settings, the
    source query (run once, read-only: two columns, text second, unique non-null keys) and
    the destination table (key column with a unique constraint, INSERT and UPDATE rights).
    """
    from scoi.jobs.schedules import add_schedule
    from scoi.jobs.destinations import Destination
    from scoi.jobs.sources import Source

    if (input_file is None) == (source_sql is None):
        fail("give exactly one source: --input FILE or --source-sql \"SELECT key, text FROM ...\"")
    if dest_table is not None and dest_file is not None:
        fail("give at most one destination: --dest-table or --dest-file")
    if dest_table is None and (dest_key or dest_column or dest_url):
        fail("--dest-key, --dest-column and --dest-url go with --dest-table")
    source = (Source("file", path=str(input_file.resolve())) if input_file is not None
              else Source("sql", query=source_sql, url=source_url, timeout=source_timeout))
    if input_file is not None and source_url is not None:
        fail("--source-url goes with --source-sql, not with --input")
    dest = None
    if dest_table is not None:
        dest = Destination("table", table=dest_table, key=dest_key, column=dest_column, url=dest_url)
    elif dest_file is not None:
        dest = Destination("file", path=str(dest_file.resolve()), format=dest_format)
    spec = opts.spec(name)
    url = database_url()
    out = _run(add_schedule, name, cron, spec, source, dest, url, tz=tz)
    if json_out:
        emit_json(out)
        return
    say(f"schedule {name}: {out['reads']} ({tz}); job {out['job_id']}; the source has "
               f"{out['source_rows']} rows now; next tick {_when(out['next_tick'])}. `scoi worker` runs it "
               f"(`scoi schedule run {name}` runs it now).")


@schedule_app.command("list")
def list_cmd(json_out: bool = typer.Option(False, "--json", help="Print a JSON array.")) -> None:
    """Schedules with their last run and next tick (a table on a terminal, TSV otherwise)."""
    from scoi.jobs.schedules import list_schedules

    rows = _run(list_schedules)
    if json_out:
        emit_json(rows)
        return
    if not rows:
        say("no schedules yet: add one with `scoi schedule add NAME --cron \"15 2 * * *\" ...`")
        return
    print_rows(["name", "cron", "timezone", "state", "job", "last tick", "last run", "next tick"],
               [[r["name"], r["cron"], r["timezone"], "paused" if r["paused"] else "active", str(r["job_id"] or "-"),
                 _when(r["last_tick"]),
                 "-" if r["last_tick"] is None else (f"error: {r['last_error']}" if r["last_error"]
                                                      else f"{r['last_added']} added"),
                 _when(r["next_tick"])] for r in rows])


@schedule_app.command("show")
def show(name: str = typer.Argument(..., help="Schedule name."),
         runs: int = typer.Option(defaults.SCHEDULE_RUNS_SHOWN, "--runs", min=1, max=LIMITS["limit"][1],
                                  help="Recent runs to show."),
         json_out: bool = typer.Option(False, "--json", help="Print a JSON object.")) -> None:
    """A schedule: template, source, destination (and its delivery state), job progress, recent runs."""
    from scoi.jobs.schedules import show_schedule

    s = _run(show_schedule, name, runs)
    if json_out:
        emit_json(s)
        return
    spec = s["spec"]
    say(f"schedule {s['name']}: {s['cron']} ({s['timezone']}), {'paused' if s['paused'] else 'active'}, "
               f"next tick {_when(s['next_tick'])}")
    say(f"  job {s['job_id']}: {spec['src']}-{spec['tgt']} method={spec['method']} k={spec['k']} "
               f"model={spec['model']} template={spec['template']}")
    src = s.get("source")
    if src:
        say(f"  source: {src['path']}" if src["kind"] == "file" else
                   f"  source: {src['query']} (on {src['url'] or 'the scoi database'})")
    dest = s.get("destination")
    if dest:
        where = (f"{dest['path']} ({dest['format']})" if dest["kind"] == "file" else
                 f"{dest['table']}.{dest['column']} by {dest['key']} (on {dest['url'] or 'the scoi database'})")
        error = f"; error: {dest['last_error']}" if dest["last_error"] else ""
        say(f"  destination: {where}; {dest['pending']} outputs waiting, last delivery "
                   f"{_when(dest['last_delivered_at'])}{error}")
    job = s.get("job")
    if job:
        say(f"  items: {job['done']}/{job['total']} done, {job['queued']} queued, {job['running']} running, "
                   f"{job['failed']} failed")
    for r in s["runs"]:
        what = f"error: {r['error']}" if r["error"] else f"{r['added']} added, {r['skipped']} skipped"
        say(f"  run {_when(r['tick'])}{' (manual)' if r['manual'] else ''} by {r['worker']}: {what}")


@schedule_app.command("pause")
def pause(name: str = typer.Argument(..., help="Schedule name."),
          json_out: bool = typer.Option(False, "--json")) -> None:
    """Stop running a schedule's ticks (its job's queued items are still translated)."""
    from scoi.jobs.schedules import set_paused

    _run(set_paused, name, True)
    emit_json({"name": name, "paused": True}) if json_out else say(f"schedule {name}: paused")


@schedule_app.command("resume")
def resume(name: str = typer.Argument(..., help="Schedule name."),
           json_out: bool = typer.Option(False, "--json")) -> None:
    """Run a paused schedule's ticks again (the ticks missed meanwhile collapse into one run)."""
    from scoi.jobs.schedules import set_paused

    _run(set_paused, name, False)
    emit_json({"name": name, "paused": False}) if json_out else say(f"schedule {name}: active")


@schedule_app.command("rm")
def rm(name: str = typer.Argument(..., help="Schedule name."),
       json_out: bool = typer.Option(False, "--json")) -> None:
    """Delete a schedule and its run history; its job, items and outputs stay."""
    from scoi.jobs.schedules import remove_schedule

    job_id = _run(remove_schedule, name)
    if json_out:
        emit_json({"name": name, "removed": True, "job_id": job_id})
    else:
        say(f"schedule {name}: removed (job {job_id} and its outputs are kept)")


@schedule_app.command("run")
def run(name: str = typer.Argument(..., help="Schedule name."),
        json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the run as JSON.")) -> None:
    """Run a schedule now, once (recorded as a manual run); a worker then translates the new items."""
    from scoi.jobs.schedules import run_now
    from scoi.jobs.worker import default_worker_id

    url = database_url()
    result = _run(run_now, name, f"manual:{default_worker_id()}", url)
    if json_out:
        emit_json(result.to_dict())
    elif result.error:
        fail(f"schedule {name}: the run failed: {result.error}")
    else:
        say(f"schedule {name}: {result.added} new items in job {result.job_id}, {result.skipped} skipped")
    if result.error:
        raise typer.Exit(1)
