"""Integrity checks of the stored corpus: ``scoi db check`` and the tests' assert_consistent.

Since migration 0005 ingest keeps several references without foreign keys (docs/schema.md,
"Writes"), and the counters (df, N, total length) are maintained by the writer; these checks
are what verifies them. Statements: ``scoi/db/sql/check.sql``; the BM25 index's postings,
stored only packed since migration 0034, are decoded here (:func:`index_pass`).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from scoi.core.blockcheck import IndexTally, array_elements
from scoi.core.defaults import DB_CHECK_WORK_MEM
from scoi.db import connect
from scoi.db.queries import load

_COMMENT = re.compile(r"^--\s?(.*)$")
_PASS_CHECKS = re.compile(r"^--\s*checks:\s*(.+)$", re.MULTILINE)
#: ``application_name`` of the checks' sessions: what to look for in pg_stat_activity.
APPLICATION_NAME = "scoi db check"
#: the pass of check.sql that is no statement: :func:`index_pass` computes its checks
INDEX_PASS = "pass_index"
_INDEX_SQL = load("check_index")
_TOKENS_PER_CHUNK = 2000     # tokens' blocks decoded at once
_SENTENCES_PER_CHUNK = 20000  # sentence ids of forward rows sent as one row


@dataclass(frozen=True)
class CheckResult:
    """One invariant: its name in check.sql, what it means, the rows that break it, and how
    long its statement took (a fused check: the whole pass that computed it)."""

    name: str
    description: str
    violations: int
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3), "ok": self.ok}


def _is_comment_only(body: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("--") for line in body.splitlines())


def checks() -> dict[str, tuple[str, str]]:
    """name -> (description, statement computing it), in the order of check.sql. A fused
    check's statement is its ``pass_*`` statement, shared with the pass's other checks (the
    check is that statement's column of its name)."""
    blocks = load("check")
    passes: dict[str, str] = {}
    for name, body in blocks.items():
        if name.startswith("pass_"):
            if _is_comment_only(body) != (name == INDEX_PASS):
                raise ValueError(f"check.sql: {name} must hold a statement (only {INDEX_PASS} runs in Python)")
            found = _PASS_CHECKS.search(body)
            if found is None:
                raise ValueError(f"check.sql: {name} has no '-- checks:' line")
            for check in (c.strip() for c in found.group(1).split(",")):
                if check in passes or check not in blocks:
                    raise ValueError(f"check.sql: {name} lists {check}, unknown or already in another pass")
                passes[check] = body
    out = {}
    for name, body in blocks.items():
        if name.startswith("pass_"):
            continue
        match = _COMMENT.match(body.splitlines()[0])
        fused = _is_comment_only(body)
        if fused != (name in passes):
            raise ValueError(f"check.sql: {name} must either hold a statement or be listed by one pass_* statement")
        out[name] = (match.group(1).strip() if match else name, passes[name] if fused else body)
    return out


def default_jobs() -> int:
    """Sessions ``scoi db check`` runs its statements on: the CPU count, at least 2 (one
    check waiting on I/O leaves the CPU to another) and at most 4 (three long passes, and
    each session may hold several work_mem)."""
    return min(4, max(2, os.cpu_count() or 1))


def run_checks(url: str, names: list[str] | None = None,
               progress: Callable[[CheckResult], None] | None = None, jobs: int = 1) -> list[CheckResult]:
    """Run the checks (all, or ``names``) on ``jobs`` sessions that share one snapshot
    (REPEATABLE READ, read only; the first exports it, the others import it), so a concurrent
    ingest's commit between two checks cannot show as a violation; ``progress`` gets each
    result as its check ends (a long check is one line at a time, not silence), on the
    calling thread. Results come back in the order of check.sql.

    Interrupted (Ctrl-C, or SIGTERM while this runs on the main thread), every session's
    running statement is cancelled on the server before the error propagates: no check keeps
    a backend busy after scoi is gone."""
    selected = checks()
    if names is not None:
        unknown = sorted(set(names) - set(selected))
        if unknown:
            raise KeyError(f"no check {', '.join(unknown)} in scoi/db/sql/check.sql")
        selected = {n: selected[n] for n in selected if n in names}
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    by_statement: dict[str, list[str]] = {}
    for name, (_, statement) in selected.items():
        by_statement.setdefault(statement, []).append(name)
    # the fused passes (the long ones) first, longest first as check.sql orders them, so the
    # sessions end close together
    place = {body: i for i, body in enumerate(load("check").values())}
    work: queue.SimpleQueue[tuple[str, list[str]]] = queue.SimpleQueue()
    for statement in sorted(by_statement, key=lambda s: (_PASS_CHECKS.search(s) is None, place[s])):
        work.put((statement, by_statement[statement]))
    done: queue.SimpleQueue[list[CheckResult] | BaseException] = queue.SimpleQueue()
    conns: list[psycopg.Connection] = []
    threads: list[threading.Thread] = []
    results: dict[str, CheckResult] = {}
    stop = threading.Event()
    with _sigterm_exits():
        try:
            snapshot = None
            for _ in range(min(jobs, len(by_statement)) or 1):
                conns.append(conn := connect(url, autocommit=True, application_name=APPLICATION_NAME))
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                if snapshot is None:
                    snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
                else:
                    conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
                conn.execute(sql.SQL("SET LOCAL work_mem = {}").format(sql.Literal(DB_CHECK_WORK_MEM)))
            for conn in conns:
                threads.append(threading.Thread(target=_worker, args=(conn, selected, work, done, stop), daemon=True))
                threads[-1].start()
            while len(results) < len(selected):
                item = _get(done)
                if isinstance(item, BaseException):
                    raise item
                for r in item:
                    results[r.name] = r
                    if progress is not None:
                        progress(r)
        except BaseException:
            while True:  # no thread starts another statement; the running ones are cancelled
                try:
                    work.get_nowait()
                except queue.Empty:
                    break
            stop.set()
            for thread in threads:  # cancelled again while it runs: it may have just started one
                while thread.is_alive():
                    for conn in conns:
                        conn.cancel_safe()
                    thread.join(0.2)
            raise
        finally:
            for thread in threads:
                thread.join()
            for conn in conns:
                conn.close()
    return [results[n] for n in selected]


def _get(done: queue.SimpleQueue) -> Any:
    """The next item, waiting in short slices so that Ctrl-C and SIGTERM reach the main thread."""
    while True:
        try:
            return done.get(timeout=0.2)
        except queue.Empty:
            continue


def _worker(conn: psycopg.Connection, selected: dict[str, tuple[str, str]],
            work: queue.SimpleQueue, done: queue.SimpleQueue, stop: threading.Event) -> None:
    """Run statements off ``work`` until it is empty or ``stop`` is set; each statement's
    checks go to ``done`` together (a pass's columns are named after its checks). Any error
    goes to ``done`` too: the calling thread must never wait for a thread that is gone."""
    try:
        while not stop.is_set():
            try:
                statement, group = work.get_nowait()
            except queue.Empty:
                return
            t0 = time.perf_counter()
            if _is_comment_only(statement):
                value = index_pass(conn, stop)
            else:
                cur = conn.execute(statement)
                row = cur.fetchone()
                columns = [c.name for c in cur.description]
                value = dict(zip(columns, row)) if len(columns) > 1 else {group[0]: row[0]}
            seconds = time.perf_counter() - t0
            missing = set(group) - set(value)
            if missing:
                raise ValueError(f"check.sql: no column {', '.join(sorted(missing))} in the pass computing it")
            done.put([CheckResult(n, selected[n][0], int(value[n]), seconds) for n in group])
    except BaseException as e:  # noqa: BLE001 - handed to the calling thread
        done.put(e)


class Cancelled(Exception):
    """The checks were stopped while :func:`index_pass` was between two reads."""


def index_pass(conn: psycopg.Connection, stop: threading.Event | None = None) -> dict[str, int]:
    """The checks of ``pass_index`` on ``conn``'s transaction: every token's posting blocks
    and directory, and every forward row, streamed (check_index.sql) and compared in
    numpy (scoi.core.blockcheck): memory follows the vocabulary and one chunk, not the
    corpus. ``stop`` set between two chunks ends it (a running read is cancelled by the
    caller, on the server)."""

    def check_stop() -> None:
        if stop is not None and stop.is_set():
            raise Cancelled()

    vocab = conn.execute(_INDEX_SQL["vocab"]).fetchall()
    tally = IndexTally(np.array([r[0] for r in vocab], dtype=np.int64), [r[1] for r in vocab],
                       np.array([r[2] for r in vocab], dtype=np.int64))
    cur = conn.cursor(binary=True)
    chunk: list[tuple] = []
    for row in cur.stream(_INDEX_SQL["blocks"]):
        chunk.append(row)
        if len(chunk) == _TOKENS_PER_CHUNK:
            check_stop()
            tally.add_blocks(chunk)
            chunk = []
    tally.add_blocks(chunk)
    for bad, sids, dls, counts, langs, tid_bytes, tf_bytes in cur.stream(_INDEX_SQL["docs"],
                                                                         {"chunk": _SENTENCES_PER_CHUNK}):
        check_stop()
        tally.bad_docs += bad
        if sids:
            counts = np.array(counts, dtype=np.int64)
            tally.add_docs(np.array(sids), np.array(dls), counts, array_elements(bytes(tid_bytes), counts, 4),
                           array_elements(bytes(tf_bytes), counts, 2), langs)
    return tally.violations()


class Terminated(SystemExit):
    """SIGTERM during the checks (a SystemExit, so that the statements are cancelled)."""


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM raises SystemExit meanwhile (on the main thread), so the statements are
    cancelled as on Ctrl-C instead of the process dying with the backends still at work."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["APPLICATION_NAME", "CheckResult", "Terminated", "checks", "default_jobs", "index_pass", "run_checks"]
