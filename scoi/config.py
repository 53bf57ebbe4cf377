"""Where scoi keeps its state, read from the environment.

Only environment variables and defaults live here, so every entry point (CLI, API,
tests, workers) resolves the database and the parsers the same way.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from pathlib import Path

ENV_DATABASE_URL = "SCOI_DATABASE_URL"
# Selection may read from a streaming replica of that database; writes stay on it.
ENV_READ_DATABASE_URL = "SCOI_READ_DATABASE_URL"
ENV_READ_MAX_LAG = "SCOI_READ_MAX_LAG"  # seconds; a replica further behind is not read
ENV_HOME = "SCOI_HOME"
ENV_PARSERS = "SCOI_PARSERS"
ENV_DEBUG_SQL = "SCOI_DEBUG_SQL"
# Where table sources in scoi's own database are read (as a read-only role; docs/security.md, Table sources).
ENV_SOURCE_DATABASE_URL = "SCOI_SOURCE_DATABASE_URL"
# Set by ingest for the fork server its parse workers are forked from (ingest/preload.py).
ENV_PRELOAD_PIPELINES = "SCOI_PRELOAD_PIPELINES"  # comma-separated lang=pipeline
ENV_PRELOAD_WITHOUT_TORCH = "SCOI_PRELOAD_WITHOUT_TORCH"  # "1": no pipeline needs torch, skip its import


# Default home for root: the embedded server then runs as the 'pgserver' account, which
# must reach the data dir without scoi opening root's home (README: The embedded database).
ROOT_HOME = Path("/var/lib/scoi")


def scoi_home() -> Path:
    """Directory for the embedded database and other local state."""
    value = os.environ.get(ENV_HOME)
    if value:
        # Absolute at once: the server's socket path goes into a URL, where a relative
        # "relhome/pgdata" reads as a host name (the server started, then nobody reached it).
        return Path(value).expanduser().absolute()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return ROOT_HOME
    import platformdirs

    return Path(platformdirs.user_data_dir("scoi", appauthor=False))


def database_url_from_env() -> str | None:
    """The user's own PostgreSQL server, if they configured one."""
    value = os.environ.get(ENV_DATABASE_URL, "").strip()
    return value or None


def source_database_url_from_env() -> str | None:
    """The URL table sources in scoi's database are read through (its role: scoi_reader, or
    another read-only role), if the user set one."""
    value = os.environ.get(ENV_SOURCE_DATABASE_URL, "").strip()
    return value or None


def read_database_url_from_env() -> str | None:
    """A streaming replica of the database that selection reads from, if configured."""
    value = os.environ.get(ENV_READ_DATABASE_URL, "").strip()
    return value or None


def read_max_lag_from_env() -> float | None:
    """``SCOI_READ_MAX_LAG``: seconds a replica may be behind the primary and still be read
    (None: no limit). A bad value is refused with the value and what was expected."""
    raw = os.environ.get(ENV_READ_MAX_LAG, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{ENV_READ_MAX_LAG}={raw!r}: expected a number of seconds >= 0 (e.g. 5)")
    return value


# How one preselection reads at scale (docs/preselection.md): unset, the defaults hold.
ENV_BM25_CACHE_POSTINGS = "SCOI_BM25_CACHE_POSTINGS"  # postings of common lists kept decoded per process
ENV_BM25_CONNECTIONS = "SCOI_BM25_CONNECTIONS"  # connections one query's ranges are read on, side by side


def int_from_env(name: str, low: int, high: int | None = None) -> int | None:
    """An integer setting from ``low`` to ``high`` (None: unset). A bad value is refused with
    the value and what was expected."""
    raw = os.environ.get(name, "").strip().replace("_", "")
    if not raw:
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 30 or int(raw) < low or (high is not None and int(raw) > high):
        upto = f" and <= {high}" if high is not None else ""
        raise ValueError(f"{name}={os.environ[name][:40]!r}: expected a whole number >= {low}{upto}")
    return int(raw)


def parser_overrides_from_env() -> dict[str, str]:
    """Parse ``SCOI_PARSERS="fr=fr_core_news_md,en=en_core_web_trf"``."""
    return parse_parser_overrides(os.environ.get(ENV_PARSERS, "").split(","))


def debug_sql_from_env() -> bool:
    """``SCOI_DEBUG_SQL`` set (non-empty): log SQLAlchemy's statements."""
    return bool(os.environ.get(ENV_DEBUG_SQL))


def preload_environment(pipelines: dict[str, str], without_torch: bool) -> dict[str, str]:
    """The variables that tell a fork server which pipelines to load (see preload_from_env)."""
    return {ENV_PRELOAD_PIPELINES: ",".join(f"{lang}={name}" for lang, name in sorted(pipelines.items())),
            ENV_PRELOAD_WITHOUT_TORCH: "1" if without_torch else "0"}


def preload_from_env() -> tuple[dict[str, str], bool]:
    """(lang -> pipeline, skip the torch import?) as preload_environment set them."""
    items = (item.split("=", 1) for item in os.environ.get(ENV_PRELOAD_PIPELINES, "").split(",") if "=" in item)
    return {lang: name for lang, name in items}, os.environ.get(ENV_PRELOAD_WITHOUT_TORCH) == "1"


def parse_parser_overrides(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Turn ``["fr=fr_core_news_md"]`` into ``{"fr": "fr_core_news_md"}``."""
    out: dict[str, str] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        lang, sep, name = item.partition("=")
        if not sep or not lang.strip() or not name.strip():
            raise ValueError(f"parser override {item!r}: expected LANG=PIPELINE, e.g. fr=fr_core_news_md")
        out[lang.strip()] = name.strip()
    return out


@contextlib.contextmanager
def environment(values: dict[str, str], *, keep_set: bool = False) -> Iterator[None]:
    """Set environment variables for the duration of a block, then restore them.

    For settings read by processes started (or libraries imported) inside the block.
    ``keep_set``: a variable the user already set is left alone.
    """
    if keep_set:
        values = {k: v for k, v in values.items() if k not in os.environ}
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --------------------------------------------------------------------------- backends
ENV_OPENAI_BASE_URL = ("SCOI_OPENAI_BASE_URL", "OPENAI_BASE_URL")
ENV_OPENAI_API_KEY = ("SCOI_OPENAI_API_KEY", "OPENAI_API_KEY")
ENV_HF_OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
ENV_HF_ENDPOINT = "HF_ENDPOINT"
DEFAULT_HF_ENDPOINT = "https://huggingface.co"


def _first_set(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def openai_base_url() -> str | None:
    """The OpenAI-compatible server's URL (scoi's variable first, then the SDK's)."""
    return _first_set(ENV_OPENAI_BASE_URL)


def openai_api_key() -> str | None:
    """The API key for that server, if any (no Authorization header without one)."""
    return _first_set(ENV_OPENAI_API_KEY)


# The worker's own trust settings (docs/security.md, Workers): never taken from a stored job.
ENV_OPENAI_ALLOWED_BASE_URLS = "SCOI_OPENAI_ALLOWED_BASE_URLS"  # comma-separated; the API key may go there
ENV_TRUST_REMOTE_CODE = "SCOI_TRUST_REMOTE_CODE"  # "1": local models may run their own code
ENV_DEST_DIR = "SCOI_DEST_DIR"  # the only directory file destinations are written in
ENV_SOURCE_DIR = "SCOI_SOURCE_DIR"  # the only directory schedules' file sources are read in


def openai_allowed_base_urls() -> list[str]:
    """``SCOI_OPENAI_ALLOWED_BASE_URLS``: base URLs besides the environment's own that the
    environment's API key may be sent to (scoi.backends.openai_backend: a job naming
    another ``base_url`` gets no key, since whoever stores jobs does not own it)."""
    return [u.strip() for u in os.environ.get(ENV_OPENAI_ALLOWED_BASE_URLS, "").split(",") if u.strip()]


def trust_remote_code_from_env() -> bool:
    """``SCOI_TRUST_REMOTE_CODE`` on: this worker lets local models run their own Python code."""
    return os.environ.get(ENV_TRUST_REMOTE_CODE, "").strip().lower() in {"1", "true", "yes", "on"}


def dest_dir_from_env() -> Path | None:
    """``SCOI_DEST_DIR``: the directory file destinations may be written in (None: none may)."""
    value = os.environ.get(ENV_DEST_DIR, "").strip()
    return Path(value).expanduser().absolute() if value else None


def source_dir_from_env() -> Path | None:
    """``SCOI_SOURCE_DIR``: the directory schedules' file sources may be read in (None: none may)."""
    value = os.environ.get(ENV_SOURCE_DIR, "").strip()
    return Path(value).expanduser().absolute() if value else None


def hf_offline() -> bool:
    """Whether Hugging Face downloads are off. Read at each call: huggingface_hub freezes
    its own copy at import, and tests and users set it later."""
    return any(os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in ENV_HF_OFFLINE)


def hf_endpoint() -> str:
    """The Hugging Face hub URL (a mirror when set)."""
    return os.environ.get(ENV_HF_ENDPOINT) or DEFAULT_HF_ENDPOINT


def sacrebleu_seed() -> int | None:
    """The bootstrap seed, read as sacreBLEU reads it (``SACREBLEU_SEED``, default 12345;
    ``none`` for a fresh one each run), so scoi's COMET resampling matches its BLEU/chrF one."""
    seed = os.environ.get("SACREBLEU_SEED", "12345")
    return None if seed.strip().lower() == "none" else int(seed)


# --------------------------------------------------------------------------- table sources and destinations
def url_from_env(name: str) -> str | None:
    """The database URL in the environment variable ``name``: a job's source or destination
    in another database names the variable (``--source-url env:DOCS_URL``) rather than
    storing a URL that holds a password."""
    value = os.environ.get(name, "").strip()
    return value or None
