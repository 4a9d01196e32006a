"""Run colours that last: a run keeps the colour it was first given, in every session and after
restarts, whichever other runs are open (as W&B keeps a run's colour).

The colour of each run ever shown is kept in ``run_colors.json`` in the user cache
(``$G2PO_CACHE`` or ``~/.cache/g2po``), keyed by the run's path. A run seen for the first time
gets a colour no open run holds, the one given to the fewest runs so far, ties broken by its
own name (:func:`app.charts.assign_run_colors`): a handful of runs open together never share
a colour, and two runs share one only after every palette colour has been given out. When
the file cannot be written, the colours last as long as the server. Pages ask
:func:`run_colors` for the runs they chart.
"""

from __future__ import annotations

import fcntl
import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from app.charts import RUN_PALETTE, assign_run_colors
from g2po.cache import atomic_file, user_cache_dir

if TYPE_CHECKING:
    from app.context import OpenLog

__all__ = ["RunColors", "run_colors", "run_colors_for", "REGISTRY", "MAX_RUNS", "RUN_COLORS"]

REGISTRY = "run_colors.json"
#: Session key: run path → colour of the runs shown last (for tests and views).
RUN_COLORS = "_g2po_run_colors"
#: Runs remembered; beyond it the ones given a colour longest ago are forgotten.
MAX_RUNS = 5000
_VERSION = 1


class RunColors:
    """The colour registry at ``path`` (default: the user cache's :data:`REGISTRY`)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else user_cache_dir() / REGISTRY
        self._memory: dict[str, dict] = {}  # the registry when the file cannot be used
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return {}
        runs = data.get("runs") if isinstance(data, dict) and data.get("version") == _VERSION \
            else None
        if not isinstance(runs, dict):
            return {}
        return {k: v for k, v in runs.items() if isinstance(k, str) and isinstance(v, dict)
                and v.get("color") in RUN_PALETTE}

    def _write(self, runs: dict[str, dict]) -> None:
        if len(runs) > MAX_RUNS:
            keep = sorted(runs, key=lambda r: runs[r].get("given", 0))[-MAX_RUNS:]
            runs = {r: runs[r] for r in keep}
        with atomic_file(self.path) as tmp:
            tmp.write_text(json.dumps({"version": _VERSION, "runs": runs}), encoding="utf-8")

    def colors(self, runs: list[str]) -> dict[str, str]:
        """Run → colour for ``runs`` (run paths); new runs are given one and remembered."""
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path.with_name(REGISTRY + ".lock"), "a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)  # sessions and servers in turn
                    known = {**self._memory, **self._read()}
                    out, new = self._assign(runs, known)
                    if new:
                        self._write(known)
                    return out
            except OSError:
                return self._assign(runs, self._memory)[0]

    def _assign(self, runs: list[str], known: dict[str, dict]) -> tuple[dict[str, str], bool]:
        """Colours of ``runs``, new ones added to ``known`` (and to memory); whether any was
        new."""
        assigned = {r: known[r]["color"] for r in runs if r in known}
        used: dict[str, int] = {}
        for entry in known.values():
            used[entry["color"]] = used.get(entry["color"], 0) + 1
        colors = assign_run_colors(runs, assigned, used)
        new = [r for r in runs if r not in known]
        for run in new:
            known[run] = {"color": colors[run], "given": time.time()}
            self._memory[run] = known[run]
        return {r: colors[r] for r in runs}, bool(new)


_DEFAULT: dict[str, RunColors] = {}


def run_colors_for(runs: list[str]) -> dict[str, str]:
    """:meth:`RunColors.colors` of the registry in the user cache (one per cache folder)."""
    path = str(user_cache_dir() / REGISTRY)
    registry = _DEFAULT.setdefault(path, RunColors(path))
    return registry.colors(runs)


def run_colors(logs: list[OpenLog]) -> dict[str, str]:
    """Run name → colour for ``logs``, as the charts of every page draw them: the colour each
    run was first given, kept across sessions and restarts by its path."""
    by_path = run_colors_for([o.ref.path for o in logs])
    st.session_state[RUN_COLORS] = by_path
    return {o.name: by_path[o.ref.path] for o in logs}
