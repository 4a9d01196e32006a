"""Synthetic rollout groups of realistic shape, for benchmarks, tests and demos.

Each task has a small world of states; every rollout starts in the same initial state and walks
through states that repeat across rollouts (and sometimes within one: self-loops after invalid
actions), so the state graph merges like a real agent's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["synthetic_steps", "with_step_columns"]


def synthetic_steps(
    n_rows: int,
    *,
    rollouts: int = 8,
    max_len: int = 50,
    states_per_task: int = 40,
    success_reward: float = 10.0,
    invalid_rate: float = 0.1,
    key_chars: int = 200,
    seed: int = 0,
    distinct_strings: bool = True,
) -> pd.DataFrame:
    """A valid step table of about ``n_rows`` rows (whole groups of ``rollouts`` trajectories).

    ``key_chars`` pads each state key to a realistic observation length; with
    ``distinct_strings`` every cell is its own string object, as after reading Parquet, so that
    hashing costs what it costs on real logs.
    """
    rng = np.random.default_rng(seed)
    mean_len = (1 + max_len) / 2
    n_groups = max(1, int(round(n_rows / (rollouts * mean_len))))
    n_traj = n_groups * rollouts
    lengths = rng.integers(1, max_len + 1, size=n_traj)
    traj = np.repeat(np.arange(n_traj), lengths)
    starts = np.cumsum(lengths) - lengths
    t = np.arange(len(traj)) - np.repeat(starts, lengths)
    group = traj // rollouts

    success = rng.random(n_traj) < 0.4
    invalid = rng.random(len(traj)) < invalid_rate
    # A random walk over the task's states: mostly forward, invalid actions stay in place.
    move = np.where(invalid, 0, rng.integers(1, 4, size=len(traj)))
    move[t == 0] = 0
    pos = np.cumsum(move)
    pos -= np.repeat(pos[starts], lengths)
    state = pos % states_per_task

    pad = "x" * max(0, key_chars - 40)
    vocab = np.array([f"task {g % 997} room {s} | {pad}" for g in range(min(n_groups, 997))
                      for s in range(states_per_task)], dtype=object)
    key = vocab[(group % 997) * states_per_task + state]
    actions = np.array([f"go to {k}" for k in range(4)] + ["open box", "look"], dtype=object)
    action = actions[np.where(invalid, 5, rng.integers(0, 5, size=len(traj)))]
    frame = pd.DataFrame(
        {
            "group_id": pd.Series(group).map("task-{}".format).to_numpy(dtype=object),
            "traj_id": pd.Series(traj % rollouts).map("r{}".format).to_numpy(dtype=object),
            "t": t.astype(np.int64),
            "state_key": key,
            "action": action,
            "episode_reward": np.where(success, success_reward, 0.0)[traj],
            "is_action_valid": ~invalid,
        }
    )
    if distinct_strings:
        frame = pa.Table.from_pandas(frame, preserve_index=False).to_pandas()
    return frame


def with_step_columns(steps: pd.DataFrame, columns: Mapping[str, str],
                      seed: int = 0) -> pd.DataFrame:
    """``steps`` with a synthetic value in each of ``columns`` (name → dtype: ``bool``,
    ``float64``, ``int64``, ``str``), such as the step columns estimators declare
    (:func:`g2po.estimators.step_columns`), for benchmarks and tests of every estimator.

    A step's value is drawn from a hash of its (group, trajectory, step) and the column's name,
    so the table's row order never changes it: a bool is True on about one step in four, a
    float lies in [-10, 10], an integer in 0 … 3, a text is one of four words.
    """
    key = steps[["group_id", "traj_id"]].astype(str).assign(t=steps["t"].astype(np.int64))
    added = {}
    for name, dtype in columns.items():
        salt = f"{name}:{seed}".encode().hex()[:16].ljust(16, "0")
        h = pd.util.hash_pandas_object(key, index=False, hash_key=salt).to_numpy()
        if dtype == "bool":
            added[name] = h % 4 == 0
        elif dtype == "float64":
            added[name] = (h % 2001).astype(np.float64) / 100.0 - 10.0
        elif dtype == "int64":
            added[name] = (h % 4).astype(np.int64)
        else:
            added[name] = np.array(["alpha", "beta", "gamma", "delta"], dtype=object)[h % 4]
    return steps.assign(**added)
