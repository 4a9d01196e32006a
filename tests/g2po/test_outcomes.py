import numpy as np
import pandas as pd
import pytest

from g2po.graph import state_graph
from g2po.outcomes import (
    OutcomeRule,
    check_outcomes,
    rule_from_won,
    success_mask,
    success_reward_from_won,
    success_rule,
    success_threshold_from_won,
    truncated_trajectories,
)


def steps(rewards, won=None, done_last=None, length=2):
    rows = []
    for i, r in enumerate(rewards):
        for t in range(length):
            row = {"group_id": "g", "traj_id": f"r{i}", "t": t, "state_key": f"s{t}",
                   "action": "go", "episode_reward": r, "is_action_valid": True}
            if won is not None:
                row["won"] = bool(won[i]) and t == length - 1
            if done_last is not None:
                row["done"] = bool(done_last[i]) if t == length - 1 else False
            rows.append(row)
    return pd.DataFrame(rows)


def test_a_reward_one_log_with_won_is_flagged_and_the_fix_named():
    check = check_outcomes(steps([1.0, 0.0, 1.0, 0.0], won=[1, 0, 1, 0]), 10.0)
    assert check.success_rate == 0.5 and check.n_won == 2 and check.n_success == 0
    assert check.problems and "won" in check.problems[0]
    fixes = {f.kind: f.value for f in check.fixes}
    assert fixes["success_reward"] == 1.0 and "terminal_reward" in fixes
    assert success_reward_from_won(steps([1.0, 0.0], won=[1, 0])) == 1.0
    # with the fix applied, nothing is left to say
    assert check_outcomes(steps([1.0, 0.0], won=[1, 0]), 1.0).problems == []


def test_rewards_that_never_match_or_are_not_two_valued():
    never = check_outcomes(steps([1.0, 0.0]), 10.0)
    assert never.success_rate == 0.0 and "No trajectory" in never.problems[0]
    assert [f.value for f in never.fixes if f.kind == "success_reward"] == [1.0]
    scores = check_outcomes(steps([0.2, 0.5, 10.0]), 10.0)
    assert any("3 values" in p for p in scores.problems)
    by_reward = check_outcomes(steps([0.2, 0.5, 10.0]), 10.0, terminal="reward")
    assert by_reward.problems == [] and by_reward.fixes == []  # scores valued as they are
    assert check_outcomes(steps([0.0, 10.0]), 10.0).problems == []
    assert check_outcomes(steps([0.0, 0.0]), 10.0).problems == []  # all failed: no warning


def test_truncated_episodes_get_their_own_terminal_valued_as_failure():
    frame = steps([0.0, 0.0, 10.0], done_last=[False, True, True])
    assert truncated_trajectories(frame).tolist() == [True, False, False]
    graph = state_graph(frame)
    kinds = graph.nodes["kind"]
    cut = int(kinds.index[kinds == "truncated"][0])
    last = graph.steps[(graph.steps["traj_id"] == "r0") & (graph.steps["t"] == 1)].iloc[0]
    assert last["next_node"] == cut and bool(last["truncated"])
    assert last["next_value"] == 0.0  # the estimator's failure value, unchanged
    failed = graph.steps[(graph.steps["traj_id"] == "r1") & (graph.steps["t"] == 1)].iloc[0]
    assert graph.nodes.loc[failed["next_node"], "kind"] == "failure"
    without = state_graph(frame.drop(columns="done"))
    assert "truncated" not in set(without.nodes["kind"])
    np.testing.assert_allclose(without.steps["adv"], graph.steps["adv"])


def test_the_threshold_rule_counts_rewards_at_or_above_it_as_success():
    rewards = np.array([0.0, 0.79, 0.8, 1.0])
    assert success_mask(rewards, 1.0).tolist() == [False, False, False, True]
    assert success_mask(rewards, 1.0, success_threshold=0.8).tolist() == [False, False, True,
                                                                          True]
    for bad in ("0.8", True, float("nan"), 1e200):
        with pytest.raises(ValueError, match="success_threshold"):
            success_mask(rewards, 1.0, success_threshold=bad)
    assert success_rule(10.0) == "reward = success reward 10"
    assert success_rule(10.0, 0.5) == "reward ≥ threshold 0.5"


def test_won_with_unequal_rewards_is_offered_the_threshold_that_reproduces_it():
    frame = steps([1.0, 0.8, 0.3, 0.0], won=[1, 1, 0, 0])
    assert success_reward_from_won(frame) is None  # no single reward to set
    assert success_threshold_from_won(frame) == 0.8
    check = check_outcomes(frame, 10.0)
    fix = next(f for f in check.fixes if f.kind == "success_threshold")
    assert fix.value == 0.8 and "won" in fix.label
    assert fix.reward == 1.0  # no reward is 10: the success terminal would be valued at 1
    # applied: the rule now matches `won`, and the terminal at 1 raises nothing either
    assert check_outcomes(frame, 1.0, success_threshold=0.8).problems == []
    fixed = check_outcomes(frame, 10.0, success_threshold=0.8)
    assert fixed.n_success == 2 and any("above every reward" in p for p in fixed.problems)
    assert [f.value for f in fixed.fixes if f.kind == "success_reward"] == [1.0]
    # a won trajectory rewarded below a lost one: no threshold reproduces `won`
    assert success_threshold_from_won(steps([0.5, 0.9], won=[1, 0])) is None


def test_graded_rewards_without_won_are_offered_a_threshold():
    check = check_outcomes(steps([0.0, 0.5, 1.0]), 1.0)
    assert any("3 values" in p for p in check.problems)
    fix = next(f for f in check.fixes if f.kind == "success_threshold")
    assert fix.value == 0.5 and fix.reward is None  # 1.0, the success reward, is a reward
    assert check_outcomes(steps([0.0, 0.5, 1.0]), 1.0, success_threshold=0.5).problems == []


def test_the_graph_and_the_estimator_follow_the_threshold_rule():
    frame = steps([1.0, 0.8, 0.0])
    equality = state_graph(frame, success_reward=1.0)
    threshold = state_graph(frame, success_reward=1.0, success_threshold=0.8)
    kinds = threshold.nodes["kind"]
    success_node = int(kinds.index[kinds == "success"][0])
    assert threshold.nodes.loc[success_node, "visits"] == 2
    assert equality.nodes.loc[success_node, "visits"] == 1
    last = threshold.steps[(threshold.steps["traj_id"] == "r1") & (threshold.steps["t"] == 1)]
    assert last["next_value"].iloc[0] == 1.0  # the success terminal's value: the success reward
    assert bool(last["success"].iloc[0])


def test_outcome_rule_checks_its_fields():
    assert OutcomeRule(success_reward=1, truncate_at=30).success_reward == 1.0
    for bad in ({"success_reward": float("nan")}, {"success_reward": "10"},
                {"success_reward": True}, {"success_threshold": float("inf")},
                {"terminal": "soft"}, {"truncate_at": 0}, {"truncate_at": 2.5},
                {"truncate_at": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            OutcomeRule(**bad)


def test_outcome_rule_reads_success_and_truncation():
    rule = OutcomeRule(success_reward=1.0, success_threshold=0.5, truncate_at=3)
    reward = np.array([0.0, 0.6, 1.0, 0.2])
    success = rule.success(reward)
    assert success.tolist() == [False, True, True, False]
    cut = rule.truncated(np.array([3, 3, 1, 2]), np.array([np.nan, np.nan, np.nan, 0.0]),
                         success)
    # long and failed without done; a success is never cut; done = False always is
    assert cut.tolist() == [True, False, False, True]
    assert "≥ threshold 0.5" in rule.describe() and "length ≥ 3" in rule.describe()
    assert rule.estimator_kwargs() == {"success_reward": 1.0, "success_threshold": 0.5,
                                       "terminal": "binary"}


def test_rule_from_won_on_trajectory_tables():
    table = pd.DataFrame({"reward": [1.0, 0.0, 1.0], "won": [1.0, 0.0, 1.0]})
    assert rule_from_won(table) == OutcomeRule(success_reward=1.0)
    graded = pd.DataFrame({"reward": [0.7, 0.1, 0.9], "won": [1.0, 0.0, 1.0]})
    assert rule_from_won(graded) == OutcomeRule(success_reward=0.9, success_threshold=0.7)
    assert rule_from_won(table.assign(won=np.nan)) is None
    assert rule_from_won(pd.DataFrame({"reward": [0.5, 0.5], "won": [1.0, 0.0]})) is None
