"""Reading the translation back out of a raw model continuation (docs/method.md §6):
the first line before ``###``, one pair of surrounding quotes removed.
"""

from __future__ import annotations

__all__ = ["QUOTE_PAIRS", "extract_answer"]

#: Quote pairs stripped from around an answer when both ends match: straight double and
#: single quotes, English curly quotes, French guillemets and German low-high quotes.
QUOTE_PAIRS: tuple[tuple[str, str], ...] = (
    ('"', '"'),
    ("'", "'"),
    ("\u201c", "\u201d"),  # “ ”
    ("\u00ab", "\u00bb"),  # « »
    ("\u201e", "\u201c"),  # „ “
)


def extract_answer(text: str) -> str:
    """The translation inside a raw model continuation (docs/method.md §6).

    Skip leading whitespace and newlines (models often answer a prompt ending in a space
    with a newline first), keep the text before the first ``###`` and before the next
    newline, strip whitespace, then remove one pair of surrounding quotes — only when the
    first and last characters form a matching pair from :data:`QUOTE_PAIRS` — and strip
    the whitespace inside (French guillemets are usually spaced: ``« Oui »``). A lone
    quote at one end is kept: it is as likely part of the sentence as a broken wrapper.
    """
    answer = text.lstrip()
    answer = answer.split("###", 1)[0]
    answer = answer.split("\n", 1)[0]
    answer = answer.strip()
    if len(answer) >= 2:
        for left, right in QUOTE_PAIRS:
            if answer.startswith(left) and answer.endswith(right):
                answer = answer[len(left) : len(answer) - len(right)].strip()
                break
    return answer
