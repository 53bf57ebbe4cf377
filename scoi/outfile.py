"""Files scoi writes on a user's request (job and corpus exports): written whole or not at
all. The data goes to ``PATH.part`` in the same folder, created with O_EXCL | O_NOFOLLOW
(never written through whatever sits there), and is renamed over ``PATH`` at the end, so a
reader never sees half an export; on any failure the part file is removed. A device
(``/dev/full``, ``/dev/null``), a FIFO or a directory at ``PATH`` is refused, never replaced
by that rename: ``-o -`` writes to stdout, for a pipe."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


class OutputError(ValueError):
    """A path an export cannot be written to; the message names it and why."""


def output_target(path: Path) -> Path:
    """Where a file for ``path`` is written: ``path`` itself (a symbolic link resolved) when
    it is a new file in an existing folder or a regular file; anything else is an OutputError."""
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise OutputError(f"cannot export to {path}: folder {target.parent} does not exist") from None
        return target
    except OSError as e:
        raise OutputError(f"cannot export to {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise OutputError(f"cannot export to {path}: it is a directory; give a file path (or -o - for stdout)")
    if not stat.S_ISREG(mode):
        raise OutputError(f"cannot export to {path}: not a regular file (a device, FIFO or socket), which the "
                          "export would replace; use -o - to write to stdout and redirect that")
    return target


@contextmanager
def replacing(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to; ``path`` is replaced when the block
    ends without an error, and untouched otherwise."""
    target = output_target(path)
    tmp = target.with_name(target.name + ".part")
    try:
        if os.path.lexists(tmp) and stat.S_ISREG(os.lstat(tmp).st_mode):
            os.unlink(tmp)  # left by an export that was killed
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise OutputError(f"cannot export to {path}: cannot create {tmp}: {e.strerror or e}") from None
    try:
        with open(fd, "wb") as fh:
            yield fh
        output_target(path)  # still a regular file or absent: checked again just before the rename
        tmp.replace(target)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise OutputError(f"cannot export to {path}: {e.strerror or e}") from None
        raise


__all__ = ["OutputError", "output_target", "replacing"]
