"""The step table's validation: every problem at once, naming column and rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po import StepTableError, check_steps, compute_advantages, validate_steps
from tests.g2po.builders import TWO, trajectories


def test_a_valid_table_has_no_problems():
    assert validate_steps(trajectories(TWO)) == []


def test_missing_columns_are_named():
    problems = validate_steps(trajectories(TWO).drop(columns=["state_key", "action"]))
    assert problems == ["missing required column(s): 'state_key', 'action'"]


def test_every_problem_is_reported_at_once():
    steps = trajectories(TWO)
    steps.loc[1, "group_id"] = None
    steps.loc[3, "episode_reward"] = np.inf
    steps.loc[4, "t"] = -1
    problems = validate_steps(steps)
    assert len(problems) == 3
    assert "column 'group_id' has null/NaN values in 1 row(s): 1" in problems
    assert "column 'episode_reward' is not finite (inf) in 1 row(s): 3" in problems
    assert "column 't' is negative in 1 row(s): 4" in problems


def test_nan_reward():
    steps = trajectories(TWO)
    steps.loc[2, "episode_reward"] = np.nan
    assert validate_steps(steps) == ["column 'episode_reward' has null/NaN values in 1 row(s): 2"]


def test_skipped_step_index_names_the_trajectory_rows():
    steps = trajectories(TWO)
    steps.loc[4, "t"] = 3  # b runs 0, 1, 3
    (problem,) = validate_steps(steps)
    assert problem.startswith("column 't' skips a step index")
    assert "3 row(s): 2, 3, 4" in problem


def test_repeated_step_index():
    steps = trajectories(TWO)
    steps.loc[3, "t"] = 0
    (problem,) = validate_steps(steps)
    assert "repeats a step index" in problem and "2 row(s): 2, 3" in problem


def test_episode_reward_that_changes_inside_a_trajectory():
    steps = trajectories(TWO)
    steps.loc[1, "episode_reward"] = 5.0
    (problem,) = validate_steps(steps)
    assert problem == ("column 'episode_reward' changes between the steps of one trajectory in "
                       "2 row(s): 0, 1")


def test_non_numeric_and_non_boolean_values():
    steps = trajectories(TWO).astype({"t": object, "is_action_valid": object})
    steps.loc[0, "t"] = "zero"
    steps.loc[1, "is_action_valid"] = "maybe"
    problems = validate_steps(steps)
    assert "column 't' is not numeric in 1 row(s): 0" in problems
    assert "column 'is_action_valid' is not boolean (True/False or 1/0) in 1 row(s): 1" in problems


def test_same_traj_id_at_two_training_steps_is_two_trajectories():
    steps = trajectories(TWO)
    both = pd.concat([steps.assign(train_step=1), steps.assign(train_step=2)], ignore_index=True)
    assert validate_steps(both) == []
    assert "repeats" in validate_steps(both.drop(columns="train_step"))[0]


def test_check_steps_raises_with_the_source_and_coerces_types():
    steps = trajectories(TWO).drop(columns="action")
    with pytest.raises(StepTableError, match=r"in run\.csv") as err:
        check_steps(steps, source="run.csv")
    assert err.value.problems == ["missing required column(s): 'action'"]
    raw = trajectories(TWO).astype({"is_action_valid": str, "t": float})
    raw["group_id"] = 7
    clean = check_steps(raw)
    assert clean["is_action_valid"].dtype == bool and clean["t"].dtype == np.int64
    assert clean["group_id"].tolist() == ["7"] * 5


def test_compute_advantages_validates_too():
    steps = trajectories(TWO)
    steps.loc[4, "t"] = 7
    with pytest.raises(StepTableError, match="skips a step index"):
        compute_advantages(steps)


def test_long_lists_of_rows_are_shortened():
    steps = trajectories({"a": (10, [("s", "x", True)] * 20)})
    steps["group_id"] = None
    (problem,) = validate_steps(steps)
    assert problem.endswith("and 12 more")
