"""What several checks read from the whole run's groups table: a task's shortest win, a share
per training step, a group's advantage range in words. Private to the check modules (not a
check: the package does not register it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks.registry import ESTIMATORS

__all__ = ["task_shortest_win", "per_step_shares", "spread", "estimator_name", "where",
           "fires_of", "at_rows"]


def task_shortest_win(table: pd.DataFrame) -> np.ndarray:
    """(n_rows,) the shortest winning rollout of each row's task over the whole table (every
    training step), NaN where no rollout of the task ever won. A task is the ``task`` column
    (the group id where the log has none)."""
    if table.empty:
        return np.zeros(0)
    wins = table["shortest_win"].to_numpy(dtype=np.float64)
    key = table["task"].astype(str).to_numpy()
    best = pd.Series(wins).groupby(key, sort=False).transform("min")
    return best.to_numpy(dtype=np.float64)


def per_step_shares(table: pd.DataFrame, mask: np.ndarray, bins: int = 5) -> str:
    """The share of the groups where ``mask`` holds, over the run's training steps in words:
    step by step when there are at most ``bins`` steps, else over ``bins`` spans of
    consecutive steps (each span's groups together, so a few groups per step do not make the
    figure jump).

    >>> table = pd.DataFrame({"train_step": np.repeat(np.arange(1, 21), 2)})
    >>> per_step_shares(table, np.arange(40) >= 20, bins=4).split(" → ")
    ['per training step: 0% at steps 1-5', '0% at steps 6-10', '100% at steps 11-15', \
'100% at steps 16-20']
    """
    steps = table["train_step"].to_numpy()
    distinct = np.unique(steps)
    if len(distinct) <= 1:
        return ""
    span = np.minimum(np.searchsorted(distinct, steps) * min(bins, len(distinct))
                      // len(distinct), bins - 1)
    frame = pd.DataFrame({"span": span, "step": steps, "on": mask})
    shown = []
    for _, rows in frame.groupby("span", sort=True):
        lo, hi = rows["step"].min(), rows["step"].max()
        where_ = f"step {lo}" if lo == hi else f"steps {lo}-{hi}"
        shown.append(f"{rows['on'].mean():.0%} at {where_}")
    return "per training step: " + " → ".join(shown)


def at_rows(table: pd.DataFrame, rows, *columns: str) -> list[np.ndarray]:
    """Each of ``columns`` at row positions ``rows``, as arrays: what a reason reads, taken
    once rather than cell by cell."""
    rows = np.asarray(rows, dtype=np.int64)
    return [table[c].to_numpy()[rows] for c in columns]


def spread(lo: float, hi: float) -> str:
    """A G2PO advantage range: "A from -0.97 to +0.97"."""
    return f"A from {lo:+.2f} to {hi:+.2f}"


def estimator_name(estimator: str) -> str:
    return ESTIMATORS.get(estimator, estimator)


def where(mask: np.ndarray, values) -> np.ndarray:
    """``values`` where ``mask`` holds, else 0 (float64)."""
    return np.where(mask, np.asarray(values, dtype=np.float64), 0.0)


def fires_of(table: pd.DataFrame, kind: str) -> np.ndarray:
    """(n_rows,) bool: ``alarm_<kind>`` > 0."""
    return table[f"alarm_{kind}"].to_numpy() > 0
