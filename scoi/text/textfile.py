"""Line-oriented text files as scoi reads them: job input, references, ``select --file``,
and (through ingest.input_files) corpus files.

One rule everywhere: a line ends at ``\\n`` (a ``\\r`` before it is dropped, so CRLF files
read the same), never at the other characters ``str.splitlines`` breaks on (VT, FF, NEL,
U+2028...), which occur inside sentences and would shift every later line against its
reference. A byte order mark at the start of a file is not text. A physical line is read
with a bounded buffer, so a file without newlines (``/dev/zero``, a binary file) is one
error, not all of memory. Bad text (invalid UTF-8, NUL, which PostgreSQL text cannot
hold, and a CR inside a line: CR-only line endings would join lines silently) is
reported with file:line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Protocol

#: Longest physical line read, in bytes: 100 times the 10,000-character side limit of a
#: corpus pair (at most 40 KB of UTF-8), so no real line comes near it, and reading one
#: never takes more than a MiB.
MAX_LINE_BYTES = 1 << 20

BOM = "\ufeff"


class TextFileError(ValueError):
    """A text file that cannot be read as lines of text; the message starts with file:line."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        self.file, self.line, self.problem = file, line, problem
        super().__init__(f"{file}:{line}: {problem}" if line else f"{file}: {problem}")


class _Readline(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


def too_long(file: str, line: int) -> TextFileError:
    return TextFileError(file, line, f"line is longer than {MAX_LINE_BYTES:,} bytes (1 MiB); expected text with "
                                     "one sentence per line (is this a text file?)")


def raw_lines(fh: _Readline, file: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without the line break) of a binary file, split at ``\\n`` only;
    a line longer than MAX_LINE_BYTES raises TextFileError as soon as it is seen."""
    n = 0
    while raw := fh.readline(MAX_LINE_BYTES + 1):
        n += 1
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        elif len(raw) > MAX_LINE_BYTES:
            raise too_long(file, n)
        yield n, raw.removesuffix(b"\r")


def decode_line(raw: bytes, line: int) -> tuple[str, str | None]:
    """A line's text (a leading BOM dropped from line 1) and what is wrong with it, if
    anything: invalid UTF-8, or a NUL character."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return "", f"invalid UTF-8 at byte {e.start + 1} of the line (expected UTF-8 text)"
    if line == 1:
        text = text.removeprefix(BOM)
    if "\x00" in text:
        return text, (f"contains a NUL character (U+0000) at column {text.index(chr(0)) + 1}, "
                      "which PostgreSQL text cannot store")
    if "\r" in text:  # a line ends at \n (or \r\n): a CR inside joins lines silently
        return text, (f"contains a carriage return (CR) at column {text.index(chr(13)) + 1}: the file has "
                      "CR-only line endings (\\r without \\n), read as one line, or a stray CR; convert them "
                      "to \\n (e.g. tr '\\r' '\\n')")
    return text, None


def read_lines(path: str | Path, fh: IO[bytes] | None = None) -> list[str]:
    """Every line of a UTF-8 text file (or of ``fh``, read once: pipes and ``/dev/stdin``
    work), without line breaks; the first bad line raises TextFileError naming it."""
    file = str(path)
    if fh is None:
        p = Path(path)
        if p.is_dir():
            raise TextFileError(file, None, "is a directory, not a text file")
        try:
            with open(p, "rb") as opened:
                return read_lines(path, opened)
        except FileNotFoundError:
            raise TextFileError(file, None, "file not found") from None
        except OSError as e:
            raise TextFileError(file, None, f"cannot be read: {e.strerror or e}") from None
    out = []
    for n, raw in raw_lines(fh, file):
        text, problem = decode_line(raw, n)
        if problem:
            raise TextFileError(file, n, problem)
        out.append(text)
    return out


__all__ = ["BOM", "MAX_LINE_BYTES", "TextFileError", "decode_line", "raw_lines", "read_lines", "too_long"]
