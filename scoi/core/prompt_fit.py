"""Fitting a prompt into a model's context: drop the last-ranked examples until the prompt
and the answer's tokens fit (pure: the caller passes the renderer and the token counter).
"""

from __future__ import annotations

from typing import Callable, Sequence

from scoi.core.prompt import Example

__all__ = ["PromptTooLong", "fit_prompt"]


class PromptTooLong(ValueError):
    """Even the prompt without examples leaves no room for the answer in the model's
    context: the item cannot be translated by this model (retrying would not help)."""


def fit_prompt(render: Callable[[Sequence[Example]], str], examples: Sequence[Example],
               count_tokens: Callable[[str], int], context: int, max_new_tokens: int) -> tuple[str, int]:
    """The prompt ``render(examples[:n])`` for the largest ``n`` whose tokens plus
    ``max_new_tokens`` fit in ``context``, and that ``n``.

    ``examples`` come in selection order (best first), so the example dropped each time is
    the last-ranked one, wherever the prompt order puts it (first, by default); a prompt
    past its model's positions fails inside the model (``IndexError``) or degrades
    silently. Raises PromptTooLong when even no example fits.
    """
    room = context - max_new_tokens
    n = len(examples)
    while True:
        prompt = render(examples[:n])
        needed = count_tokens(prompt)
        if needed <= room:
            return prompt, n
        if n == 0:
            raise PromptTooLong(
                f"the prompt needs {needed} tokens without any example, and with max_new_tokens "
                f"{max_new_tokens} that exceeds the model's context of {context} tokens; shorten the "
                "sentence, lower max_new_tokens or use a model with a longer context")
        n -= 1
