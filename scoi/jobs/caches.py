"""What a worker builds once and reuses for every batch: job rows, selectors (one per
direction and selection settings) and backends (one per model spec and options). With
``read_url`` the selectors read from that streaming replica (scoi.db.reads). The time spent
loading parsers and models is counted in ``setup_seconds``: one-off, not per-item overhead.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

import psycopg

from scoi.core import defaults
from scoi.core.methods import method
from scoi.jobs.spec import Job
from scoi.jobs.store import get_job


def selector_settings(job: Job) -> dict[str, Any]:
    """The Selector keyword arguments that select a job's examples, read from its stored
    params (missing ones: the defaults). A method that reads no tree gets a selector of
    its own method, which runs on a source stored without trees; the others share the
    default method's (each selection names its method)."""
    p = job.params
    return {"src": job.src_lang, "tgt": job.tgt_lang, "corpora": p.get("corpora") or None,
            "method": defaults.METHOD if method(job.method).trees else job.method,
            "pool": p.get("pool", defaults.POOL), "fill": p.get("fill", defaults.FILL),
            "seed": p.get("seed", defaults.SEED), "parser": (p.get("parsers") or {}).get(job.src_lang),
            "embedder": p.get("embedder"), "rbm25_variant": p.get("rbm25_variant", defaults.RBM25_VARIANT),
            "where": p.get("where") or None, "min_match": p.get("min_match"), "ctq_model": p.get("ctq_model")}


class WorkerCaches:
    """A worker's job rows, selectors and backends, each built on first use."""

    def __init__(self, conn: psycopg.Connection, url: str, *, read_url: str | None = None,
                 log: Callable[[str], None] = lambda msg: None) -> None:
        self.conn, self.url, self.read_url, self.log = conn, url, read_url, log
        self.setup_seconds = 0.0  # loading selectors, parsers and models
        self._jobs: dict[int, Job] = {}
        self._selectors: dict[tuple, Any] = {}
        self._backends: dict[tuple, Any] = {}  # a Backend, or the exception its loading raised

    def job(self, job_id: int) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            job = self._jobs[job_id] = get_job(self.conn, job_id)
        return job

    def selector(self, job: Job) -> tuple[Any, tuple]:
        """The job's selector (scoi.selection.selector.Selector, its parser loaded) and its cache key."""
        settings = selector_settings(job)
        # The treeless methods share one selector per settings (its method is only the
        # first job's: each selection names its own).
        key = (*((n, tuple(v) if isinstance(v, list) else tuple(sorted(v.items())) if isinstance(v, dict) else v)
                 for n, v in settings.items() if n != "method"),
               not method(job.method).trees)
        sel = self._selectors.get(key)
        if sel is None:
            t0 = time.perf_counter()
            from scoi.selection.selector import Selector

            sel = Selector(url=self.url, read_url=self.read_url, **settings)
            sel.warm()  # load the parser now, not inside the first item's timing
            self._selectors[key] = sel
            self.setup_seconds += time.perf_counter() - t0
        return sel, key

    def drop_selector(self, key: tuple) -> None:
        """Close and forget a selector (its connection broke: the next item gets a new one)."""
        sel = self._selectors.pop(key, None)
        if sel is not None:
            sel.close()

    def drop_selectors(self) -> None:
        """Close and forget every selector (the database restarted: each is built again)."""
        for key in list(self._selectors):
            self.drop_selector(key)

    def backend(self, job: Job) -> Any:
        """The job's backend; a backend that failed to load raises its error again, at once."""
        from scoi.backends.loader import load_job_backend

        options = job.params.get("backend_options") or {}
        key = (job.model, json.dumps(options, sort_keys=True))
        backend = self._backends.get(key)
        if backend is None:
            self.log(f"loading {job.model}")
            t0 = time.perf_counter()
            try:
                backend = load_job_backend(job.model, options)  # never a stored option that runs code
            except Exception as e:  # noqa: BLE001 - kept, so every item gets the same error quickly
                backend = e
            self._backends[key] = backend
            self.setup_seconds += time.perf_counter() - t0
        if isinstance(backend, BaseException):
            raise backend.with_traceback(None)
        return backend

    def backend_retries(self) -> int:
        """Retries the loaded backends made (an HTTP backend counts them in ``retries``; a
        local model has none): a server restart shows in the summary, not only in timings."""
        return sum(getattr(b, "retries", 0) for b in self._backends.values() if not isinstance(b, BaseException))

    def close(self) -> None:
        for sel in self._selectors.values():
            sel.close()
        for backend in self._backends.values():
            close = getattr(backend, "close", None)
            if callable(close):
                close()


__all__ = ["WorkerCaches", "selector_settings"]
