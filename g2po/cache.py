"""Where the project keeps what it can make again (generated games, tiny models, summaries,
groups tables, run colours): one folder, ``$G2PO_CACHE``, else ``~/.cache/g2po``; and how a
file there is written so that a reader never sees half of it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["user_cache_dir", "atomic_file"]


def user_cache_dir() -> Path:
    """The project's cache folder: ``$G2PO_CACHE`` (``~`` expanded), else ``~/.cache/g2po``."""
    root = os.environ.get("G2PO_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "g2po"


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` (its folder made if needed) for the block to write;
    when the block ends without an error it replaces ``path`` in one step, so a reader sees
    the old file or the new one, never half of it. The temporary file is gone either way."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
