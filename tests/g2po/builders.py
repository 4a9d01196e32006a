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


# Two ALFWorld-style episodes (G2PO's ALFWorld anchor: tests/g2po/test_state_keys.py).
ROOM = "You are in the middle of a room. Looking quickly around you, you see a microwave 1."
AT_MICROWAVE = "You arrive at microwave 1. The microwave 1 is closed."
HEATED = "You heat the mug 1 using the microwave 1."
AT_SHELF = "You arrive at shelf 1. On the shelf 1, you see nothing."
NOTHING = "Nothing happens."
START_ACTIONS = ["go to microwave 1", "go to shelf 1", "help"]
MICROWAVE_ACTIONS = ["open microwave 1", "go to shelf 1", "heat mug 1 with microwave 1"]
HEATED_ACTIONS = ["go to shelf 1", "inventory"]
SHELF_ACTIONS = ["put mug 1 in/on shelf 1", "go to microwave 1"]
# (observation, admissible actions) of each step; the last step's next observation is not in
# a step table (it leads to the terminal)
EPISODES = {
    "a": (10.0, [(ROOM, START_ACTIONS), (AT_MICROWAVE, MICROWAVE_ACTIONS),
                 (NOTHING, MICROWAVE_ACTIONS), (HEATED, HEATED_ACTIONS),
                 (AT_SHELF, SHELF_ACTIONS)]),
    "b": (0.0, [(ROOM, START_ACTIONS), (NOTHING, START_ACTIONS), (AT_SHELF, SHELF_ACTIONS),
                (AT_MICROWAVE, MICROWAVE_ACTIONS)]),
}


def alfworld_steps(how: str = "prompt") -> pd.DataFrame:
    """The two episodes as a step table; admissible actions in the agent prompt (``prompt``)
    or in an ``admissible_actions`` column of lists (``column``) or of their text (``text``)."""
    from g2po.agent_format import build_prompt

    rows = []
    for traj, (reward, steps) in EPISODES.items():
        history = []
        for t, (obs, actions) in enumerate(steps):
            row = {"group_id": "g", "traj_id": traj, "t": t, "state_key": obs,
                   "observation": obs, "action": f"act {t}", "episode_reward": reward,
                   "is_action_valid": True}
            if how == "prompt":
                row["prompt"] = "<|im_start|>user\n" + build_prompt(
                    "heat a mug and put it on the shelf", obs, actions, history) + \
                    "<|im_end|>\n<|im_start|>assistant\n"
            elif how == "column":
                row["admissible_actions"] = list(actions)
            else:
                row["admissible_actions"] = repr(list(actions))
            history.append((obs, row["action"]))
            rows.append(row)
    return pd.DataFrame(rows)
