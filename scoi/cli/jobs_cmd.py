"""``scoi job ...`` (submit, list, status, export, retry, cancel, sync); ``scoi worker`` is
scoi.cli.worker_cmd's, ``scoi eval`` scoi.cli.eval_cmd's.

JOB arguments take a job id or a job name. Every command with ``--json`` prints one JSON
value on the last line of stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from scoi.cli.common import (BACKEND_OPT_HELP, DEST_COLUMN_HELP, DEST_KEY_HELP, DEST_TABLE_HELP, DEST_URL_HELP,
                             METHOD_HELP, SOURCE_SQL_HELP, SOURCE_TIMEOUT_HELP, SOURCE_URL_HELP, WHERE_HELP,
                             database_url, emit_json, fail, given_where, parse_key_values, print_rows, say)
from scoi.cli.job_access import job_or_fail, open_db
from scoi.cli.job_options import JobOptions, job_options
from scoi.core import defaults
from scoi.core.limits import LIMITS

job_app = typer.Typer(help="Batch translation jobs stored in PostgreSQL.", no_args_is_help=True)


def _say(text: str) -> None:
    """Print a line as it is, control characters escaped (job names, models, errors and
    signatures are user or model text: see scoi.cli.common.say)."""
    say(text)


def _read_inputs(input_file: Path, references: Path | None) -> tuple[list[str], list[str] | None]:
    from scoi.jobs.spec import read_lines, JobError

    try:
        sources = read_lines(input_file)
        refs = read_lines(references) if references else None
    except JobError as e:
        fail(str(e))
    return sources, refs


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
    with open_db() as conn:
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
    with open_db() as conn:
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

    with open_db() as conn:
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

    with open_db() as conn:
        j = job_or_fail(conn, job)
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
        with open_db() as conn:
            j = job_or_fail(conn, job)
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

    with open_db() as conn:
        j = job_or_fail(conn, job)
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

    with open_db() as conn:
        j = job_or_fail(conn, job)
        n = cancel(conn, j.id)
        st = status(conn, j.id) if not n else None
    if json_out:
        emit_json({"job_id": j.id, "cancelled": n, **({"state": st["state"]} if st else {})})
    elif n:
        _say(f"job {j.id}: cancelled, {n} items stopped")
    else:
        _say(f"job {j.id}: nothing to cancel, no item is queued or running (the job is {st['state']}: "
             f"{st['done']} done, {st['failed']} failed, {st['cancelled']} cancelled)")
