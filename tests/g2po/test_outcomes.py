import numpy as np
import pandas as pd
import pytest

from g2po.analysis.state_graph import state_graph
from g2po.estimators import compute_advantages, list_estimators
from g2po.outcomes import (
    OutcomeRule,
    TruncationHint,
    check_outcomes,
    cut_at_limit,
    detect_reward_scale,
    detect_truncation,
    rule_from_won,
    success_mask,
    success_reward_from_won,
    success_rule,
    success_threshold_from_won,
    truncated_trajectories,
)
from loaders.summary import trajectory_table
from tests.g2po.builders import with_declared_columns


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


def scale(rewards, won=None, **rule):
    return detect_reward_scale(trajectory_table(steps(rewards, won)), OutcomeRule(**rule))


def test_a_zero_one_reward_under_the_success_reward_10_is_detected_and_fixed():
    found = scale([1.0, 0.0, 1.0, 0.0])
    assert (found.success_reward, found.n_success, found.n_traj, found.by) == (1.0, 2, 4, "binary")
    assert found.fix().kind == "success_reward" and found.fix().value == 1.0
    assert "2 of 4 trajectories reach reward 1" in found.message()
    assert "counts success at reward 10" in found.message() and found.flag == \
        "--success-reward 1"
    assert scale([1.0, 1.0]).success_reward == 1.0  # a 0/1 group that always won
    assert scale([0.0, 5.0]).success_reward == 5.0  # another two-valued scale
    assert scale([-1.0, 1.0]).success_reward == 1.0
    # the won flags name the reward of a success, and they win over the values
    assert scale([0.5, 0.0, 0.2], won=[1, 0, 0]).success_reward == 0.5
    assert scale([0.5, 0.0, 0.2], won=[1, 0, 0]).by == "won"
    # nothing to say: the rule already counts them, a hand-set threshold, no success at all,
    # won flags that mark none, graded rewards (the outcome check offers a threshold there)
    assert scale([1.0, 0.0], success_reward=1.0) is None
    assert scale([1.0, 0.0], success_threshold=5.0) is None
    assert scale([0.0, 0.0]) is None and scale([2.0, 2.0]) is None
    assert scale([1.0, 0.0], won=[0, 0]) is None
    assert scale([0.0, 0.5, 1.0]) is None


def test_the_outcome_check_offers_the_scale_where_no_trajectory_succeeds():
    for rewards in ([1.0, 0.0], [1.0, 1.0]):  # the second: one reward, fixed now too
        check = check_outcomes(steps(rewards), 10.0)
        assert "No trajectory succeeds" in check.problems[0]
        assert [(f.kind, f.label, f.value) for f in check.fixes if f.kind == "success_reward"] \
            == [("success_reward", "Set the success reward to 1", 1.0)]


def test_truncated_episodes_get_their_own_terminal_valued_as_failure():
    frame = steps([0.0, 0.0, 10.0], done_last=[False, True, True])
    assert truncated_trajectories(frame).tolist() == [True, False, False]
    graph = state_graph(frame, rule=OutcomeRule())
    kinds = graph.nodes["kind"]
    cut = int(kinds.index[kinds == "truncated"][0])
    last = graph.steps[(graph.steps["traj_id"] == "r0") & (graph.steps["t"] == 1)].iloc[0]
    assert last["next_node"] == cut and bool(last["truncated"])
    assert last["next_value"] == 0.0  # the estimator's failure value, unchanged
    failed = graph.steps[(graph.steps["traj_id"] == "r1") & (graph.steps["t"] == 1)].iloc[0]
    assert graph.nodes.loc[failed["next_node"], "kind"] == "failure"
    without = state_graph(frame.drop(columns="done"), rule=OutcomeRule())
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
    equality = state_graph(frame, rule=OutcomeRule(success_reward=1.0))
    threshold = state_graph(frame, rule=OutcomeRule(success_reward=1.0, success_threshold=0.8))
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


def cut_log(n_cut: int = 3, limit: int = 5) -> pd.DataFrame:
    """One group without ``done``: ``n_cut`` failures run to the step limit, one failure and
    two successes end sooner (the 48-of-96-cut-at-30 log, in small)."""
    rows = []
    spec = [(limit, 0.0)] * n_cut + [(2, 0.0), (3, 10.0), (limit - 1, 10.0)]
    for i, (length, reward) in enumerate(spec):
        for t in range(length):
            rows.append({"group_id": "g", "traj_id": f"r{i}", "t": t,
                         "state_key": f"room {min(t, 2)}", "action": "go" if t % 2 else "look",
                         "episode_reward": reward, "is_action_valid": True})
    return pd.DataFrame(rows)


def test_failures_ending_at_the_largest_length_without_done_are_flagged():
    frame = cut_log()
    check = check_outcomes(frame, 10.0)
    (problem,) = check.problems
    assert "3 of 4 failed trajectories" in problem and "length 5" in problem
    (fix,) = check.fixes
    assert fix.kind == "truncate_at" and fix.value == 5.0
    assert check.n_truncated == 0  # not until the rule says so
    # the rule applied: counted as truncated, and nothing left to say
    ruled = OutcomeRule(truncate_at=5).check(frame)
    assert ruled.problems == [] and ruled.n_truncated == 3
    # a log that states `done` is believed: no hint, its own flags count
    stated = frame.assign(done=True)
    assert check_outcomes(stated, 10.0).problems == []


def test_detect_truncation_needs_many_failures_at_one_largest_length():
    nan = np.full(6, np.nan)
    length = np.array([5, 5, 5, 2, 3, 4])
    success = np.array([False, False, False, False, True, True])
    assert detect_truncation(length, success, nan) == TruncationHint(5, 3, 4, 6)
    # one failure at the limit is no pattern; a quarter of the failures is needed
    assert detect_truncation(np.array([5, 2, 3, 4]), np.array([False] * 4), np.full(4, np.nan)
                             ) is None
    many = np.array([9, 9] + [2] * 7)
    assert detect_truncation(many, np.zeros(9, bool), np.full(9, np.nan)) is None  # 2 of 9
    # every episode as long as the longest: a fixed horizon, the length says nothing
    assert detect_truncation(np.full(4, 3), np.zeros(4, bool), np.full(4, np.nan)) is None
    # the log's done given for them, or a rule already set: nothing to offer
    assert detect_truncation(length, success, np.ones(6)) is None
    assert detect_truncation(length, success, nan, truncate_at=5) is None
    # successes at the limit are not cut
    assert detect_truncation(length, np.ones(6, bool), nan) is None


def test_cut_at_limit_is_the_rules_truncation():
    length, done = np.array([5, 5, 4, 5]), np.array([np.nan, 1.0, np.nan, 0.0])
    success = np.array([False, False, False, True])
    assert cut_at_limit(length, done, success).tolist() == [False, False, False, True]
    assert cut_at_limit(length, done, success, 5).tolist() == [True, False, False, True]
    rule = OutcomeRule(truncate_at=5)
    assert rule.truncated(length, done, success).tolist() == \
        cut_at_limit(length, done, success, 5).tolist()


def test_the_graph_ends_cut_trajectories_at_the_truncated_terminal_by_the_rule():
    frame = cut_log()
    plain = state_graph(frame, rule=OutcomeRule())
    assert "truncated" not in set(plain.nodes["kind"])
    graph = state_graph(frame, rule=OutcomeRule(truncate_at=5))
    kinds = graph.nodes["kind"]
    cut = int(kinds.index[kinds == "truncated"][0])
    assert graph.nodes.loc[cut, "visits"] == 3
    ends = graph.steps.sort_values("t").groupby("traj_id").tail(1).set_index("traj_id")
    assert (ends.loc[["r0", "r1", "r2"], "next_node"] == cut).all()
    assert graph.nodes.loc[ends.loc["r3", "next_node"], "kind"] == "failure"  # ends sooner
    assert ends["truncated"].to_dict() == {"r0": True, "r1": True, "r2": True, "r3": False,
                                           "r4": False, "r5": False}
    # only where it is drawn changes: values, TD errors and advantages are the same numbers
    for column in ("adv", "adv_ep", "adv_nc", "adv_ec", "td_error", "next_value"):
        np.testing.assert_array_equal(graph.steps[column], plain.steps[column])
    assert graph.nodes.loc[cut, "value"] == 0.0  # valued as failure


@pytest.mark.parametrize("name", list_estimators())
def test_the_estimators_value_truncation_as_failure_whatever_the_rule(name):
    """The rule's truncate_at is no estimator parameter: every estimator's numbers on a log
    with cut episodes are those of the same log with them marked done=False, or not at all."""
    frame = with_declared_columns(cut_log())  # every step column an estimator reads
    marked = frame.assign(done=~frame["traj_id"].isin(["r0", "r1", "r2"]))
    plain = compute_advantages(frame, name)
    with_done = compute_advantages(marked, name)
    added = [c for c in plain.columns if c not in frame.columns]
    assert added
    pd.testing.assert_frame_equal(plain[added], with_done[added])
