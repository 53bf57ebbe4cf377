"""Parse worker processes and the batch runner that feeds them, shared by ingest and ``scoi reanalyze``.

Workers are forked from a fork server that loaded the spaCy pipelines once
(ingest/preload.py). A :class:`BatchRunner` hands them parse tasks, keeps a bounded
number in flight (memory stays constant in input size), and handles each result in the
main process, in task order, while the workers parse the next ones.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import multiprocessing.pool
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import NamedTuple

from scoi.analysis import Analysis, Analyzer, analyzer
from scoi.config import environment, preload_environment
from scoi.parsers import NATASHA, needs_torch

_ANALYZERS: dict[str, Analyzer] = {}
# BLAS/OpenMP thread pools of numpy (thinc's matrix products). One parse process is best
# served by one thread: measured here (benchmarks/bench_ingest.py), raw nlp.pipe went from
# 725 to 1145 sentences/s and 1-worker ingest from 581 to 807 with one BLAS thread instead
# of OpenBLAS's default of one per core (the threads contend), and N workers with N
# threads each oversubscribe the cores.
SINGLE_THREAD_ENV = {name: "1" for name in (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}


class ParseTask(NamedTuple):
    no: int                      # task number, in the order results are handled
    last: bool                   # the last task of its batch: write the batch when it is parsed
    texts: dict[str, list[str]]  # lang -> texts to parse (may be empty)


class Parsed(NamedTuple):
    no: int
    last: bool
    analyses: dict[str, list[Analysis]]  # lang -> one analysis per text of the task
    seconds: float                       # the worker's parse time (to report how busy workers were)
    cpu_seconds: float = 0.0             # the worker's CPU time on the task
    parser_cpu_seconds: float = 0.0      # of which in the parser (spaCy, natasha)


def count_repaired(counts: dict[str, int], analyses: dict[str, list[Analysis]]) -> None:
    """Add to ``counts`` (lang -> sentences) the parses in ``analyses`` that were not trees
    and were made trees (scoi.analysis.made_tree, NatashaTrees)."""
    for lang, items in analyses.items():
        n = sum(a.repaired for a in items)
        if n:
            counts[lang] = counts.get(lang, 0) + n


def repaired_notes(counts: dict[str, int], pipelines: dict[str, str]) -> list[str]:
    """One note per language with repaired parses, saying how they were made trees."""
    how = {NATASHA: "the best tree of natasha's arc scores"}
    return [f"{lang}: {n} parse{'s' if n != 1 else ''} by {pipelines.get(lang, '?')} {'were' if n != 1 else 'was'} "
            f"not a tree; stored as {how.get(pipelines.get(lang, ''), 'repaired by the rule of docs/languages.md')}"
            for lang, n in sorted(counts.items())]


def single_threaded_children() -> contextlib.AbstractContextManager[None]:
    """Processes started inside this block get one BLAS thread each (read at their start).

    The user's own setting wins: a variable already set is left alone.
    """
    return environment(SINGLE_THREAD_ENV, keep_set=True)


# glibc's malloc options (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Free heap a parse process keeps instead of giving it back to the kernel, and the size
#: from which a block gets its own mapping (glibc's largest allowed on 64-bit).
KEEP_FREE_HEAP = 256 << 20
OWN_MAPPING_FROM = 32 << 20


def keep_freed_memory() -> bool:
    """Have glibc keep freed memory in this process for reuse; False where malloc is not glibc's.

    A parse task allocates and frees tens of MB (spaCy's arrays, the analyses). With
    glibc's defaults a forked worker gave most of it back to the kernel after each task
    and faulted it in again zeroed in the next: about 50 page faults and 0.12 ms of
    kernel CPU per pair, 6% of its CPU (measured here against the same worker with this
    setting: 157,000 minor faults per 3,072 pairs, then none; raw parsing / worker CPU
    0.85 → 0.92). Memory stays bounded: a worker's tasks are of a fixed size.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, KEEP_FREE_HEAP)) and bool(mallopt(_M_MMAP_THRESHOLD, OWN_MAPPING_FROM))


def init_worker(pipelines: dict[str, str], without_torch: bool) -> None:
    """Build the analysers of ``pipelines`` in this process (a worker, or the main one
    when parsing in-process)."""
    if without_torch:
        # thinc imports torch, when it is installed, only to offer torch-based layers; the
        # pipelines here have none (needs_torch), and skipping the import shortens every
        # worker's start by about 1.2 s of the 4 s it takes (measured here).
        sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    for lang, name in pipelines.items():
        _ANALYZERS[lang] = analyzer(lang, name)


def init_pool_worker(pipelines: dict[str, str], without_torch: bool) -> None:
    """Set up a worker process of the pool: :func:`keep_freed_memory`, then the analysers.
    Only here: the setting is the process's, and parsing in-process must not change the
    malloc of the program that called ingest."""
    keep_freed_memory()
    init_worker(pipelines, without_torch)


def analyze_task(task: ParseTask) -> Parsed:
    """Parse one task (in a worker initialised by :func:`init_worker`)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    out: dict[str, list[Analysis]] = {}
    parser_cpu = 0.0
    for lang, items in task.texts.items():
        out[lang], cpu = _ANALYZERS[lang].analyze_timed(items)
        parser_cpu += cpu
    return Parsed(task.no, task.last, out, time.perf_counter() - t0, time.process_time() - cpu0, parser_cpu)


_fork_server_without_torch: bool | None = None  # how this process started its fork server


def worker_pool(workers: int, pipelines: dict[str, str]) -> mp.pool.Pool:
    """``workers`` parse processes, forked from a fork server that has loaded the pipelines.

    Measured here with fr_core_news_sm + en_core_web_sm: 3-4 s of CPU per worker to load
    them with ``spawn``, paid once instead of once per worker.
    """
    global _fork_server_without_torch
    without_torch = not any(needs_torch(name) for name in pipelines.values())
    if _fork_server_without_torch and not without_torch:
        # The running fork server blocked the torch import (an earlier ingest in this
        # process); these pipelines need torch: start clean processes instead.
        ctx: mp.context.BaseContext = mp.get_context("spawn")
    else:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["ingest.preload"])
        if _fork_server_without_torch is None:
            _fork_server_without_torch = without_torch
    # The environment is read by the fork server, if this block starts it (ingest/preload.py).
    with single_threaded_children(), environment(preload_environment(pipelines, without_torch)):
        return ctx.Pool(workers, initializer=init_pool_worker, initargs=(pipelines, without_torch))


class BatchRunner(ABC):
    """Feeds :meth:`tasks` to parse workers and passes each result to :meth:`handle`, in order.

    ``workers <= 0`` parses in this process (debugging, tiny inputs). Otherwise worker
    processes start at the first task with something to parse: tasks whose texts are all
    stored already (a rerun) are handled at once, so a run that parses nothing does not
    pay the workers' 3-4 s start.
    """

    def __init__(self, workers: int, pipelines: dict[str, str], max_in_flight: int) -> None:
        self.workers = workers
        self.pipelines = pipelines
        self._in_flight = threading.Semaphore(max_in_flight)
        self._aborted = threading.Event()

    @abstractmethod
    def tasks(self) -> Iterator[ParseTask]:
        """The tasks in order; call :meth:`reserve` before building each one."""

    @abstractmethod
    def handle(self, result: Parsed) -> None:
        """Use one parsed task; call :meth:`done` for each task once its result is written."""

    def reserve(self) -> bool:
        """Wait for room for one more task in flight; False once the run is aborted."""
        while not self._in_flight.acquire(timeout=0.1):
            if self._aborted.is_set():
                return False
        return True

    def done(self, tasks: int = 1) -> None:
        """Free the room of ``tasks`` tasks whose results are written."""
        for _ in range(tasks):
            self._in_flight.release()

    def run(self) -> None:
        if self.workers <= 0:
            init_worker(self.pipelines, without_torch=False)
            for task in self.tasks():
                self.handle(analyze_task(task))
            return
        tasks = self.tasks()
        for first in tasks:
            if any(first.texts.values()):
                break
            self.handle(Parsed(first.no, first.last, {lang: [] for lang in first.texts}, 0.0))
        else:
            return
        with worker_pool(self.workers, self.pipelines) as pool:
            try:
                for result in pool.imap(analyze_task, itertools.chain([first], tasks), chunksize=1):
                    self.handle(result)
            except BaseException:
                # The pool's terminate() joins the thread feeding it tasks: unblock that thread
                # (it may be waiting in reserve()) or a failed write hangs the run forever.
                self._aborted.set()
                raise
