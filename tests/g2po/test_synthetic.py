"""Synthetic groups and the synthetic values of declared step columns."""

from __future__ import annotations

import pandas as pd

from g2po.steps import validate_steps
from g2po.synthetic import synthetic_steps, with_step_columns

KINDS = {"flag": "bool", "score": "float64", "count": "int64", "word": "str"}


def test_synthetic_steps_are_a_valid_table():
    steps = synthetic_steps(3_000, seed=2)
    assert validate_steps(steps) == [] and 2_000 < len(steps) < 4_000


def test_declared_columns_get_values_of_their_type_whatever_the_row_order():
    steps = synthetic_steps(2_000)
    out = with_step_columns(steps, KINDS)
    assert out["flag"].dtype == bool and 0.15 < out["flag"].mean() < 0.35
    assert out["score"].between(-10, 10).all() and out["score"].nunique() > 100
    assert set(out["count"]) == {0, 1, 2, 3} and out["count"].dtype == "int64"
    assert set(out["word"]) == {"alpha", "beta", "gamma", "delta"}
    shuffled = with_step_columns(steps.sample(frac=1.0, random_state=5), KINDS)
    pd.testing.assert_frame_equal(shuffled.loc[steps.index], out)
    other_seed = with_step_columns(steps, KINDS, seed=1)
    assert not other_seed["score"].equals(out["score"])
    assert with_step_columns(steps, {}).equals(steps)
