"""Finding the logs under a folder, and naming them: the one rule the app's path box and
``g2po validate`` share, and the run names the app's sidebar and ``g2po url`` share.

A path is a log when :func:`loaders.detect_format` recognises it from its content (a ``.parquet``
of random bytes or a ``.jsonl`` that is not JSON lines is not one), so what is listed as a run
is exactly what validate accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loaders.detect import detect_format
from loaders.errors import NoLogFoundError

__all__ = ["find_logs", "log_name", "distinct_names", "SEARCH_DEPTH"]

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


def log_name(log: Path, root: Path) -> str:
    """The name of ``log``, one of :func:`find_logs` ``(root)``: the name of its folder or file
    when it is ``root`` itself, else its path below ``root`` (``cooking`` for
    ``sample_rollouts/cooking`` found under ``sample_rollouts``).

    >>> log_name(Path("/x/runs/a"), Path("/x/runs")), log_name(Path("/x/runs/a"), Path("/x/runs/a"))
    ('a', 'a')
    >>> log_name(Path("/x/runs/exp1/d"), Path("/x/runs"))
    'exp1/d'
    """
    if log == root:
        return log.resolve().name or str(log)
    return str(log.relative_to(root))


def distinct_names(names: list[str], paths: list[str]) -> list[str]:
    """Each run's name, told apart from the others of the same name by the nearest folder
    above it in which their paths differ (``exp1/rollout_data``, ``exp2/rollout_data``;
    ``a/…/rollout_data`` when they differ further up); runs of one path (other options) by
    a number.

    >>> distinct_names(["rollout_data", "rollout_data", "run_b"],
    ...                ["/x/exp1/rollout_data", "/x/exp2/rollout_data", "/x/run_b"])
    ['exp1/rollout_data', 'exp2/rollout_data', 'run_b']
    >>> distinct_names(["d", "d"], ["/a/x/exp/d", "/b/x/exp/d"])
    ['a/…/d', 'b/…/d']
    """
    out = list(names)
    for name in set(names):
        members = [i for i, n in enumerate(names) if n == name]
        if len(members) < 2:
            continue
        parents = [Path(paths[i]).parent.parts[::-1] for i in members]
        for i, parts in zip(members, parents, strict=True):
            others = [p for j, p in zip(members, parents, strict=True) if j != i]
            depth = next((d for d in range(len(parts))
                          if all(d >= len(o) or o[d] != parts[d] for o in others)), None)
            if depth is None:
                continue  # the same path: numbered below
            out[i] = f"{parts[depth]}/{name}" if depth == 0 else f"{parts[depth]}/…/{name}"
    counts: dict[str, int] = {}
    for i, name in enumerate(out):
        counts[name] = counts.get(name, 0) + 1
        if counts[name] > 1:
            out[i] = f"{name} ({counts[name]})"
    return out
