import pandas as pd
import pyarrow.parquet as pq
import pytest

import loaders
from loaders import RunWriter
from loaders.across_steps import load_groups, load_groups_coded, task_column, task_index
from loaders.errors import LoaderError
from tests.app.builders import group_steps
from tests.app.views.conftest import write_training_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return loaders.open_log(write_training_run(tmp_path_factory.mktemp("r") / "run"))


def test_tasks_come_from_the_task_column_across_changing_group_ids(run):
    assert task_column(run) == "task"
    index = task_index(run)
    assert index.by == "task"
    assert set(index.table["train_step"]) == set(run.train_steps())
    for step in run.train_steps():
        for group in run.groups(step):
            assert index.task_of(step, group) == group.split("-", 1)[1]
    groups = index.groups_of("task-0")
    assert groups["train_step"].tolist() == run.train_steps()
    assert groups["group_id"].tolist() == [f"s{s}-task-0" for s in run.train_steps()]
    with pytest.raises(LoaderError, match="no group 'nope'"):
        index.task_of(1, "nope")


def test_footer_statistics_agree_with_the_rows(tmp_path):
    """Big groups fill their own row group (statistics answer), small ones share one (the two
    columns are read); both give the rows' own task."""
    writer = RunWriter(tmp_path / "mixed", {})
    big = group_steps(seed=1, rows=1300, rollouts=8, max_len=80)
    small = group_steps(seed=2, rows=150, max_len=5).assign(
        group_id=lambda f: "small-" + f["group_id"].astype(str))
    steps = pd.concat([big, small], ignore_index=True)
    steps["task"] = "T:" + steps["group_id"].astype(str)
    writer.write_step(1, steps)
    log = loaders.open_log(tmp_path / "mixed")
    meta = pq.read_metadata(log.step_file(1))
    column = meta.schema.to_arrow_schema().names.index("task")
    stats = [meta.row_group(i).column(column).statistics for i in range(meta.num_row_groups)]
    assert any(s.min == s.max for s in stats) and any(s.min != s.max for s in stats)
    index = task_index(log)
    expected = steps.drop_duplicates("group_id").set_index("group_id")["task"]
    got = index.table.set_index("group_id")["task"]
    assert got.sort_index().to_dict() == expected.astype(str).sort_index().to_dict()


def test_group_ids_when_there_is_no_task_column(tmp_path):
    writer = RunWriter(tmp_path / "plain", {})
    for step in (1, 2):
        writer.write_step(step, group_steps(seed=step, rows=300))
    log = loaders.open_log(tmp_path / "plain")
    assert task_column(log) == "group_id"
    index = task_index(log)
    assert (index.table["task"] == index.table["group_id"]).all()
    assert index.groups_of("task-0")["train_step"].tolist() == [1, 2]
    with pytest.raises(LoaderError, match="no column 'task'"):
        task_index(log, "task")
    with pytest.raises(ValueError, match="'task' or 'group_id'"):
        task_index(log, "env")


def test_load_groups_reads_only_the_columns_asked_for(run):
    pairs = [(1, "s1-task-0"), (3, "s3-task-0")]
    frame = load_groups(run, pairs)
    assert "observation" not in frame.columns
    assert frame.groupby("train_step")["group_id"].first().to_dict() == {1: "s1-task-0",
                                                                        3: "s3-task-0"}
    for step, group in pairs:
        full = run.load_group(step, group)
        part = frame[frame["train_step"] == step].reset_index(drop=True)
        pd.testing.assert_series_equal(part["state_key"].astype(str),
                                       full["state_key"].astype(str), check_names=False)
    with pytest.raises(LoaderError, match="no group"):
        load_groups(run, [(1, "missing")])


def test_table_logs_work_the_same(tmp_path, run):
    steps = pd.concat([run.load_step(s) for s in run.train_steps()], ignore_index=True)
    path = tmp_path / "steps.parquet"
    steps.to_parquet(path)
    table = loaders.open_log(path)
    assert task_index(table).table.equals(task_index(run).table)
    assert len(load_groups(table, [(2, "s2-task-1")])) == len(run.load_group(2, "s2-task-1"))


def test_coded_groups_decode_to_the_same_rows(run, tmp_path):
    pairs = [(1, "s1-task-0"), (2, "s2-task-0"), (4, "s4-task-3")]
    plain = load_groups(run, pairs)
    coded, keys = load_groups_coded(run, pairs)
    assert len(keys) == len(set(keys)) and len(keys) < len(coded)
    decoded = [keys[int(c)] for c in coded["state_key"]]
    assert decoded == plain["state_key"].astype(str).tolist()
    pd.testing.assert_frame_equal(coded.drop(columns="state_key"),
                                  plain.drop(columns="state_key"))
    steps = pd.concat([run.load_step(s) for s in run.train_steps()], ignore_index=True)
    steps.to_parquet(tmp_path / "t.parquet")
    table_coded, table_keys = load_groups_coded(loaders.open_log(tmp_path / "t.parquet"), pairs)
    assert [table_keys[int(c)] for c in table_coded["state_key"]] == decoded


def test_a_task_in_several_groups_keeps_the_group_asked_for():
    from loaders.across_steps import TaskIndex

    table = pd.DataFrame({"train_step": [1, 1, 2, 3, 3, 3],
                          "group_id": ["s1", "s3", "s2", "s3", "s5", "x"],
                          "task": ["cook", "cook", "cook", "cook", "cook", "other"]})
    index = TaskIndex("task", table)
    # the first group by id where nothing is asked for …
    plain = index.groups_of("cook")
    assert plain[["train_step", "group_id", "n_groups"]].values.tolist() == [
        [1, "s1", 2], [2, "s2", 1], [3, "s3", 2]]
    # … the group the user came from where it holds the task, whatever its id
    kept = index.groups_of("cook", prefer={3: "s5", 2: "nope"})
    assert kept["group_id"].tolist() == ["s1", "s2", "s5"]
    assert index.groups_of("cook", prefer={3: "x"})["group_id"].tolist() == ["s1", "s2", "s3"]
    assert index.groups_at("cook", 3) == ["s3", "s5"] and index.groups_at("cook", 9) == []
    assert index.shared_steps("cook") == {1: ["s1", "s3"], 3: ["s3", "s5"]}
    assert index.shared_steps("other") == {}


def test_a_verl_dump_follows_tasks_by_their_gts(tmp_path):
    from loaders import open_log
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    for step in (1, 2, 3):
        entries = agent_loop_entries(step, prompts=2)
        for e in entries:  # a new uid every step, the same task names
            e["gts"] = f"game-{e['uid'].split('_')[0][-1]}"
        write_verl_dump(tmp_path / "d", step, entries)
    index = task_index(open_log(tmp_path / "d"))
    assert index.by == "task"
    assert index.tasks() == ["game-0", "game-1"]
    groups = index.groups_of("game-1")
    assert groups["train_step"].tolist() == [1, 2, 3]
    assert groups["group_id"].nunique() == 3
