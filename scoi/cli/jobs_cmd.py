"""``scoi job ...`` (submit, list, status, export, retry, cancel, sync), ``scoi worker``, ``scoi eval``.

JOB arguments take a job id or a job name. Every command with ``--json`` prints one JSON
value on the last line of stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import (BACKEND_OPT_HELP, DEST_COLUMN_HELP, DEST_KEY_HELP, DEST_TABLE_HELP, DEST_URL_HELP,
                             METHOD_HELP, SOURCE_SQL_HELP, SOURCE_TIMEOUT_HELP, SOURCE_URL_HELP, WHERE_HELP,
                             console, database_url, emit_json, err_console, fail, given_where, parse_key_values,
                             print_rows, say, status_line, table_cells)
from scoi.cli.job_options import JobOptions, job_options
from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.core.names import printable

#: ``scoi worker --burst``'s exit status when items ended failed in its run (1 is the worker's own error).
ITEMS_FAILED = 3

job_app = typer.Typer(help="Batch translation jobs stored in PostgreSQL.", no_args_is_help=True)



def _say(text: str) -> None:
    """Print a line as it is, control characters escaped (job names, models, errors and
    signatures are user or model text: see scoi.cli.common.say)."""
    say(text)


def _log(text: str) -> None:
    """A worker's log line, on stderr (stdout stays clean for --json), printed as it is."""
    say(text, err=True)


def _connect():
    from scoi.jobs.store import connect

    return connect(database_url())


def _read_inputs(input_file: Path, references: Path | None) -> tuple[list[str], list[str] | None]:
    from scoi.jobs.spec import read_lines, JobError

    try:
        sources = read_lines(input_file)
        refs = read_lines(references) if references else None
    except JobError as e:
        fail(str(e))
    return sources, refs


def _job(conn, ref: str):
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import get_job

    try:
        return get_job(conn, ref)
    except JobError as e:
        fail(str(e))


# --------------------------------------------------------------------------- job submit
@job_app.command("submit")
@job_options()
def submit(
    input_file: Path | None = typer.Option(None, "--input", "-i",
                                           help="Text file, one source sentence per line; or a CAT file (.xlf, "
                                                ".xliff: XLIFF 1.2/2.x; .po, .pot: gettext), one item per "
                                                "untranslated segment, written back by `job export --format "
                                                "xliff|po`."),
    source_sql: str | None = typer.Option(None, "--source-sql", help=SOURCE_SQL_HELP + " Instead of --input."),
    source_url: str | None = typer.Option(None, "--source-url", help=SOURCE_URL_HELP),
    source_timeout: float = typer.Option(defaults.SOURCE_TIMEOUT, "--source-timeout", help=SOURCE_TIMEOUT_HELP),
    dest_table: str | None = typer.Option(None, "--dest-table", help=DEST_TABLE_HELP),
    dest_key: str | None = typer.Option(None, "--dest-key", help=DEST_KEY_HELP),
    dest_column: str | None = typer.Option(None, "--dest-column", help=DEST_COLUMN_HELP),
    dest_url: str | None = typer.Option(None, "--dest-url", help=DEST_URL_HELP),
    references: Path | None = typer.Option(None, "--references", "-r", help="Reference translations, line-aligned."),
    name: str | None = typer.Option(None, "--name", help="Unique job name (usable instead of the id)."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the job as JSON."),
    opts: JobOptions = JobOptions(),
) -> None:
    """Create a job with one item per input line (or per row of --source-sql); `scoi worker`
    translates them (and upserts them into --dest-table)."""
    from scoi.jobs.create import submit as submit_job
    from scoi.jobs.documents import document_format, submit_document
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import done_at_submit

    if (input_file is None) == (source_sql is None):
        fail("give exactly one source: --input FILE or --source-sql \"SELECT key, text FROM ...\"")
    if source_sql is None and (source_url or dest_table or dest_key or dest_column or dest_url):
        fail("--source-url and --dest-table/--dest-key/--dest-column/--dest-url go with --source-sql")
    if dest_table is None and (dest_key or dest_column or dest_url):
        fail("--dest-key, --dest-column and --dest-url go with --dest-table")
    if source_sql is not None and references is not None:
        fail("--references goes with --input (line-aligned), not with --source-sql")
    spec = opts.spec(name)
    with _connect() as conn:
        try:
            if source_sql is not None:
                from scoi.jobs.destinations import Destination
                from scoi.jobs.source_jobs import submit_from_source
                from scoi.jobs.sources import Source

                dest = (Destination("table", table=dest_table, key=dest_key, column=dest_column, url=dest_url)
                        if dest_table is not None else None)
                source = Source("sql", query=source_sql, url=source_url, timeout=source_timeout)
                job_id, added = submit_from_source(conn, spec, source, dest, database_url())
                n_items = added.added
            elif document_format(input_file) is not None:
                if references is not None:
                    fail("--references goes with a text --input, not with an XLIFF or PO file")
                job_id, n_items = submit_document(conn, spec, input_file)
            else:
                sources, refs = _read_inputs(input_file, references)
                job_id = submit_job(conn, spec, sources, refs, input_path=str(input_file.resolve()),
                                    references_path=str(references.resolve()) if references else None)
                n_items = len(sources)
        except JobError as e:
            fail(str(e))
        blank = done_at_submit(conn, job_id)
    out = {"job_id": job_id, "name": name, "items": n_items, "blank_done": blank, "signature": spec.signature()}
    if json_out:
        emit_json(out)
    else:
        _say(f"job {job_id}{f' ({name})' if name else ''}: {n_items - blank} items queued"
             + (f" ({blank} blank, done at once)" if blank else "")
             + "; run `scoi worker --burst` to translate them")


# --------------------------------------------------------------------------- job sync
@job_app.command("sync")
def sync(
    input_file: Path = typer.Option(..., "--input", "-i", help="Text file, one source sentence per line."),
    name: str = typer.Option(..., "--name", help="The recurring job's name (created on the first run)."),
    src: str | None = typer.Option(None, "--src", help="Source language code (needed on the first run)."),
    tgt: str | None = typer.Option(None, "--tgt", help="Target language code (needed on the first run)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Backend spec (needed on the first run)."),
    method: str | None = typer.Option(None, "--method", help=METHOD_HELP + f" Default {defaults.METHOD}."),
    k: int | None = typer.Option(None, "-k", "--k", min=0, max=LIMITS["k"][1],
                                 help=f"Examples per prompt (default {defaults.K})."),
    references: Path | None = typer.Option(None, "--references", "-r", help="Reference translations, line-aligned."),
    template: str | None = typer.Option(None, "--template",
                                        help=f"xglm | alpaca | PATH (default {defaults.TEMPLATE})."),
    max_attempts: int = typer.Option(defaults.MAX_ATTEMPTS, "--max-attempts", min=1, max=LIMITS["max_attempts"][1],
                                     help="Attempts per item (first run)."),
    backend_opt: list[str] = typer.Option([], "--backend-opt", help=BACKEND_OPT_HELP + " First run only."),
    reuse: str = typer.Option(defaults.REUSE, "--reuse", help="exact | off: reuse the stored translation of an "
                                                               "exact match instead of the model (docs/jobs.md). "
                                                               "First run only."),
    where: list[str] = typer.Option([], "--where", help=WHERE_HELP + " First run only."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: what was added, as JSON."),
) -> None:
    """Add to the named job the input lines it does not hold yet (idempotent; for cron).

    Lines are matched by content, so rerunning adds nothing, and appending lines to the
    file adds exactly those. Follow with `scoi worker --burst --job NAME`.
    """
    from scoi.jobs.documents import document_format
    from scoi.jobs.sync import sync as sync_job
    from scoi.jobs.spec import JobError, JobSpec

    if document_format(input_file) is not None:
        fail(f"{input_file}: job sync reads text lines; for an XLIFF or PO file that grows, add a schedule "
             f"(`scoi schedule add NAME --input {input_file} --dest-file OUT --dest-format "
             f"{document_format(input_file)} ...`), or submit it as a job (`scoi job submit --input`)")
    sources, refs = _read_inputs(input_file, references)
    given = {a for a, v in (("src", src), ("tgt", tgt), ("model", model), ("method", method), ("k", k),
                            ("template", template)) if v is not None}
    spec = JobSpec(src=src or "", tgt=tgt or "", model=model or "", method=method or defaults.METHOD,
                   k=defaults.K if k is None else k, template=template or defaults.TEMPLATE, name=name,
                   max_attempts=max_attempts, reuse=reuse, where=given_where(where),
                   backend_options=parse_key_values(backend_opt, "--backend-opt"))
    with _connect() as conn:
        try:
            result = sync_job(conn, spec, sources, refs, input_path=str(input_file.resolve()),
                              references_path=str(references.resolve()) if references else None, check=given)
        except JobError as e:
            fail(str(e))
    if json_out:
        emit_json(result.to_dict())
    else:
        _say(f"job {result.job_id} ({name}){' created' if result.created else ''}: {result.added} new "
             f"items, {result.skipped} lines already there or blank")


# --------------------------------------------------------------------------- job list / status
@job_app.command("list")
def list_cmd(json_out: bool = typer.Option(False, "--json", help="Print a JSON array.")) -> None:
    """Jobs with their item counts by status (a table on a terminal, TSV lines otherwise)."""
    from scoi.jobs.store import list_jobs

    with _connect() as conn:
        rows = list_jobs(conn)
    if json_out:
        emit_json(rows)
        return
    if not rows:
        _say("no jobs yet: create one with `scoi job submit --input FILE --src fr --tgt en --model M`")
        return
    print_rows(["id", "name", "pair", "method", "k", "state", "done", "reused", "queued", "failed", "undelivered",
                "model"],
                [[str(r["job_id"]), r["name"] or "", f"{r['src_lang']}-{r['tgt_lang']}", r["method"], str(r["k"]),
                  r["state"], f"{r['done']}/{r['total']}", str(r["origins"]["tm"]), str(r["queued"] + r["running"]),
                  str(r["failed"]), str(r["undelivered"]), r["model"]] for r in rows])


@job_app.command("status")
def status_cmd(job: str = typer.Argument(..., help="Job id or name."),
               json_out: bool = typer.Option(False, "--json", help="Print a JSON object.")) -> None:
    """Progress of a job: items by status, running items by the state of their worker (live,
    dead, stuck), mean timings, latest scores, the current errors of unfinished items and the
    warnings of cleaned outputs."""
    from scoi.jobs.spec import job_reuse
    from scoi.jobs.store import status

    with _connect() as conn:
        j = _job(conn, job)
        st = status(conn, j.id)
    st.update(signature=j.signature, max_attempts=j.max_attempts, input_path=j.input_path,
              reuse=job_reuse(j.params), where=j.params.get("where"))
    if json_out:
        emit_json(st)
        return
    _say(f"job {j.id}{f' ({j.name})' if j.name else ''}: {st['state']} — {st['done']}/{st['total']} done, "
         f"{st['queued']} queued, {st['running']} running, {st['failed']} failed, "
         f"{st['cancelled']} cancelled" + (f", {st['undelivered']} undelivered" if st["undelivered"] else ""))
    _say(f"  {j.signature}")
    _say(f"  origins: {st['origins']['llm']} by the model, {st['origins']['tm']} reused from the memory "
         f"(--reuse {st['reuse']})")
    held = st["held_by"]
    if st["running"]:
        _say(f"  running items held by live workers: {held['live']}, by dead ones (free for the next claim): "
             f"{held['dead']}, by stuck ones (no heartbeat for their stall timeout): {held['stuck']}"
             + (f", by unregistered ones: {held['unknown']}" if held["unknown"] else ""))
    if st["avg_generate_ms"] is not None:
        _say(f"  per item: select {st['avg_select_ms']} ms, generate {st['avg_generate_ms']} ms, "
             f"overhead {st['avg_overhead_ms']} ms")
    for s in st["scores"]:
        _say(f"  {s['metric']}: {s['score']:.2f}  ({s['signature']})")
    if st["examples_dropped"]["items"]:
        _say(f"  {st['examples_dropped']['items']} done items dropped examples of their selection to fit the "
             f"model's context (fewest: {st['examples_dropped']['fewest']}); see examples_used in job export")
    for e in st["errors"]:
        _say(f"  item {e['idx']} [{e['status']}, {e['attempts']} attempts]: {e['last_error']}")
    for w in st["warnings"]:
        _say(f"  item {w['idx']} [{w['status']}]: {w['warning']}")
    for d in st["delivery_errors"]:
        _say(f"  item {d['idx']} [undelivered, key {d['source_key']!r}]: {d['delivery_error']}")
    if st["qa"]["flagged"]:
        _say(f"  {st['qa']['flagged']} items broke their inline codes (QA; flagged in the exported file):")
    for q in st["qa"]["items"]:
        _say(f"  item {q['idx']} [qa, key {q['source_key']!r}]: {'; '.join(q['qa'])}")


# --------------------------------------------------------------------------- job export / retry / cancel
@job_app.command("export")
def export_cmd(
    job: str = typer.Argument(..., help="Job id or name."),
    fmt: str = typer.Option("jsonl", "--format", "-f",
                            help="jsonl | tsv | tmx | xliff | po (tmx: the done translations as a memory for "
                                 "`scoi ingest`; xliff, po: the job's CAT file with targets filled)."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="Write to this file (a new file or a regular one, replaced atomically) "
                                            "instead of stdout; - is stdout."),
    with_prompt: bool = typer.Option(False, "--with-prompt", help="Add each item's prompt and raw output."),
    json_out: bool = typer.Option(False, "--json", help="With -o: last line of stdout is a JSON summary."),
) -> None:
    """One row per item in input order: index, source, output, reference, status, ..., qa.

    A job submitted from an XLIFF or PO file exports as that file (--format xliff or po):
    ids, notes and untouched units kept, each done segment's target filled with its inline
    codes restored and marked for review (XLIFF 1.2 needs-review-translation, 2.x initial,
    PO fuzzy); a segment whose codes the model broke also gets a QA note.

    --format tmx writes every done translation (the job has no review step) as a TMX 1.4b
    unit with props scoi:job, scoi:model, scoi:method, scoi:origin (llm or tm) and scoi:qa,
    which `scoi ingest out.tmx --corpus reviewed` keeps as the pairs' metadata."""
    from scoi.jobs.documents import DOCUMENT_FORMATS, export_document
    from scoi.jobs.export import TMX_FORMAT, export_rows, export_target, export_to_file, write_export, \
        write_tmx, EXPORT_FORMATS
    from scoi.jobs.spec import JobError

    formats = EXPORT_FORMATS + (TMX_FORMAT,) + DOCUMENT_FORMATS
    if fmt not in formats:
        fail(f"unknown format {fmt!r}; expected one of {', '.join(formats)}")
    if output is not None and str(output) == "-":
        output = None
    try:
        if output is not None:
            export_target(output)  # a bad path fails before the database is asked anything
        with _connect() as conn:
            j = _job(conn, job)
            if output is None and fmt in DOCUMENT_FORMATS:
                data, _ = export_document(conn, j.id, fmt)
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
                return
            if output is None and fmt == TMX_FORMAT:
                write_tmx(conn, j, sys.stdout.buffer)
                sys.stdout.flush()
                return
            if output is None:
                write_export(export_rows(conn, j.id, with_prompt=with_prompt), fmt, sys.stdout)
                sys.stdout.flush()
                return
            n = export_to_file(conn, j.id, fmt, output, with_prompt=with_prompt)
    except JobError as e:
        fail(str(e))
    if json_out:
        emit_json({"job_id": j.id, "rows": n, "output": str(output), "format": fmt})
    else:
        _say(f"{n} {'targets' if fmt in DOCUMENT_FORMATS else 'units' if fmt == TMX_FORMAT else 'rows'} "
             f"written to {output}")


@job_app.command("retry")
def retry_cmd(job: str = typer.Argument(..., help="Job id or name."),
              failed_only: bool = typer.Option(False, "--failed-only",
                                               help="Queue failed items only; cancelled items stay cancelled."),
              json_out: bool = typer.Option(False, "--json")) -> None:
    """Queue the failed and cancelled items again, with fresh attempts (--failed-only: the failed ones).

    The job becomes active again only when items are queued. So --failed-only on a
    cancelled job re-opens its failed items, if it has any, and leaves its cancelled items
    cancelled (once the re-opened items end, the job reads cancelled again); with no failed
    items nothing changes and the job stays cancelled. Without --failed-only a cancelled
    job resumes.
    """
    from scoi.jobs.store import retry, status

    with _connect() as conn:
        j = _job(conn, job)
        n = retry(conn, j.id, include_cancelled=not failed_only)
        st = status(conn, j.id, errors=0)
    if json_out:
        emit_json({"job_id": j.id, "requeued": n, "state": st["state"]})
    elif n:
        _say(f"job {j.id}: {n} items queued again")
    else:
        hint = (f" (`scoi job retry {j.id}` without --failed-only queues its {st['cancelled']} cancelled items)"
                if failed_only and st["cancelled"] else "")
        _say(f"job {j.id}: no {'failed' if failed_only else 'failed or cancelled'} items to queue again; "
             f"the job stays {st['state']}{hint}")


@job_app.command("cancel")
def cancel_cmd(job: str = typer.Argument(..., help="Job id or name."),
               json_out: bool = typer.Option(False, "--json")) -> None:
    """Stop a job: queued and running items become cancelled (`scoi job retry` resumes)."""
    from scoi.jobs.store import cancel, status

    with _connect() as conn:
        j = _job(conn, job)
        n = cancel(conn, j.id)
        st = status(conn, j.id) if not n else None
    if json_out:
        emit_json({"job_id": j.id, "cancelled": n, **({"state": st["state"]} if st else {})})
    elif n:
        _say(f"job {j.id}: cancelled, {n} items stopped")
    else:
        _say(f"job {j.id}: nothing to cancel, no item is queued or running (the job is {st['state']}: "
             f"{st['done']} done, {st['failed']} failed, {st['cancelled']} cancelled)")


# --------------------------------------------------------------------------- worker
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
    from scoi.jobs.supervisor import SupervisorError, run_pool, run_worker
    from scoi.jobs.worker import WorkerOptions

    url = database_url()
    job_id = None
    if job is not None:
        with _connect() as conn:
            job_id = _job(conn, job).id
    opts = WorkerOptions(batch_size=batch_size, stall_timeout=stall_timeout, burst=burst, job_id=job_id,
                         poll_seconds=poll, max_items=max_items, prefetch=prefetch)
    own = {**({ENV_DEST_DIR: str(dest_dir.resolve())} if dest_dir is not None else {}),
           **({ENV_SOURCE_DIR: str(source_dir.resolve())} if source_dir is not None else {}),
           **({ENV_TRUST_REMOTE_CODE: "1"} if trust_remote_code else {})}  # pool processes inherit them
    try:
        with environment(own), status_line(not quiet and sys.stderr.isatty()) as progress:
            if concurrency > 1:
                summary = run_pool(concurrency, opts, url, read_url=resolve_read_url(), progress=progress)
            else:
                summary = run_worker(url, opts, read_url=resolve_read_url(), log=_log, progress=progress)
    except KeyboardInterrupt:
        fail("interrupted; unfinished items were handed back to the queue", code=130)
    except SupervisorError as e:
        fail(str(e))
    except (ValueError, psycopg.Error) as e:
        fail(f"worker stopped: {e}")
    if json_out:
        emit_json(summary)
    else:
        _say(f"{summary['worker']}: {summary['done']} done"
             + (f" ({summary['reused']} reused from the memory)" if summary["reused"] else "")
             + f", {summary['failed']} failed, {summary['requeued']} requeued, "
             + (f"{summary['cancelled']} cancelled while running, " if summary["cancelled"] else "")
             + f"{summary['lost']} lost to other workers in "
             f"{summary['seconds']:.1f}s ({summary['items_per_second']:.2f} items/s, overhead "
             f"{summary['overhead_ms_per_item']:.1f} ms/item)"
             + (f"; {summary['retries']} requests retried" if summary["retries"] else ""))
    if burst and summary["failed"]:
        raise typer.Exit(ITEMS_FAILED)


# --------------------------------------------------------------------------- eval
def _score_cell(row: dict, metric: str) -> str:
    """A metric's cell of the compare table: the score, and for a job tested against the
    baseline its bootstrap mean ± interval with * when p < 0.05."""
    if metric not in row:
        return "-"
    sig = row.get("significance", {}).get(metric)
    if sig is None or row.get("baseline"):
        return f"{row[metric]:.2f}" + (f" ({sig['mean']:.2f} ± {sig['ci']:.2f})" if sig else "")
    star = "*" if sig["p_value"] < 0.05 else ""
    return f"{row[metric]:.2f}{star} ({sig['mean']:.2f} ± {sig['ci']:.2f}, p={sig['p_value']:.3f})"


def _print_compare(rows: list[dict], columns: list[str], base: int, samples: int) -> None:
    """The --compare table: models by short label (the full specs in a note), so it fits 80
    columns on a terminal; long TSV, every number in a field of its own, when piped."""
    from scoi.jobs.eval import model_labels

    labels = model_labels([r["model"] for r in rows])
    with_terms = any("terms" in r for r in rows)
    if not console.is_terminal:
        headers = ["job_id", "job", "method", "k", "model", "template", "metric", "score", "mean", "ci", "p_value",
                   "items", *(["terms_accuracy"] if with_terms else [])]
        out = []
        for r in rows:
            for c in columns:
                if c not in r:
                    continue
                sig = r.get("significance", {}).get(c) or {}
                out.append([str(r["job_id"]), r["name"] or "", r["method"], str(r["k"]), r["model"], r["template"], c,
                            str(r[c]), str(sig.get("mean", "")), str(sig.get("ci", "")),
                            "" if sig.get("p_value") is None else str(sig["p_value"]), str(r["n_items"]),
                            *([str((r.get("terms") or {}).get("accuracy") or "")] if with_terms else [])])
        print_rows(headers, out)
        return
    from rich.table import Table
    from rich.text import Text

    templates = len({r["template"] for r in rows}) > 1  # a column only when it tells the rows apart
    table = Table("job", "method", "k", "model", *(["template"] if templates else []), *columns,
                  *(["terms %"] if with_terms else []), "items")
    for r in rows:
        term_cell = ([f"{r['terms']['accuracy']:.2f}" if r.get("terms", {}).get("required") else "-"]
                     if with_terms else [])
        table.add_row(*table_cells([r["name"] or str(r["job_id"]), r["method"], str(r["k"]), labels[r["model"]],
                                    *([r["template"]] if templates else []), *(_score_cell(r, c) for c in columns),
                                    *term_cell, str(r["n_items"])]))
    notes = []
    if len(rows) > 1:
        n = max((v["n_items"] for r in rows for v in r.get("significance", {}).values()), default=0)
        notes.append(f"paired bootstrap ({samples} resamples) against {rows[base]['name'] or rows[base]['job_id']} "
                     f"over {n} items all jobs translated: mean ± 95% interval; * p < 0.05")
    named = [f"{lab} = {spec}" for spec, lab in labels.items() if lab != spec]
    if named:
        notes.append("models: " + ", ".join(named))
    console.print(table)
    for note in notes:
        console.print(Text(printable(note)), highlight=False)  # wrapped to the terminal, never read as markup


def _warn(text: str) -> None:
    """A warning line on stderr (stdout stays clean for --json)."""
    _log(f"warning: {text}")


def eval_jobs(
    jobs: list[str] = typer.Argument(..., help="Job ids or names."),
    compare: bool = typer.Option(False, "--compare", help="One table: a row per job, a column per metric."),
    comet: str | None = typer.Option(None, "--comet",
                                     help="COMET checkpoint: a .ckpt file, a model directory, or a cached hub name."),
    partial: bool = typer.Option(False, "--partial", help="Score the done items even if others are not."),
    baseline: str | None = typer.Option(None, "--baseline",
                                        help="With --compare: the job the others are tested against "
                                             "(default: the first)."),
    samples: int = typer.Option(defaults.BOOTSTRAP_SAMPLES, "--samples", min=100, max=LIMITS["samples"][1],
                                help="With --compare: bootstrap resamples."),
    origin: str | None = typer.Option(None, "--origin",
                                      help="llm | tm: score only the outputs the model wrote (llm) or those reused "
                                           "from the translation memory (tm); printed, not stored. Not with "
                                           "--compare."),
    json_out: bool = typer.Option(False, "--json", help="Last line of stdout: the scores as JSON."),
) -> None:
    """BLEU and chrF (sacrebleu) of a job against its references, COMET with --comet; stored.

    --origin llm scores the model alone: a job that reused exact matches (--reuse exact)
    otherwise scores the memory's stored translations too.

    With --compare, each job's difference from the baseline gets a paired bootstrap test
    over the items all jobs translated (sacreBLEU's own for BLEU and chrF, the same
    resampling over per-item COMET scores): mean ± 95% interval, and * when p < 0.05.
    """
    from scoi.jobs.eval import EvalError, compare as compare_jobs, evaluate, term_summary

    if origin is not None and compare:
        fail("--origin scores one job's outputs of that origin; it cannot be combined with --compare")
    with _connect() as conn:
        found = [_job(conn, ref) for ref in jobs]
        base = 0
        if baseline is not None:
            base_job = _job(conn, baseline)
            if base_job.id not in [j.id for j in found]:
                found.insert(0, base_job)
            base = [j.id for j in found].index(base_job.id)
        try:
            if compare:
                columns, rows = compare_jobs(conn, found, comet=comet, partial=partial, baseline=base,
                                             n_samples=samples, warn=_warn)
            else:
                results = [(j, evaluate(conn, j, comet=comet, partial=partial, warn=_warn, origin=origin))
                           for j in found]
            terms = {j.id: term_summary(conn, j) for j in found}  # glossary term accuracy (docs/glossary.md)
        except EvalError as e:
            fail(str(e))
    if compare:
        for r in rows:
            if terms[r["job_id"]]:
                r["terms"] = terms[r["job_id"]]
        if json_out:
            emit_json({"columns": columns, "rows": rows})
            return
        _print_compare(rows, columns, base, samples)
        return
    if json_out:
        out = [{"job_id": j.id, "name": j.name, "scores": [s.to_dict() for s in scores],
                **({"terms": terms[j.id]} if terms[j.id] else {})} for j, scores in results]
        emit_json(out[0] if len(out) == 1 else out)
        return
    for j, scores in results:
        _say(f"{j.label} ({j.method}, k={j.k}, {len(scores) and scores[0].n_items} items):")
        for s in scores:
            _say(f"  {s.metric:6s} {s.score:7.2f}  {s.signature}")
        if t := terms[j.id]:
            share = f"{t['accuracy']:.2f}%" if t["required"] else "no term required"
            _say(f"  terms  {share}  {t['found']} of {t['required']} required target terms found "
                 f"(glossary {t['glossary']})")
