"""CAT-tool files a job reads and writes back: XLIFF 1.2 and 2.x (scoi.formats.xliff), gettext
PO (scoi.formats.po). Each reader turns a file into segments (a key, the line, the source with
its inline codes as placeholders, scoi.core.inline); each writer fills the same file's targets
from the job's outputs. XML is parsed by scoi.formats.xmlsafe only."""

from __future__ import annotations

from dataclasses import dataclass, field


class DocumentError(ValueError):
    """A file that cannot be read or written back: the message starts with ``file:line:``
    (or the file, or the unit id) and says what was expected."""


@dataclass(frozen=True)
class Segment:
    """One thing to translate: ``key`` (unique in the file, the item's ``source_key``), the
    line it starts on, and ``masked`` (the source, its codes as placeholders)."""

    key: str
    line: int
    masked: str


@dataclass(frozen=True)
class Filled:
    """A segment's translation for the writer: the model's answer (placeholders in it), the
    QA flags of the item (empty: none), and the masked source it translates (None: not
    checked; else a segment whose source differs now, a newer file's, is left alone)."""

    answer: str
    qa: list[str] = field(default_factory=list)
    masked: str | None = None

    def fits(self, masked: str) -> bool:
        return self.masked is None or self.masked == masked


__all__ = ["DocumentError", "Filled", "Segment"]
