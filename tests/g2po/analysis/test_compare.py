import numpy as np
import pandas as pd

from g2po.analysis.compare import (
    compare_estimators,
    parameter_choices,
    rank_correlation,
    sign_disagreements,
    zscore,
)
from g2po.estimators import compute_advantages
from tests.app.builders import group_steps


def one_group():
    steps = group_steps(rows=400)
    return steps[steps["group_id"] == "task-0"]


def test_columns_are_the_estimators_advantages_in_step_order():
    steps = one_group()
    result = compare_estimators(steps, ["g2po", "grpo", "gigpo"], {"g2po": {"w": 0.5}})
    assert result.estimators == ["g2po", "grpo", "gigpo"] and not result.errors
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    expected = compute_advantages(ordered, "g2po", w=0.5)["adv"].to_numpy()
    np.testing.assert_allclose(result.table["g2po"], expected)
    np.testing.assert_allclose(result.table["grpo"],
                               compute_advantages(ordered, "grpo")["adv"].to_numpy())


def test_a_failing_estimator_is_reported_and_the_others_still_run():
    result = compare_estimators(one_group(), ["value_iteration", "rloo"],
                                {"value_iteration": {"gamma": 1.0}})
    assert result.estimators == ["rloo"]
    assert "gamma" in result.errors["value_iteration"]


def test_rank_correlation_is_one_on_the_diagonal():
    result = compare_estimators(one_group(), ["g2po", "gigpo", "g2po_ep"])
    corr = rank_correlation(result.table, result.estimators)
    np.testing.assert_allclose(np.diag(corr), 1.0)
    assert corr.shape == (3, 3)


def test_sign_disagreements_counts_opposite_signs_only():
    table = pd.DataFrame({"traj_id": ["a"] * 4, "t": range(4), "action": "x", "observation": "s",
                          "episode_reward": 1.0, "a": [1.0, -1.0, 0.0, 2.0],
                          "b": [-0.5, -2.0, 3.0, -3.0]})
    diff = sign_disagreements(table, "a", "b")
    assert list(diff["t"]) == [3, 0]  # largest gap first; zero never disagrees
    assert list(diff["gap"]) == [5.0, 1.5]


def test_zscore_puts_every_estimator_on_one_scale():
    table = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [100.0, 300.0, 200.0], "c": [5.0] * 3})
    z = zscore(table, ["a", "b", "c"])
    np.testing.assert_allclose(z["a"], [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    np.testing.assert_allclose(z["b"], [-1.2247449, 1.2247449, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(z["c"], 0.0)
    assert table["a"].tolist() == [1.0, 2.0, 3.0]  # the caller's table is untouched


def test_parameter_choices_come_from_literal_annotations():
    assert parameter_choices("g2po") == {"mode": ("mean_std_norm", "mean_norm"),
                                         "terminal": ("binary", "reward")}
    assert parameter_choices("rloo") == {}


def test_the_text_column_is_named_for_what_it_is():
    steps = one_group()
    assert compare_estimators(steps, ["grpo"]).text_column == "observation"
    result = compare_estimators(steps.drop(columns="observation"), ["grpo"])
    assert result.text_column == "state_key" and "state_key" in result.table.columns
