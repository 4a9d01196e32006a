"""verl v1 rows read back as agent steps."""

from __future__ import annotations

import numpy as np
import pytest

from g2po.estimators import estimate
from g2po.trainers.verl_backend.rows import RowError, split_key, step_fields_from_rows
from tests.g2po.builders import THREE, trajectories
from tests.g2po.trainers.verl_backend.batches import extra_fields_of, keys_of, tags_of


def test_split_key_takes_the_last_two_underscores():
    assert split_key("a_b-c_12_3") == ("a_b-c", "12", 3)
    with pytest.raises(RowError, match="not verl's"):
        split_key("nounderscore")
    with pytest.raises(RowError, match="not verl's"):
        split_key("uid_0_x")


def test_rows_become_step_fields_in_row_order():
    steps = trajectories(THREE, group="u7").iloc[::-1].reset_index(drop=True)
    lengths = np.arange(1, len(steps) + 1)
    fields = step_fields_from_rows(keys_of(steps), tags_of(steps, lengths),
                                   extra_fields_of(steps))
    assert fields.keep.all()
    assert list(fields.group_id) == ["u7"] * len(steps)
    assert list(fields.traj_id) == list(steps["traj_id"])
    assert list(fields.t) == list(steps["t"])
    assert list(fields.state_key) == list(steps["state_key"])
    assert list(fields.is_action_valid) == list(steps["is_action_valid"])
    assert list(fields.extra["response_tokens"]) == list(lengths)
    table = fields.table(steps["episode_reward"].to_numpy())
    assert table[list(steps.columns)].equals(steps)


def test_padding_rows_are_dropped_from_the_table():
    steps = trajectories(THREE, group="u7")
    keys = [*keys_of(steps), "padx_0_0"]
    extra = [*extra_fields_of(steps), extra_fields_of(steps)[0]]  # verl copies a real row
    tags = [*tags_of(steps, np.ones(len(steps), int)), {"is_padding": True}]
    fields = step_fields_from_rows(keys, tags, extra)
    assert list(fields.keep) == [True] * len(steps) + [False]
    assert len(fields.table(np.zeros(len(keys)))) == len(steps)


def test_rows_of_another_agent_loop_are_named():
    steps = trajectories(THREE, group="u7")
    extra = extra_fields_of(steps)
    extra[1] = {"turn_scores": []}
    extra[4] = None
    with pytest.raises(RowError, match=r"2 row\(s\): 'u7_a_1', 'u7_c_2'.*g2po_env"):
        step_fields_from_rows(keys_of(steps), tags_of(steps, np.ones(len(steps), int)), extra)


def test_a_step_index_that_disagrees_with_the_key_is_an_error():
    steps = trajectories(THREE, group="u7")
    extra = extra_fields_of(steps)
    extra[0]["g2po_step"]["t"] = 5
    with pytest.raises(RowError, match="step index"):
        step_fields_from_rows(keys_of(steps), tags_of(steps, np.ones(len(steps), int)), extra)


def test_a_declared_step_column_in_the_records_becomes_a_column():
    """What the agent loop copied from the environment (MiGPO's milestone_achieved) reaches
    the step table the estimator reads; a column no estimator declares does not."""
    steps = trajectories(THREE, group="u7")
    milestones = (steps["t"] == 1).to_numpy()
    extra = extra_fields_of(steps)
    for record, achieved in zip(extra, milestones):
        record["g2po_step"].update(milestone_achieved=bool(achieved), room_number=3)
    keys = [*keys_of(steps), "padx_0_0"]
    tags = [*tags_of(steps, np.ones(len(steps), int)), {"is_padding": True}]
    fields = step_fields_from_rows(keys, tags, [*extra, {}])
    assert "room_number" not in fields.extra
    table = fields.table(np.append(steps["episode_reward"].to_numpy(), 0.0))
    assert table["milestone_achieved"].tolist() == milestones.tolist()
    columns, _ = estimate(table, "migpo")
    assert columns["segment"].tolist() == (steps["t"] >= 2).astype(int).tolist()
    plain = step_fields_from_rows(keys_of(steps), tags_of(steps, np.ones(len(steps), int)),
                                  extra_fields_of(steps))
    assert "milestone_achieved" not in plain.extra
