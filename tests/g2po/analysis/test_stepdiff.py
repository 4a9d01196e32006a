import numpy as np
import pandas as pd
import pytest

from g2po.analysis.state_graph import state_graph
from g2po.analysis.stepdiff import APPEARED, KEPT, VANISHED, step_diff, success_rate
from g2po.outcomes import OutcomeRule


def _group(trajs: dict[str, tuple[list[str], list[str], float]]) -> pd.DataFrame:
    rows = []
    for traj, (keys, actions, reward) in trajs.items():
        for t, (k, a) in enumerate(zip(keys, actions, strict=True)):
            rows.append({"group_id": "g", "traj_id": traj, "t": t, "state_key": k, "action": a,
                         "episode_reward": reward, "is_action_valid": True})
    return pd.DataFrame(rows)


def test_states_transitions_values_and_success_change():
    a = state_graph(_group({"r0": (["s0", "s1"], ["go", "go"], 0.0),
                            "r1": (["s0", "s1"], ["go", "look"], 0.0)}), rule=OutcomeRule())
    b = state_graph(_group({"r0": (["s0", "s2"], ["go", "take"], 10.0),
                            "r1": (["s0", "s1"], ["go", "go"], 0.0)}), rule=OutcomeRule())
    diff = step_diff(a, b)
    states = diff.states.set_index("key")
    assert states.loc["s2", "status"] == APPEARED and states.loc["s2", "node_a"] == -1
    assert states.loc["s0", "status"] == states.loc["s1", "status"] == KEPT
    assert states.loc["s0", "value_change"] == pytest.approx(
        b.nodes.loc[b.nodes["canonical_key"] == "s0", "value"].iloc[0] -
        a.nodes.loc[a.nodes["canonical_key"] == "s0", "value"].iloc[0])
    assert np.isnan(states.loc["s2", "value_change"])
    edges = diff.transitions.set_index(["source", "action", "target"])
    assert edges.loc[("s1", "look", "<failure>"), "status"] == VANISHED
    assert edges.loc[("s2", "take", "<success>"), "status"] == APPEARED
    assert edges.loc[("s0", "go", "s1"), "count_a"] == 2
    assert edges.loc[("s0", "go", "s1"), "count_b"] == 1
    assert diff.success_a == 0.0 and diff.success_b == 0.5 and diff.success_change == 0.5
    counts = diff.counts()
    assert counts["states_appeared"] == 1 and counts["states_vanished"] == 0
    # node ids point into each graph
    row = diff.transitions[diff.transitions["status"] == APPEARED].iloc[0]
    assert b.nodes.loc[row["from_node_b"], "canonical_key"] == row["source"]


def test_success_follows_the_rule_the_graph_was_built_with_not_won():
    steps = _group({"r0": (["s0"], ["go"], 3.0), "r1": (["s0"], ["go"], 0.0)})
    steps["won"] = [True, False]
    # the default rule (success reward 10): nobody succeeds, whatever `won` says
    assert success_rate(state_graph(steps, rule=OutcomeRule())) == 0.0
    assert success_rate(state_graph(steps, rule=OutcomeRule(success_reward=3.0))) == 0.5
    assert (
        success_rate(
            state_graph(steps, rule=OutcomeRule(success_reward=3.0, success_threshold=0.0))
        )
        == 1.0
    )
