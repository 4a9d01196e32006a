"""Compact builders for step tables used across the tests."""

from __future__ import annotations

import statistics

import pandas as pd

from g2po.estimators import step_columns
from g2po.synthetic import with_step_columns


def z(values: list[float]) -> list[float]:
    """mean_std_norm by hand, for hand-worked expectations: (x - mean) / (sample std + 1e-6)."""
    mean, std = statistics.mean(values), statistics.stdev(values)
    return [(v - mean) / (std + 1e-6) for v in values]


def with_declared_columns(steps: pd.DataFrame) -> pd.DataFrame:
    """``steps`` with a synthetic value in every step column a registered estimator declares
    it reads (:func:`g2po.synthetic.with_step_columns`: the same value for a step in any row
    order), so that a test walking the registry can run every estimator on it."""
    return with_step_columns(steps, {n: c.dtype for n, c in step_columns().items()})


def trajectories(spec: dict, group: str = "g") -> pd.DataFrame:
    """``{traj_id: (R, [(state, action, valid), ...])}`` -> a step table of one group."""
    rows = []
    for traj_id, (reward, steps) in spec.items():
        for t, (state, action, valid) in enumerate(steps):
            rows.append(
                {
                    "group_id": group,
                    "traj_id": traj_id,
                    "t": t,
                    "state_key": state,
                    "action": action,
                    "episode_reward": float(reward),
                    "is_action_valid": bool(valid),
                }
            )
    return pd.DataFrame(rows)


# Two trajectories sharing s0 and s1 (worked by hand in test_g2po.py and the peers' tests).
TWO = {
    "a": (10, [("s0", "x", True), ("s1", "y", True)]),
    "b": (0, [("s0", "z", True), ("s2", "w", True), ("s1", "y", True)]),
}

# Three trajectories, with an invalid action that loops back to the same state.
THREE = {
    "a": (10, [("s0", "x", True), ("s1", "y", True)]),
    "c": (0, [("s0", "look", False), ("s0", "x", True), ("s1", "q", True)]),
    "b": (0, [("s0", "z", True), ("s2", "w", True), ("s1", "y", True)]),
}

# A cycle s0 -> s1 -> s0 -> s1 before success, beside a short failure.
CYCLE = {
    "a": (10, [("s0", "x", True), ("s1", "back", True), ("s0", "x", True), ("s1", "y", True)]),
    "b": (0, [("s0", "x", True), ("s1", "q", True)]),
}
