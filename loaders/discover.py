"""Finding the logs under a folder: the one rule the app's path box and ``g2po validate`` share.

A path is a log when :func:`loaders.detect_format` recognises it from its content (a ``.parquet``
of random bytes or a ``.jsonl`` that is not JSON lines is not one), so what is listed as a run
is exactly what validate accepts.
"""

from __future__ import annotations

from pathlib import Path

from loaders.detect import detect_format
from loaders.errors import NoLogFoundError

__all__ = ["find_logs", "SEARCH_DEPTH"]

#: Folder levels searched below the given one (a folder of runs, a folder of such folders).
SEARCH_DEPTH = 2
_QUIET_SUFFIXES = (".md", ".txt", ".yaml", ".yml", ".py")


def find_logs(root: str | Path, depth: int = SEARCH_DEPTH) -> tuple[list[Path], list[str]]:
    """The logs at or under ``root``: ``root`` itself when it is one, else the logs among its
    entries, ``depth`` levels deep (hidden and ``_`` names skipped). Returns the logs and a
    note for each file that is no log (README-like files aside).

    Raises :class:`NoLogFoundError` when ``root`` does not exist or holds no log.
    """
    root = Path(root).expanduser()
    if not root.exists():
        raise NoLogFoundError(f"{root}: no such file or directory")
    try:
        detect_format(root)
        return [root], []
    except NoLogFoundError as err:
        if not root.is_dir():
            raise
        reason = str(err)
    found: list[Path] = []
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
                try:
                    detect_format(entry)
                except NoLogFoundError as err:
                    if entry.is_dir():
                        next_frontier.append(entry)
                    elif entry.suffix.lower() not in _QUIET_SUFFIXES:
                        notes.append(str(err))
                    continue
                except OSError as err:
                    notes.append(f"{entry}: {err.strerror or err}")
                    continue
                found.append(entry)
        frontier = next_frontier
    if not found:
        raise NoLogFoundError(f"{reason} (also looked {depth} levels below it)")
    return found, notes
