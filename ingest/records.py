"""The record every corpus reader yields, and the checks that make one storable.

A record is refused here, before anything is written, when PostgreSQL could not store or
index it (NUL characters, lone surrogates, over-long sides or words, unstorable metadata),
so every reader reports the same problems with the same words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from scoi.text.textfile import TextFileError

# What the database can store and index, checked before anything is written:
# to_tsvector(text) (the sentence_search view) is at most 1 MB; bm25_doc.dl and tfs are smallint (at
# most 32,767 tokens per sentence); vocab (lang,
# token) is a unique btree, whose rows must stay under ~2,700 bytes. A side of at most
# MAX_SIDE_CHARS characters (<= 40 KB of UTF-8, <= 10,000 tokens) and words of at most
# MAX_WORD_CHARS characters (a Moses token escapes a character to at most 6 bytes:
# <= 1,800 bytes, under the btree limit and tsvector's 2 KB per word) stay far within them.
MAX_SIDE_CHARS = 10_000
MAX_WORD_CHARS = 300


@dataclass(frozen=True)
class Record:
    file: str
    line: int
    src: str | None  # None when the record is bad (see problem)
    tgt: str | None
    problem: str | None = None
    meta: dict[str, Any] | None = None  # stored as pair.meta (docs/ingest.md, "Metadata")
    note: str | None = None  # something the run should report about a good record (TMX variants dropped)


class InputError(TextFileError):
    """A problem in an input file, located by file and line."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def checked_record(file: str, line: int, src: str, tgt: str, meta: dict[str, Any] | None = None,
                   note: str | None = None) -> Record:
    """The record of one pair as read (sides stripped), or a bad record saying why the
    database could not store it."""
    src, tgt = src.strip(), tgt.strip()
    if "\x00" in src or "\x00" in tgt:
        return Record(file, line, None, None, "contains a NUL character (U+0000), which PostgreSQL text cannot store")
    for side, text in (("source", src), ("target", tgt)):
        if m := _SURROGATE.search(text):  # JSON's "\ud800" without its pair: no UTF-8 encoding exists
            return Record(file, line, None, None,
                          f"{side} side holds a lone surrogate U+{ord(m.group()):04X} at column {m.start() + 1} "
                          "(half of a UTF-16 pair), which neither UTF-8 nor PostgreSQL can store")
    if not src and not tgt:
        return Record(file, line, None, None, "both sides are empty")
    if not src:
        return Record(file, line, None, None, "source side is empty")
    if not tgt:
        return Record(file, line, None, None, "target side is empty")
    for side, text in (("source", src), ("target", tgt)):
        if len(text) > MAX_SIDE_CHARS:
            return Record(file, line, None, None,
                          f"{side} side is {len(text):,} characters long; expected at most {MAX_SIDE_CHARS:,} "
                          "characters per side (one sentence or segment, not a document)")
        if len(text) > MAX_WORD_CHARS:
            word = max(text.split(), key=len)
            if len(word) > MAX_WORD_CHARS:
                return Record(file, line, None, None,
                              f"{side} side has a word of {len(word):,} characters ({word[:20]!r}...); expected "
                              f"words of at most {MAX_WORD_CHARS} characters (longer ones cannot be indexed)")
    if meta and (bad := _unstorable(meta)):
        return Record(file, line, None, None, f"metadata {bad}, which PostgreSQL jsonb cannot store")
    return Record(file, line, src, tgt, meta=meta or None, note=note)


def _unstorable(value: Any) -> str | None:
    """Why a metadata value cannot be stored as jsonb (a NUL or a lone surrogate in a key
    or string), or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character (U+0000)"
        if _SURROGATE.search(value):
            return "holds a lone surrogate (half of a UTF-16 pair)"
        return None
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"holds {value} (not a JSON number)"
    if isinstance(value, dict):
        return next((why for k, v in value.items() if (why := _unstorable(k) or _unstorable(v))), None)
    if isinstance(value, list):
        return next((why for v in value if (why := _unstorable(v))), None)
    return None

