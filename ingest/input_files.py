"""Opening corpus files: ``.gz`` read transparently, read errors as one InputError, and
streams that cannot be read twice (pipes, FIFOs, ``/dev/stdin``) copied once so that
validation and writing read the same bytes.
"""

from __future__ import annotations

import gzip
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ingest.records import InputError
from scoi.text.textfile import TextFileError, raw_lines


class SpooledFile(str):
    """A file name as the user gave it (``/dev/fd/63``, a FIFO), which messages show, whose
    content is read from ``path``: a regular-file copy made once by :func:`read_once`."""

    path: str

    def __new__(cls, name: str, path: str) -> "SpooledFile":
        obj = super().__new__(cls, name)
        obj.path = path
        return obj


def rereadable(path: str | Path) -> bool:
    """Whether ``path`` can be read twice with the same content: a regular file (or a
    missing or odd one, which open_text reports). Pipes, FIFOs, ``/dev/stdin``, process
    substitutions and devices cannot: the second read finds nothing, or other bytes."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


@contextmanager
def read_once(files: list[str]) -> Iterator[list[str]]:
    """``files``, each that cannot be read twice copied once to a temporary regular file
    (a :class:`SpooledFile`; removed on exit), so validation and writing read the same
    bytes. Lines are bounded while copying: ``/dev/zero`` stops at its first MiB."""
    if all(rereadable(f) for f in files):
        yield files
        return
    with tempfile.TemporaryDirectory(prefix="scoi-ingest-") as tmp:
        out = []
        for i, name in enumerate(files):
            if rereadable(name):
                out.append(name)
                continue
            copy = os.path.join(tmp, f"{i}.spool")
            _spool(name, copy)
            out.append(SpooledFile(name, copy))
        yield out


def _spool(name: str, copy: str) -> None:
    """Copy ``name`` (read once) to ``copy``; an over-long line of a text stream stops it."""
    try:
        with open(name, "rb") as src, open(copy, "wb") as dst:
            if name.lower().endswith(".gz"):  # compressed bytes have no lines; decompression checks them
                shutil.copyfileobj(src, dst)
                return
            for _, raw in raw_lines(src, name):
                dst.write(raw + b"\n")
    except TextFileError as e:
        raise InputError(e.file, e.line, e.problem) from None
    except OSError as e:
        raise InputError(name, None, f"cannot be read once into a temporary file: {e.strerror or e}") from None


def open_text(path: str | Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` transparently."""
    p = Path(path.path if isinstance(path, SpooledFile) else path)
    if not p.exists():
        raise InputError(str(path), None, "file not found")
    if p.is_dir():
        raise InputError(str(path), None, "is a directory, not a corpus file")
    try:
        raw = open(p, "rb")
    except OSError as e:
        raise InputError(str(path), None, f"cannot be opened: {e.strerror or e}") from None
    if Path(path).suffix == ".gz":
        return _Checked(gzip.GzipFile(fileobj=raw, mode="rb"), str(path), raw)
    return _Checked(raw, str(path))


class _Checked:
    """A binary file whose read errors (not gzip, truncated or corrupt .gz, I/O errors)
    become one InputError naming the file, instead of a traceback."""

    def __init__(self, fh: IO[bytes], file: str, raw: IO[bytes] | None = None) -> None:
        self.fh, self.file, self.raw = fh, file, raw

    def _fail(self, e: BaseException) -> InputError:
        if isinstance(e, gzip.BadGzipFile):
            why = "is not a gzip file (a .gz name, but not gzip content)"
        elif isinstance(e, EOFError):
            why = "is a truncated gzip file (it ends before the end of the compressed data)"
        elif isinstance(e, zlib.error):
            why = f"is a corrupt gzip file ({e})"
        else:
            why = f"cannot be read: {getattr(e, 'strerror', None) or e}"
        return InputError(self.file, None, why)

    def read(self, n: int = -1) -> bytes:
        try:
            return self.fh.read(n)
        except (OSError, EOFError, zlib.error) as e:
            raise self._fail(e) from None

    def readline(self, n: int = -1) -> bytes:
        try:
            return self.fh.readline(n)
        except (OSError, EOFError, zlib.error) as e:
            raise self._fail(e) from None

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes without the line break): scoi.text.textfile's lines (``\\n``
        only, CRLF accepted, at most MAX_LINE_BYTES each, else an InputError)."""
        try:
            yield from raw_lines(self, self.file)
        except TextFileError as e:
            raise InputError(e.file, e.line, e.problem) from None

    def close(self) -> None:
        self.fh.close()
        if self.raw is not None:
            self.raw.close()

    def __enter__(self) -> "_Checked":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

