"""Summaries per training step and per group, worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.outcomes import OutcomeRule
from loaders.summary import (
    group_summary,
    step_summaries,
    step_summary,
    trajectory_table,
    truncation_hint,
    with_outcomes,
)


def _steps(won: bool = False) -> pd.DataFrame:
    frame = pd.DataFrame({
        "group_id": ["a", "a", "a", "b", "b"],
        "traj_id": ["x", "x", "y", "x", "x"],
        "t": [0, 1, 0, 0, 1],
        "state_key": "s", "action": "go",
        "episode_reward": [10.0, 10.0, 0.0, 3.0, 3.0],
        "is_action_valid": [True, False, True, True, False],
    })
    if won:
        frame["won"] = [False, False, False, False, True]
    return frame


def test_trajectory_table_is_rule_free_and_row_order_free():
    steps = _steps(won=True).assign(done=[None, True, False, None, None], task="t1")
    table = trajectory_table(steps)
    shuffled = trajectory_table(steps.sample(frac=1.0, random_state=3))
    pd.testing.assert_frame_equal(table, shuffled)
    assert table[["group_id", "traj_id"]].values.tolist() == [["a", "x"], ["a", "y"],
                                                              ["b", "x"]]
    assert table["length"].tolist() == [2, 1, 2]
    assert table["reward"].tolist() == [10.0, 0.0, 3.0]
    assert table["invalid"].tolist() == [1, 0, 1]
    assert table["won"].tolist() == [0.0, 0.0, 1.0]
    # done is read on the last step (largest t): True, False, missing
    assert table["done"].tolist()[:2] == [1.0, 0.0] and np.isnan(table["done"].iloc[2])
    assert table["task"].tolist() == ["t1"] * 3
    assert trajectory_table(_steps())["won"].isna().all()


def test_step_summary():
    s = step_summary(trajectory_table(_steps()), OutcomeRule())
    assert s == {"n_groups": 2, "n_traj": 3, "n_steps": 5, "mean_reward": pytest.approx(13 / 3),
                 "success_rate": pytest.approx(1 / 3), "mean_length": pytest.approx(5 / 3),
                 "invalid_rate": pytest.approx(2 / 5), "truncated_rate": 0.0}


def test_success_follows_the_rule_not_won():
    traj = trajectory_table(_steps(won=True))
    outcomes = with_outcomes(traj, OutcomeRule())
    assert outcomes.set_index(["group_id", "traj_id"])["success"].to_dict() == {
        ("a", "x"): True, ("a", "y"): False, ("b", "x"): False}
    assert step_summary(traj, OutcomeRule(success_reward=3.0))["success_rate"] == \
        pytest.approx(1 / 3)
    assert step_summary(traj, OutcomeRule(success_threshold=3.0))["success_rate"] == \
        pytest.approx(2 / 3)


def test_truncation_by_done_and_by_length():
    steps = _steps().assign(done=[None, None, None, None, False])
    traj = trajectory_table(steps)
    assert with_outcomes(traj, OutcomeRule())["truncated"].tolist() == [False, False, True]
    # length ≥ 2 without success, where the log does not say: (a, x) succeeded, so not cut
    rule = OutcomeRule(truncate_at=2)
    assert with_outcomes(traj, rule)["truncated"].tolist() == [False, False, True]
    assert with_outcomes(trajectory_table(_steps()), rule)["truncated"].tolist() == \
        [False, False, True]
    assert group_summary(trajectory_table(_steps()), rule).set_index("group_id")[
        "truncated_rate"].to_dict() == {"a": 0.0, "b": 1.0}


def test_group_summary():
    g = group_summary(trajectory_table(_steps()), OutcomeRule()).set_index("group_id")
    assert g.loc["a"].to_dict() == {"n_traj": 2, "n_steps": 3, "mean_reward": 5.0,
                                    "success_rate": 0.5, "mean_length": 1.5,
                                    "invalid_rate": pytest.approx(1 / 3),
                                    "truncated_rate": 0.0}
    assert g.loc["b", "invalid_rate"] == 0.5
    assert group_summary(trajectory_table(_steps().iloc[:0]), OutcomeRule()).empty


def test_a_rule_given_when_opening_a_log_overrides_its_own(tmp_path):
    from loaders import LoaderError, open_log

    path = tmp_path / "steps.csv"
    _steps(won=True).to_csv(path, index=False)
    assert open_log(path).rule() == OutcomeRule(success_reward=3.0)  # from its won flags
    log = open_log(path, outcome={"success_threshold": 1.0, "truncate_at": 2})
    assert log.rule() == OutcomeRule(success_reward=3.0, success_threshold=1.0, truncate_at=2)
    assert log.summary()["success_rate"].tolist() == [pytest.approx(2 / 3)]
    with pytest.raises(LoaderError, match="truncate_at"):
        open_log(path, outcome={"truncate_at": -1})


def _cut_steps() -> pd.DataFrame:
    """Two training steps without ``done``: at each, two failures run to 4 steps, a failure
    and a success end sooner."""
    rows = []
    for step in (1, 2):
        for i, (length, reward) in enumerate([(4, 0.0), (4, 0.0), (2, 0.0), (3, 1.0)]):
            for t in range(length):
                rows.append({"train_step": step, "group_id": f"g{i % 2}", "traj_id": f"r{i}",
                             "t": t, "state_key": f"s{t}", "action": "go",
                             "episode_reward": reward, "is_action_valid": True})
    return pd.DataFrame(rows)


def test_truncation_hint_over_a_step_and_a_log(tmp_path):
    from loaders import open_log

    steps = _cut_steps()
    hint = truncation_hint(trajectory_table(steps[steps["train_step"] == 1]),
                           OutcomeRule(success_reward=1.0))
    assert (hint.length, hint.n_cut, hint.n_failures, hint.n_traj) == (4, 2, 3, 4)
    assert truncation_hint(trajectory_table(steps.iloc[:0]), OutcomeRule()) is None
    path = tmp_path / "cut.csv"
    steps.to_csv(path, index=False)
    log = open_log(path, outcome={"success_reward": 1.0})
    whole = log.truncation_hint()
    assert (whole.length, whole.n_cut, whole.n_failures, whole.n_traj) == (4, 4, 6, 8)
    # with the rule offered, the summaries count them and nothing is left to offer
    ruled = open_log(path, outcome={"success_reward": 1.0, "truncate_at": 4})
    assert ruled.truncation_hint() is None
    assert ruled.summary()["truncated_rate"].tolist() == [0.5, 0.5]
    assert log.summary()["truncated_rate"].tolist() == [0.0, 0.0]


def test_the_log_says_where_its_rule_comes_from(tmp_path):
    from loaders import open_log

    path = tmp_path / "steps.csv"
    _steps(won=True).to_csv(path, index=False)
    assert open_log(path).rule_origin() == "the log's won flags"
    assert open_log(path, outcome={"truncate_at": 3}).rule_origin() == \
        "the log's won flags, then truncate_at=3"
    _steps().to_csv(path, index=False)
    assert open_log(path).rule_origin().startswith("the default")


def test_assumed_validity_is_unknown_not_zero():
    steps = _steps().assign(is_action_valid=True)  # what a loader fills in without the column
    traj = trajectory_table(steps, assumed={"is_action_valid"})
    assert traj["invalid"].isna().all()
    assert np.isnan(step_summary(traj, OutcomeRule())["invalid_rate"])
    assert group_summary(traj, OutcomeRule())["invalid_rate"].isna().all()
    # read, not assumed: the same rows count zero invalid steps
    assert step_summary(trajectory_table(steps), OutcomeRule())["invalid_rate"] == 0.0


def test_step_summaries_equal_step_summary_of_each_step():
    rng = np.random.default_rng(4)
    parts = []
    for step in (3, 1, 7):
        base = _steps()
        steps = base.assign(episode_reward=base["episode_reward"] * step,
                            is_action_valid=rng.random(5) < 0.7)
        traj = trajectory_table(steps, assumed={"is_action_valid"} if step == 7 else ())
        parts.append(traj.assign(train_step=step))
    rows = pd.concat(parts, ignore_index=True)
    for rule in (OutcomeRule(), OutcomeRule(success_reward=3.0),
                 OutcomeRule(success_threshold=5.0)):
        together = step_summaries(rows, rule)
        assert together["train_step"].tolist() == [1, 3, 7]
        for _, row in together.iterrows():
            one = step_summary(rows[rows["train_step"] == row["train_step"]], rule)
            for key, value in one.items():
                assert row[key] == pytest.approx(value, nan_ok=True), (key, rule)
    assert step_summaries(rows.iloc[:0], OutcomeRule())["train_step"].tolist() == []


def test_group_summary_names_each_groups_task():
    steps = _steps().assign(task=[None, None, "t-a", "t-b", None])
    g = group_summary(trajectory_table(steps), OutcomeRule()).set_index("group_id")
    # a trajectory's task is its first step's; a group's, the first one given
    assert g["task"].to_dict() == {"a": "t-a", "b": "t-b"}
    assert "task" not in group_summary(trajectory_table(_steps()), OutcomeRule()).columns
