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


def test_a_trajectory_marked_incomplete_may_skip_a_step_index_never_repeat_one():
    steps = trajectories(TWO)
    steps.loc[4, "t"] = 3  # b lost its turn 2 to a malformed line: b runs 0, 1, 3
    steps["incomplete"] = steps["traj_id"] == "b"
    assert validate_steps(steps) == []
    assert check_steps(steps)["incomplete"].dtype == bool
    steps.loc[4, "t"] = 1
    assert "repeats a step index" in validate_steps(steps)[0]
    steps = trajectories(TWO)
    steps.loc[4, "t"] = 3
    steps["incomplete"] = steps["traj_id"] == "a"  # another trajectory's mark: no licence
    assert "skips a step index" in validate_steps(steps)[0]


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


@pytest.mark.parametrize(("table", "says"), [
    (lambda t: t.to_dict(), "must be a pandas DataFrame (one row per agent step), got dict"),
    (lambda t: None, "must be a pandas DataFrame (one row per agent step), got NoneType"),
    (lambda t: t["t"], "must be a pandas DataFrame (one row per agent step), got Series"),
    (lambda t: pd.concat([t, t[["action"]]], axis=1), "column name(s) 'action' appear more"),
    (lambda t: t.set_axis(pd.MultiIndex.from_product([t.columns, ["x"]]), axis=1),
     "the columns are a MultiIndex (2 levels, first column ('group_id', 'x'))"),
    (lambda t: t.assign(t=t["t"].astype(float).where(t.index != 1, np.inf)),
     "column 't' is not finite (inf) in 1 row(s): 1"),
    (lambda t: t.assign(t=[2**70] + t["t"].tolist()[1:]),
     "column 't' is out of range (beyond 2**62) in 1 row(s): 0"),
    (lambda t: t.assign(train_step="a"), "column 'train_step' is not numeric in"),
    (lambda t: t.assign(prompt_tokens=1.5), "column 'prompt_tokens' is not a whole number"),
    (lambda t: t.assign(episode_reward=t["episode_reward"] + 1j),
     "column 'episode_reward' holds complex numbers"),
    (lambda t: t.assign(episode_reward=[10**400] + t["episode_reward"].tolist()[1:]),
     "column 'episode_reward' holds a number too large for a float in 1 row(s): 0"),
    (lambda t: t.assign(is_action_valid=2.5), "column 'is_action_valid' is not boolean"),
    (lambda t: t.assign(won=[3] + [1] * (len(t) - 1)), "column 'won' is not boolean"),
    (lambda t: t.assign(group_id=[["g"]] + t["group_id"].tolist()[1:]),
     "column 'group_id' holds lists, mappings or bytes instead of text in 1 row(s): 0"),
])
def test_bad_tables_are_step_table_errors_naming_the_column(table, says):
    bad = table(trajectories(TWO))
    problems = validate_steps(bad)
    assert any(says in p for p in problems), problems
    with pytest.raises(StepTableError) as err:
        check_steps(bad)
    assert says in str(err.value)
    with pytest.raises(StepTableError):  # the estimate entry checks the same way
        compute_advantages(bad)


def with_tokens(steps: pd.DataFrame, **columns) -> pd.DataFrame:
    """``steps`` with per-token columns, each a function of the row number to its cell."""
    return steps.assign(**{c: [make(i) for i in range(len(steps))]
                           for c, make in columns.items()})


def test_per_token_lists_are_valid_and_kept_as_the_log_gave_them():
    steps = with_tokens(trajectories(TWO), tokens=lambda i: ["go", " north"],
                        token_ids=lambda i: np.array([12, 7]),
                        token_logprobs=lambda i: [-0.5, None if i else -np.inf],
                        token_entropy=lambda i: None if i == 2 else (0.1, 0.2),
                        loss_mask=lambda i: np.array([True, False]))
    assert validate_steps(steps) == []
    clean = check_steps(steps)
    assert clean["loss_mask"].iloc[0].tolist() == [True, False]
    assert clean["token_logprobs"].iloc[1] == [-0.5, None] and clean["token_entropy"][2] is None


@pytest.mark.parametrize(("column", "make", "says"), [
    ("token_logprobs", lambda i: "[-0.5, -0.1]" if i == 3 else [-0.5, -0.1],
     "column 'token_logprobs' holds no list (one entry per token of the step's response) in "
     "1 row(s): 3"),
    ("token_logprobs", lambda i: [-0.5, "x"] if i == 1 else [-0.5, -0.1],
     "column 'token_logprobs': a list entry is not numeric in 1 row(s): 1"),
    ("token_logprobs", lambda i: [[-0.5], [-0.1]], "a list entry is not numeric"),  # nested
    ("token_entropy", lambda i: [0.1, 1j], "a list entry holds complex numbers"),
    ("token_ids", lambda i: [3, -1] if i == 4 else [3, 1],
     "column 'token_ids': a list entry is not a whole number from 0 to 2**62 in 1 row(s): 4"),
    ("token_ids", lambda i: [3, None], "column 'token_ids': a list entry is null"),
    ("loss_mask", lambda i: [1, 2], "column 'loss_mask': a list entry is not boolean"),
    ("tokens", lambda i: ["go", 5] if i == 0 else ["go", "x"],
     "column 'tokens': a list entry is not text in 1 row(s): 0"),
    ("tokens", lambda i: ["go", "north", "now"] if i in (1, 2) else ["go", "x"],
     "per-token columns differ in length (each holds one entry per token of the step; the "
     "first such row: 'tokens' 3, 'token_logprobs' 2) in 2 row(s): 1, 2"),
])
def test_malformed_per_token_lists_name_the_column_and_rows(column, make, says):
    columns = {"token_logprobs": lambda i: [-0.5, -0.1], column: make}
    bad = with_tokens(trajectories(TWO), **columns)
    problems = validate_steps(bad)
    assert any(says in p for p in problems), problems
    with pytest.raises(StepTableError, match="in dump.pkl"):
        check_steps(bad, source="dump.pkl")
