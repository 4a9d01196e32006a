"""Small groups for the drawing's tests."""

from __future__ import annotations

import numpy as np
import pandas as pd


def tiny_steps() -> pd.DataFrame:
    """s0 -a-> s1 twice by two actions (parallel edges), a self-loop at s1 by two actions,
    s1 -> s0 (opposite edge)."""
    rows = [
        ("a", 0, "s0", "go"), ("a", 1, "s1", "wait"), ("a", 2, "s1", "look"), ("a", 3, "s1", "x"),
        ("b", 0, "s0", "walk"), ("b", 1, "s1", "back"), ("b", 2, "s0", "go"),
    ]
    frame = pd.DataFrame(rows, columns=["traj_id", "t", "state_key", "action"])
    return frame.assign(group_id="g", episode_reward=np.where(frame["traj_id"] == "a", 10.0, 0.0),
                        is_action_valid=True)
