"""Reading user files without being trapped by them: regular files only, bounded reads.

A path a user gives may be a device (``/dev/zero`` never ends), a FIFO (``open()`` blocks
until a writer comes), or a file of gigabytes without a newline. Every loader opens files
through these functions: special files are refused before they are opened, formats are told
from a bounded prefix, and a line longer than :data:`MAX_LINE_BYTES` is an error naming it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from loaders.errors import LoaderError, LogFormatError, NoLogFoundError

__all__ = ["MAX_LINE_BYTES", "SNIFF_BYTES", "regular_file", "is_regular_file", "read_prefix",
           "read_bytes", "check_line_lengths", "part_stat", "file_key"]

#: The longest line a text log may hold (a verl prompt of 100k tokens is ~0.5 MB).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: How much of a file format detection reads.
SNIFF_BYTES = 1024 * 1024

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def part_stat(path: Path, what: str = "step file") -> os.stat_result:
    """``os.stat`` of one part of an opened log (a step file, a dump file); a part deleted
    since the log was listed is a :class:`LoaderError` that says to refresh."""
    try:
        return path.stat()
    except FileNotFoundError:
        raise LoaderError(f"{path}: the {what} disappeared; call refresh()") from None


def file_key(path: Path, what: str = "step file") -> tuple[int, int]:
    """(mtime in ns, size) of a log's part: what caches of it are keyed by."""
    info = part_stat(path, what)
    return info.st_mtime_ns, info.st_size


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def is_regular_file(path: str | Path) -> bool:
    """Whether ``path`` is a regular file (following links); never opens it."""
    try:
        return stat.S_ISREG(Path(path).stat().st_mode)
    except (OSError, ValueError):
        return False


def regular_file(path: str | Path) -> Path:
    """``path`` if it is a regular file (following links), else :class:`NoLogFoundError`
    saying what it is. Checked from its metadata, so a FIFO or device is never opened."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise NoLogFoundError(f"{path}: no such file or directory") from None
    except OSError as err:
        raise NoLogFoundError(f"{path}: cannot be read: {err.strerror or err}") from None
    if stat.S_ISDIR(mode):
        raise NoLogFoundError(f"{path}: a directory, expected a file")
    if not stat.S_ISREG(mode):
        raise NoLogFoundError(f"{path}: {_kind(mode)}, not a regular file; a log is a "
                              "regular file or a directory")
    return path


def read_prefix(path: str | Path, size: int = SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file."""
    path = regular_file(path)
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as err:
        raise LoaderError(f"{path}: cannot be read: {err.strerror or err}") from None


def read_bytes(path: str | Path, max_line: int = MAX_LINE_BYTES) -> bytes:
    """The whole of a regular text file, after checking no line is longer than ``max_line``."""
    path = regular_file(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise LoaderError(f"{path}: cannot be read: {err.strerror or err}") from None
    check_line_lengths(data, path, max_line)
    return data


def check_line_lengths(data: bytes, path: str | Path, max_line: int = MAX_LINE_BYTES) -> None:
    """Raise :class:`LogFormatError` naming the first line longer than ``max_line`` bytes.
    Free for files shorter than the limit; one vectorised scan otherwise."""
    if len(data) <= max_line:
        return
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    starts = np.concatenate([[0], ends + 1])
    stops = np.concatenate([ends, [len(data)]])
    long = np.flatnonzero(stops - starts > max_line)
    if len(long):
        line = int(long[0]) + 1
        raise LogFormatError(f"{path}:{line}: line longer than {max_line // (1024 * 1024)} MiB "
                             f"({int(stops[long[0]] - starts[long[0]]):,} bytes without a "
                             "newline); not a text log, or a line that never ended")
