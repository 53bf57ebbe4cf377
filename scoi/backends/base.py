"""The small interface every LLM backend implements.

A backend turns prompts into raw continuations. It stops decoding at the answer delimiter
but does not extract the answer: callers apply :func:`scoi.core.answer.extract_answer`, so
the stored raw text can always be re-extracted later.

Backends are built from spec strings by :func:`scoi.backends.loader.load_backend`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from scoi.core.prompt import DEFAULT_STOP_MARKERS

__all__ = ["Backend", "BackendError", "Generation", "cut_at_stop"]


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
