import numpy as np
import pandas as pd

from g2po import compute_advantages
from g2po.analysis.alarms import credit_alarms
from g2po.graph import state_graph


def frame(rows, **extra):
    out = pd.DataFrame(rows, columns=["traj_id", "t", "state_key", "action", "episode_reward",
                                      "is_action_valid"])
    return out.assign(group_id="g", **extra)


def kinds(alarms):
    return {a.kind: a for a in alarms}


def test_penalty_amplification_in_an_all_failed_group():
    rows = [("a", 0, "s0", "go", 0.0, True), ("a", 1, "s1", "bad", 0.0, False),
            ("b", 0, "s0", "go", 0.0, True), ("b", 1, "s2", "look", 0.0, True)]
    found = kinds(credit_alarms(state_graph(frame(rows))))
    alarm = found["penalty_amplification"]
    assert alarm.count == 1 and list(map(tuple, alarm.steps.to_numpy())) == [("a", 1)]
    assert "fail" in alarm.detail
    assert "penalty_amplification" not in kinds(credit_alarms(
        state_graph(frame(rows), mode="mean_norm"), mode="mean_norm"))


def test_aliased_states_and_disagreement_with_grpo():
    # s0 -go-> s1 in both; one succeeds, one fails: s1's action "open" led to both outcomes
    rows = [("a", 0, "s0", "go", 10.0, True), ("a", 1, "s1", "open", 10.0, True),
            ("b", 0, "s0", "go", 0.0, True), ("b", 1, "s1", "open", 0.0, True),
            ("c", 0, "s0", "wait", 0.0, True), ("c", 1, "s3", "x", 0.0, False)]
    graph = state_graph(frame(rows))
    found = kinds(credit_alarms(graph))
    aliased = found["aliased"]
    assert set(aliased.nodes) >= {0, 1}
    g2po = compute_advantages(graph.steps[["group_id", "traj_id", "t", "state_key", "action",
                                           "episode_reward", "is_action_valid"]], "g2po")["adv"]
    grpo = compute_advantages(graph.steps[["group_id", "traj_id", "t", "state_key", "action",
                                           "episode_reward", "is_action_valid"]], "grpo")["adv"]
    opposite = int((np.sign(g2po) * np.sign(grpo) < 0).sum())
    if opposite:
        assert found["disagreement"].count == opposite
    else:
        assert "disagreement" not in found


def test_truncation_and_no_merging():
    rows = [(f"r{i}", t, f"s{i}-{t}", "go", 0.0, True) for i in range(3) for t in range(5)]
    done = [t == 4 and i > 0 for i in range(3) for t in range(5)]
    found = kinds(credit_alarms(state_graph(frame(rows, done=done))))
    assert found["truncation"].count == 1
    assert list(map(tuple, found["truncation"].steps.to_numpy())) == [("r0", 4)]
    assert found["no_merging"].count == 15
