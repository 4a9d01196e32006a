"""Repeated rows and reused trajectory ids, on a table in memory and on a run directory (whose
step files the triage reads without the loader's deduplication); incomplete rollouts."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from g2po.analysis.alarms import credit_alarms
from g2po.analysis.checks.rows import separate_repeats
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import sort_groups, triage_groups, triage_log
from g2po.outcomes import OutcomeRule
from loaders import RunWriter, open_log
from tests.g2po.analysis.checks.examples import HEALTHY, beside_healthy
from tests.g2po.builders import trajectories


def repeated(group: str = "dup") -> pd.DataFrame:
    """HEALTHY with rollout a's second step written twice, and rollouts c and d logged under
    one trajectory id."""
    steps = trajectories(HEALTHY, group)
    steps = pd.concat([steps, steps[(steps["traj_id"] == "a") & (steps["t"] == 1)]],
                      ignore_index=True)
    return steps.assign(traj_id=steps["traj_id"].replace({"d": "c"}))


def incomplete(group: str = "lost") -> pd.DataFrame:
    steps = trajectories(HEALTHY, group)
    return steps.assign(incomplete=steps["traj_id"] == "b")


EXAMPLES = {
    "duplicates": (beside_healthy(repeated()), OutcomeRule(), ["dup"]),
    "incomplete": (beside_healthy(incomplete()), OutcomeRule(), ["lost"]),
}


def test_repeats_are_separated_counted_and_said():
    steps = beside_healthy(repeated())
    fixed = separate_repeats(steps)
    assert len(fixed) == len(steps) - 1  # the exact copy left out, counted on its original
    assert fixed["_copies"].sum() == 1
    assert sorted(fixed.loc[fixed["group_id"] == "dup", "traj_id"].unique()) == \
        ["a", "b", "c", "c#1"]
    dup = fixed[fixed["group_id"] == "dup"]
    assert dup.loc[dup["traj_id"].isin(["c", "c#1"]), "_reused_id"].all()
    assert not fixed.loc[fixed["group_id"] == "ok", "_reused_id"].any()
    table = triage_groups(steps, rule=OutcomeRule()).set_index("group_id")
    dup = table.loc["dup"]
    assert (dup["duplicate_rows"], dup["reused_ids"], dup["rollouts"]) == (1, 2, 4)
    assert dup["reason"] == "repeated rows: 2 rollouts share a trajectory id and 1 row(s) " \
                            "repeated exactly"
    assert table.loc["ok", "alarm_duplicates"] == 0
    assert sort_groups(table.reset_index())["group_id"].iloc[0] == "dup"
    # a table without repeats comes back as it was
    clean = trajectories(HEALTHY)
    assert separate_repeats(clean) is clean


def test_a_run_directory_with_a_repeated_row_is_triaged_not_refused(tmp_path):
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    path = writer.write_step(1, beside_healthy(trajectories(HEALTHY, "dup")))
    table = pq.read_table(path)  # a row written twice, as a buggy writer would
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]).replace_schema_metadata(
        table.schema.metadata), path)
    got = triage_log(open_log(tmp_path / "run"), cache=False).set_index("group_id")
    assert got["duplicate_rows"].sum() == 1 and got["alarm_duplicates"].sum() == 1
    assert got["reason"].str.startswith("repeated rows: 1 row(s) repeated exactly").sum() == 1


def test_incomplete_rollouts_are_read_when_the_log_marks_them():
    table = triage_groups(beside_healthy(incomplete()), rule=OutcomeRule()).set_index(
        "group_id")
    assert table.loc["lost", "alarm_incomplete"] == 1 and table.loc["ok", "alarm_incomplete"] == 0
    assert table.loc["lost", "reason"] == "1 of 4 rollouts incomplete: a line of them was lost"
    alarms = {a.kind: a for a in credit_alarms(state_graph(incomplete(), rule=OutcomeRule()),
                                               rule=OutcomeRule())}
    assert set(alarms["incomplete"].steps["traj_id"]) == {"b"}
    # without the column, nothing to say
    assert (triage_groups(trajectories(HEALTHY), rule=OutcomeRule())["alarm_incomplete"] == 0
            ).all()
