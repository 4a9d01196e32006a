"""Small step tables the check tests share: a group with a signal that no check fires on, and
a helper putting a check's example beside it."""

from __future__ import annotations

import pandas as pd

from tests.g2po.builders import trajectories

#: Four rollouts of a deterministic room graph, outcomes mixed, paths that part and meet
#: again, every (state, action) leading to one next state: no check fires.
HEALTHY = {
    "a": (10, [("entrance", "go east", True), ("hall", "go north", True),
               ("kitchen", "go north", True)]),
    "b": (0, [("entrance", "go east", True), ("hall", "go north", True),
              ("kitchen", "go east", True)]),
    "c": (0, [("entrance", "go south", True), ("corridor", "go east", True),
              ("kitchen", "go east", True)]),
    "d": (10, [("entrance", "go south", True), ("corridor", "go east", True),
               ("kitchen", "go north", True)]),
}


def beside_healthy(*groups: pd.DataFrame) -> pd.DataFrame:
    """``groups`` and a healthy group ``ok``, one step table."""
    return pd.concat([*groups, trajectories(HEALTHY, "ok")], ignore_index=True)
