"""Finding the logs under a folder: the one rule the app's path box and ``g2po validate`` share.

A path is a log when :func:`loaders.detect_format` recognises it from its content (a ``.parquet``
of random bytes or a ``.jsonl`` that is not JSON lines is not one), so what is listed as a run
is exactly what validate accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loaders.detect import detect_format
from loaders.errors import NoLogFoundError

__all__ = ["find_logs", "SEARCH_DEPTH"]

#: Folder levels searched below the given one (a folder of runs, a folder of such folders).
SEARCH_DEPTH = 2
_QUIET_SUFFIXES = (".md", ".txt", ".yaml", ".yml", ".py")


def find_logs(root: str | Path, depth: int = SEARCH_DEPTH,
              skip: Callable[[Path], str | None] | None = None,
              ) -> tuple[dict[Path, str], list[str]]:
    """The logs at or under ``root``: ``root`` itself when it is one, else the logs among its
    entries, ``depth`` levels deep (hidden and ``_`` names skipped). Returns ``{log: format}``
    and a note for each file that is no log (README-like files aside). ``skip(entry)`` returns
    a reason to leave an entry below ``root`` unopened (the app's roots), or None.

    Raises :class:`NoLogFoundError` when ``root`` does not exist or holds no log.
    """
    root = Path(root).expanduser()
    if not root.exists():
        raise NoLogFoundError(f"{root}: no such file or directory")
    try:
        return {root: detect_format(root)}, []
    except NoLogFoundError as err:
        if not root.is_dir():
            raise
        reason = str(err)
    found: dict[Path, str] = {}
    notes: list[str] = []
    frontier = [root]
    for _ in range(depth):
        next_frontier = []
        for folder in frontier:
            try:
                entries = sorted(folder.iterdir())
            except OSError as err:
                notes.append(f"{folder}: cannot be listed: {err.strerror or err}")
                continue
            for entry in entries:
                if entry.name.startswith((".", "_")):
                    continue
                why = None if skip is None else skip(entry)
                if why is not None:
                    notes.append(f"{entry.relative_to(root)}: {why}")
                    continue
                try:
                    fmt = detect_format(entry)
                except NoLogFoundError as err:
                    if entry.is_dir():
                        next_frontier.append(entry)
                    elif entry.suffix.lower() not in _QUIET_SUFFIXES:
                        notes.append(str(err))
                    continue
                except OSError as err:
                    notes.append(f"{entry}: {err.strerror or err}")
                    continue
                found[entry] = fmt
        frontier = next_frontier
    if not found:
        raise NoLogFoundError(f"{reason} (also looked {depth} levels below it)")
    return found, notes
