"""The word rule (scoi.core.coverage.is_word: a letter or digit, Unicode L* and N*) as explicit
code-point ranges, for the places that cannot call Python: the ``is_word(text)`` SQL function
the coverage-gaps view filters with (migration 0040 embeds :func:`word_class_regex`'s output
as a fixed literal; tests/unit/test_word_rule.py holds the two equal).

Why ranges: PostgreSQL's ``[[:alnum:]]`` follows the database's LC_CTYPE (under ``C``
nothing beyond ASCII, under C.UTF-8 combining marks and circled letters but no superscript
digits), while a bracket range compares code points in a UTF8 database whatever the
collation, so a class spelled as ranges means the same on every server.
"""

from __future__ import annotations

import sys
import unicodedata

from scoi.core.coverage import is_word

UNICODE_VERSION = unicodedata.unidata_version
"""The Unicode version of the running Python's unicodedata, which :func:`word_ranges` follows."""


def word_ranges() -> list[tuple[int, int]]:
    """The maximal runs (first, last) of code points that :func:`is_word` counts as a word
    on their own, ascending: read off the rule itself so the ranges cannot drift from it."""
    out: list[tuple[int, int]] = []
    for cp in range(sys.maxunicode + 1):
        if is_word(chr(cp)):
            if out and out[-1][1] == cp - 1:
                out[-1] = (out[-1][0], cp)
            else:
                out.append((cp, cp))
    return out


def escape(cp: int) -> str:
    """A code point as a regex escape both PostgreSQL's and Python's engines read alike."""
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def word_class_regex(ranges: list[tuple[int, int]] | None = None) -> str:
    """A bracket expression matching one word character: ``[\\u0030-\\u0039...]``, ASCII only
    (escapes), so a migration can embed it as is and psql shows it without surprises."""
    parts = (escape(a) if a == b else f"{escape(a)}-{escape(b)}" for a, b in (ranges or word_ranges()))
    return "[" + "".join(parts) + "]"
