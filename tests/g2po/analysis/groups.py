"""Hand-built groups for the alarm and groups-table tests: each makes one alarm fire (or not)
for a reason a reader can check by eye."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.g2po.builders import trajectories

#: Every rollout failed with reward 0 and no action was invalid: no estimator has a signal.
ALL_FAILED = {
    "a": (0, [("s0", "go", True), ("s1", "go", True)]),
    "b": (0, [("s0", "go", True), ("s2", "look", True), ("s1", "open", True)]),
    "c": (0, [("s0", "look", True)]),
}
#: Every rollout succeeded: GRPO has no signal; G2PO's TD term ranks the steps (the two
#: trajectories reach s1 at different depths, so its node value and the TD errors differ).
ALL_SUCCEEDED = {
    "a": (10, [("s0", "x", True), ("s1", "y", True)]),
    "b": (10, [("s0", "z", True), ("s2", "w", True), ("s1", "y", True)]),
}
#: Every rollout failed; one invalid action is all that separates the steps (4 steps, each
#: (state, action) leading to one next state).
PENALTY_ONLY = {"a": (0, [("s0", "go", True), ("s1", "bad", False)]),
                "b": (0, [("s0", "look", True), ("s2", "look", True)])}
NOTHING = "Nothing happens."


#: Where every rollout of :func:`hub_group` starts.
ROOM = "You are in the middle of a room."


def hub_group(rollouts: int = 8, group: str = "alf") -> pd.DataFrame:
    """ALFWorld-like rollouts from one start: at each location the agent tries an invalid
    action, gets "Nothing happens.", and walks on. "Nothing happens." is reached from five
    locations, every time through an invalid action; the locations are reached from it (and
    the start) alone."""
    spec = {}
    for i in range(rollouts):
        a, b, c = i % 5, (i + 2) % 5, (i + 3) % 5
        spec[f"r{i}"] = (10 if i % 2 else 0, [
            (ROOM, f"go to loc {a}", True),
            (f"You arrive at loc {a}.", "take apple 1", False),
            (NOTHING, f"go to loc {b}", True),
            (f"You arrive at loc {b}.", "take apple 1", False),
            (NOTHING, f"go to loc {c}", True),
            (f"You arrive at loc {c}.", "open drawer 1", True),
        ])
    return trajectories(spec, group)


def cut_group(group: str = "cut") -> pd.DataFrame:
    """No ``done`` column; three rollouts fail at the step limit of 4 (two of them at the door
    the winner went through, so their last step gets a large negative TD error), one fails
    early, one succeeds at the door."""
    spec = {
        "long0": (0, [("start", "go", True), ("hall", "go", True), ("hall2", "go", True),
                      ("door", "wait", True)]),
        "long1": (0, [("start", "go", True), ("hall", "look", True), ("yard", "go", True),
                      ("door", "knock", True)]),
        "long2": (0, [("start", "look", True), ("yard", "go", True), ("yard2", "wait", True),
                      ("yard3", "wait", True)]),
        "short": (0, [("start", "jump", True), ("pit", "die", True)]),
        "win": (10, [("start", "go", True), ("hall", "go", True), ("hall2", "go", True),
                     ("door", "open", True)]),
    }
    return trajectories(spec, group)


def random_walks(groups: int = 6, rollouts: int = 8, length: int = 12, states: int = 12,
                 invalid_rate: float = 0.3, seed: int = 0) -> pd.DataFrame:
    """Random walks over a few states with invalid actions at random, independent of where
    they lead: no state is reached mostly by invalid actions except by chance."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        for r in range(rollouts):
            reward = 10.0 if rng.random() < 0.4 else 0.0
            for t in range(length):
                rows.append({"group_id": f"g{g}", "traj_id": f"r{r}", "t": t,
                             "state_key": f"room {rng.integers(states)}",
                             "action": f"act {rng.integers(4)}", "episode_reward": reward,
                             "is_action_valid": bool(rng.random() >= invalid_rate)})
    return pd.DataFrame(rows)


def aliased_group(group: str = "dark") -> pd.DataFrame:
    """A deterministic room graph where hall and corridor share the key "dark room": "go
    north" from it leads on to the kitchen (from the hall, twice) and the entrance (from the
    corridor, once), which no deterministic environment does with one state."""
    spec = {
        "a": (10, [("entrance", "go east", True), ("dark room", "go north", True),
                   ("kitchen", "go north", True)]),
        "b": (0, [("entrance", "go east", True), ("dark room", "go north", True),
                  ("kitchen", "go east", True)]),
        "c": (0, [("entrance", "go south", True), ("dark room", "go east", True),
                  ("kitchen", "go east", True)]),
        "d": (10, [("entrance", "go south", True), ("dark room", "go east", True),
                   ("kitchen", "go north", True)]),
        "e": (0, [("entrance", "go south", True), ("dark room", "go north", True),
                  ("entrance", "look", True)]),
    }
    return trajectories(spec, group)


def cut_by_done(group: str = "cut") -> pd.DataFrame:
    """Like :func:`cut_group` (three of five rollouts cut at 4 steps), each (state, action)
    leading to one next state, and a ``done`` column that says which were cut: false on the
    last step of those three, true on the others' last steps."""
    steps = trajectories({
        "long0": (0, [("start", "go", True), ("hall", "go", True), ("hall2", "go", True),
                      ("door", "wait", True)]),
        "long1": (0, [("start", "go", True), ("hall", "look", True), ("yard", "go", True),
                      ("door", "knock", True)]),
        "long2": (0, [("start", "look", True), ("yard", "wait", True), ("yard2", "wait", True),
                      ("yard3", "wait", True)]),
        "short": (0, [("start", "jump", True), ("pit", "die", True)]),
        "win": (10, [("start", "go", True), ("hall", "go", True), ("hall2", "go", True),
                     ("door", "open", True)]),
    }, group)
    last = steps["t"] == steps.groupby("traj_id")["t"].transform("max")
    return steps.assign(done=last & ~steps["traj_id"].str.startswith("long"))
