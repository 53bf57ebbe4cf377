"""``scoi worker``: run workers that translate queued job items (scoi.jobs.supervisor)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import database_url, emit_json, fail, say, status_line
from scoi.cli.job_access import job_or_fail, log_line, open_db
from scoi.core import defaults
from scoi.core.limits import LIMITS

#: ``scoi worker --burst``'s exit status when items ended failed in its run (1 is the worker's own error).
ITEMS_FAILED = 3


def worker(
    burst: bool = typer.Option(False, "--burst", help="Exit once no item is claimable (cron, CI)."),
    batch_size: int = typer.Option(defaults.WORKER_BATCH, "--batch-size", min=1, max=LIMITS["batch_size"][1],
                                   help="Items claimed and generated together."),
    concurrency: int = typer.Option(1, "--concurrency", min=1, max=LIMITS["workers"][1],
                                    help="Worker processes to run (each loads the model)."),
    stall_timeout: float = typer.Option(defaults.STALL_TIMEOUT, "--stall-timeout", min=0.1,
                                        help="Seconds without heartbeat before a live but stuck worker's item is "
                                             "re-claimed (a dead worker's go at once); use one value "
                                             "for all workers (each beats every min(timeout/3, 10) s)."),
    job: str | None = typer.Option(None, "--job", help="Only this job's items (id or name)."),
    max_items: int | None = typer.Option(None, "--max-items", min=1, max=LIMITS["limit"][1],
                                         help="Stop after claiming this many items."),
    poll: float = typer.Option(defaults.POLL_SECONDS, "--poll", min=0.05, help="Idle wait between claims, seconds."),
    prefetch: bool = typer.Option(True, "--prefetch/--no-prefetch",
                                  help="Select the next batch's examples while this batch generates (same "
                                       "results; --no-prefetch when the model needs every core)."),
    dest_dir: Path | None = typer.Option(None, "--dest-dir", file_okay=False, exists=True,
                                         help="The only directory file destinations (schedule add --dest-file) "
                                              "are written in (default: $SCOI_DEST_DIR; without one, none is)."),
    source_dir: Path | None = typer.Option(None, "--source-dir", file_okay=False, exists=True,
                                           help="The only directory schedules' file sources (schedule add --input) "
                                                "are read in (default: $SCOI_SOURCE_DIR; without one, none is)."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code",
                                           help="Let local models (hf:) run the Python code of their files "
                                                "(default: $SCOI_TRUST_REMOTE_CODE; a job can never ask for it)."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: a JSON summary."),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="No live line of items done/failed on stderr (never shown when stderr is "
                                    "not a terminal)."),
) -> None:
    """Translate queued items: claim a batch, select examples, prompt, generate, store; repeat.

    SIGTERM / Ctrl-C finish the current batch and exit; kill -9 loses nothing: a dead
    worker's items are claimed again at once by the next claim of any worker (a live one
    that stops sending heartbeats, after the stall timeout). A worker without --burst
    that loses the database (a restart) waits for it and carries on.

    What a stored job may make the worker do is bounded by the worker's own settings:
    its API key goes only to $SCOI_OPENAI_BASE_URL and $SCOI_OPENAI_ALLOWED_BASE_URLS,
    schedules' files are read only in --source-dir and written only in --dest-dir, model
    code runs only with --trust-remote-code (docs/security.md).

    Exit status: 0 the run ended and no item failed in it; 1 the worker stopped on an
    error (bad option, database unreachable at start); 3 (--burst) some items ended failed
    in this run (`scoi job status JOB` shows their errors); 130 interrupted twice.
    """
    import psycopg

    from scoi.config import ENV_DEST_DIR, ENV_SOURCE_DIR, ENV_TRUST_REMOTE_CODE, environment
    from scoi.db.engine import resolve_read_url
    from scoi.jobs.supervisor import SupervisorError, run_workers, run_worker
    from scoi.jobs.worker import WorkerOptions

    url = database_url()
    job_id = None
    if job is not None:
        with open_db() as conn:
            job_id = job_or_fail(conn, job).id
    opts = WorkerOptions(batch_size=batch_size, stall_timeout=stall_timeout, burst=burst, job_id=job_id,
                         poll_seconds=poll, max_items=max_items, prefetch=prefetch)
    own = {**({ENV_DEST_DIR: str(dest_dir.resolve())} if dest_dir is not None else {}),
           **({ENV_SOURCE_DIR: str(source_dir.resolve())} if source_dir is not None else {}),
           **({ENV_TRUST_REMOTE_CODE: "1"} if trust_remote_code else {})}  # pool processes inherit them
    try:
        with environment(own), status_line(not quiet and sys.stderr.isatty()) as progress:
            if concurrency > 1:
                summary = run_workers(concurrency, opts, url, read_url=resolve_read_url(), progress=progress)
            else:
                summary = run_worker(url, opts, read_url=resolve_read_url(), log=log_line, progress=progress)
    except KeyboardInterrupt:
        fail("interrupted; unfinished items were handed back to the queue", code=130)
    except SupervisorError as e:
        fail(str(e))
    except (ValueError, psycopg.Error) as e:
        fail(f"worker stopped: {e}")
    if json_out:
        emit_json(summary)
    else:
        say(f"{summary['worker']}: {summary['done']} done"
             + (f" ({summary['reused']} reused from the memory)" if summary["reused"] else "")
             + f", {summary['failed']} failed, {summary['requeued']} requeued, "
             + (f"{summary['cancelled']} cancelled while running, " if summary["cancelled"] else "")
             + f"{summary['lost']} lost to other workers in "
             f"{summary['seconds']:.1f}s ({summary['items_per_second']:.2f} items/s, overhead "
             f"{summary['overhead_ms_per_item']:.1f} ms/item)"
             + (f"; {summary['retries']} requests retried" if summary["retries"] else ""))
    if burst and summary["failed"]:
        raise typer.Exit(ITEMS_FAILED)

