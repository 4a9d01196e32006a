"""Hub states: feedback keyed as a state (ALFWorld's "Nothing happens.") is a hub; a real place
many places reach (ALFWorld's "go to X", a gridworld cell) is not (issue 37)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.alarms import alarm_counts, credit_alarms
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import run_findings, triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import hub_group
from tests.g2po.builders import trajectories

EXAMPLES = {"hub": (beside_healthy(hub_group(group="alf")), OutcomeRule(), ["alf"])}


def teleports(group: str = "alfworld") -> pd.DataFrame:
    """ALFWorld's "go to X" reaches X from anywhere: eight rollouts visiting receptacles in
    different orders, each arrival the same text wherever the agent came from."""
    rng = np.random.default_rng(1)
    places = [f"You arrive at cabinet {i}. The cabinet {i} is closed." for i in range(7)]
    spec = {}
    for r in range(8):
        order = rng.permutation(7)[:5]
        steps = [("You are in the middle of a room.", f"go to cabinet {order[0]}", True)]
        steps += [(places[a], f"go to cabinet {b}", True) for a, b in zip(order, order[1:])]
        spec[f"r{r}"] = (10 * (r % 2), steps)
    return trajectories(spec, group)


def gridworld(group: str = "grid", size: int = 5, seed: int = 0) -> pd.DataFrame:
    """Random walks on a 5 × 5 grid keyed by the cell; a move into the wall is invalid and
    leaves the agent where it is."""
    rng = np.random.default_rng(seed)
    moves = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}
    spec = {}
    for r in range(8):
        x = y = size // 2
        steps = []
        for _ in range(20):
            name = str(rng.choice(list(moves)))
            dx, dy = moves[name]
            ok = 0 <= x + dx < size and 0 <= y + dy < size
            steps.append((f"cell ({x}, {y})", f"go {name}", ok))
            x, y = (x + dx, y + dy) if ok else (x, y)
        spec[f"r{r}"] = (10 * (r % 3 == 0), steps)
    return trajectories(spec, group)


def test_feedback_keyed_as_a_state_is_a_hub_with_advice_that_fits_it():
    alarm = {a.kind: a for a in credit_alarms(state_graph(hub_group(), rule=OutcomeRule()),
                                              rule=OutcomeRule())}["hub"]
    assert "feedback rather than a place" in alarm.detail
    assert "keeps the location" not in alarm.detail  # "Nothing happens." has no location
    assert "the state the agent is still in" in alarm.detail
    table = triage_groups(pd.concat([hub_group(group=f"alf{i}") for i in range(5)]),
                          rule=OutcomeRule())
    (said,) = [f for f in run_findings(table) if f.kind == "hub"]
    assert '"Nothing happens."' in said.text and "previous key" in said.fix


def test_real_places_many_states_reach_are_no_hubs():
    for steps in (teleports(), *(gridworld(seed=s) for s in range(4))):
        counts = alarm_counts(steps, rule=OutcomeRule())
        assert counts["hub"].sum() == 0
    # a key shared by six rooms' corridors: the same "go north" leads back to whichever room
    # the agent came from, so what follows depends on where it came from: a hub
    spec = {f"r{i}": (10 * (i % 2), [("hall", f"go to room {i % 6}", True),
                                     (f"room {i % 6}", "go south", True),
                                     ("a corridor", "go north", True),
                                     (f"room {i % 6}", "rest", True)]) for i in range(8)}
    assert alarm_counts(trajectories(spec), rule=OutcomeRule())["hub"].sum() == 1
    # the same, where what follows is one place with a detail changed (a drawer some rollouts
    # opened earlier): hidden world state, not where the agent came from
    drawer = "You arrive at drawer 1. The drawer 1 is {}."
    spec = {f"r{i}": (10 * (i % 2), [("hall", f"go to room {i % 6}", True),
                                     (f"room {i % 6}", "go south", True),
                                     ("a corridor", "go to drawer 1", True),
                                     (drawer.format("open" if i % 2 else "closed"), "look",
                                      True)]) for i in range(8)}
    assert alarm_counts(trajectories(spec), rule=OutcomeRule())["hub"].sum() == 0
