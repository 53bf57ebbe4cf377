"""Bounds of the numbers people pass (``-k``, ``--max-attempts``, pool and batch sizes...).

One table, read by the CLI options (Typer ``min``/``max``) and by the Python API checks
(``JobSpec`` validation, ``ExperimentSpec``, the selector), so an out-of-range number is one
clear line before anything is stored, never a database ``integer out of range``. Each bound
is what a column can hold (PostgreSQL ``integer``: 2**31 - 1) and what makes sense (a
prompt with more than 256 examples does not fit any model's context). Pure: no I/O.
"""

from __future__ import annotations

__all__ = ["LIMITS", "INT32_MAX", "check_range"]

INT32_MAX = 2**31 - 1

#: name -> (lowest, highest) accepted.
LIMITS: dict[str, tuple[int, int]] = {
    "k": (0, 256),                  # examples per prompt
    "pool": (1, 100_000),           # BM25-preselected candidates per sentence
    "max_attempts": (1, 100),       # attempts per item
    "max_new_tokens": (1, 65_536),  # generation limit per item
    "seed": (0, INT32_MAX),         # stored in integer columns (experiment_job.seed)
    "random_seeds": (1, 100),       # seeds of the random method in an experiment
    "batch_size": (1, 100_000),     # pairs / sentences / items per batch
    "workers": (0, 256),            # processes
    "concurrency": (1, 1024),       # worker threads / requests in flight
    "limit": (1, 1_000_000),        # rows listed
    "samples": (1, 1_000_000),      # bootstrap resamples
    "ef_search": (1, 1000),         # pgvector's hnsw.ef_search accepts 1..1000
    "template_chars": (1, 100_000),  # a user prompt template's text, stored with its job
    "gaps_limit": (1, 1000),        # rows per kind of a coverage-gaps report (scoi serve)
}


def check_range(name: str, value: int, option: str | None = None) -> int:
    """``value`` if within ``LIMITS[name]``, else ValueError naming ``option`` (default
    ``--name``) and the accepted range."""
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        label = option or "--" + name.replace("_", "-")
        raise ValueError(f"{label} must be an integer from {low} to {high}, not {value!r}")
    return value
