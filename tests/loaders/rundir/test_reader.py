"""The run directory's reader: round trips, lazy reads, summaries without rows, metrics."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps
from loaders import (
    LoaderError,
    LoadWarning,
    LogFormatError,
    RunWriter,
    load_steps,
    open_log,
    open_run,
    report_of,
)
from loaders.rundir import step_path
from loaders.summary import group_summary, step_summary, trajectory_table
from tests.loaders.builders import step_table
from tests.loaders.rundir.conftest import MANIFEST


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    cols = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
            "is_action_valid"]
    return frame[cols].sort_values(["group_id", "traj_id", "t"]).reset_index(drop=True)


def test_round_trip_and_lazy_reads(run):
    original = synthetic_steps(2500, seed=2)
    log = open_run(run)
    assert log.train_steps() == [1, 2, 3]
    assert log.manifest["model"] == "tiny"
    step = log.load_step(2)
    assert (step["train_step"] == 2).all()
    pd.testing.assert_frame_equal(_sorted(step), _sorted(original), check_dtype=False)

    groups = log.groups(2)
    assert groups == sorted(original["group_id"].unique())
    for gid in groups:
        one = log.load_group(2, gid)
        pd.testing.assert_frame_equal(_sorted(one),
                                      _sorted(original[original["group_id"] == gid]),
                                      check_dtype=False)


def test_summaries_match_rows(run):
    log = open_run(run)
    summary = log.summary()
    assert summary["train_step"].tolist() == [1, 2, 3]
    for s in (1, 2, 3):
        expected = step_summary(trajectory_table(synthetic_steps(2500, seed=s)), OutcomeRule())
        row = summary.set_index("train_step").loc[s]
        for key, value in expected.items():
            assert row[key] == pytest.approx(value), key
    pd.testing.assert_frame_equal(log.group_summary(1),
                                  group_summary(trajectory_table(synthetic_steps(2500, seed=1)),
                                                OutcomeRule()),
                                  check_dtype=False)


def test_summaries_follow_the_rule_asked_for(run):
    log = open_run(run)
    rows = log.load_step(2)
    lenient = OutcomeRule(success_threshold=float(rows["episode_reward"].min()))
    assert (log.summary(lenient)["success_rate"] == 1.0).all()
    expected = trajectory_table(rows)["reward"].ge(5.0).mean()
    by_five = log.summary(OutcomeRule(success_threshold=5.0)).set_index("train_step")
    assert by_five.loc[2, "success_rate"] == pytest.approx(expected)
    assert log.group_summary(2, lenient)["success_rate"].eq(1.0).all()


def test_listing_reads_no_rows_and_summaries_only_their_columns(run, monkeypatch):
    """Groups come from the Parquet footers; summaries read only the columns they need."""
    def no_rows(*args, **kwargs):
        raise AssertionError("rows were read")

    read_columns = []
    real_read_table = pq.read_table

    def read_table(path, columns=None, **kwargs):
        assert columns is not None, "every column was read"
        read_columns.extend(columns)
        return real_read_table(path, columns=columns, **kwargs)

    monkeypatch.setattr(pq, "read_table", no_rows)
    monkeypatch.setattr(pq.ParquetFile, "read", no_rows)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", no_rows)
    log = open_run(run)
    assert log.groups(3)
    monkeypatch.setattr(pq, "read_table", read_table)
    assert len(log.summary()) == 3
    assert len(log.group_summary(3)) == len(log.groups(3))
    assert set(read_columns) <= {"group_id", "traj_id", "t", "episode_reward",
                                 "is_action_valid", "won", "done", "task"}


def test_load_group_reads_one_row_group(run, monkeypatch):
    read = []
    original = pq.ParquetFile.read_row_group

    def spy(self, i, *args, **kwargs):
        read.append(i)
        return original(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    log = open_run(run)
    gid = log.groups(1)[-1]
    rows = log.load_group(1, gid)
    assert len(read) == 1 and set(rows["group_id"]) == {gid}
    assert pq.ParquetFile(step_path(run, 1)).num_row_groups > 1


def test_load_steps_selects(run):
    assert (load_steps(run, train_step=3)["train_step"] == 3).all()
    gid = open_run(run).groups(1)[0]
    rows = load_steps(run, group_id=gid)
    assert set(rows["group_id"]) == {gid} and set(rows["train_step"]) == {1, 2, 3}
    assert len(load_steps(run)) == sum(len(synthetic_steps(2500, seed=s)) for s in (1, 2, 3))
    with pytest.raises(LoaderError, match="no training step 9; the log holds 1-3"):
        load_steps(run, train_step=9)
    with pytest.raises(LoaderError, match="has no group 'nope'"):
        open_run(run).load_group(1, "nope")


def test_metrics(run):
    metrics = open_run(run).metrics()
    assert metrics["train_step"].tolist() == [1, 2, 3]
    assert metrics["actor/loss"].tolist() == pytest.approx([0.1, 0.2, 0.3])


def test_live_run_refresh_and_leftover_temp_files(tmp_path):
    writer = RunWriter(tmp_path / "r", MANIFEST)
    writer.write_step(1, synthetic_steps(500))
    log = open_run(tmp_path / "r")
    assert log.train_steps() == [1]
    first = log.summary()
    writer.write_step(2, synthetic_steps(500, seed=2))
    assert log.train_steps() == [1]
    (tmp_path / "r" / "rollouts" / ".step-000003.parquet.tmp-4242").write_bytes(b"PAR1 half")
    log.refresh()
    assert log.train_steps() == [1, 2]
    assert len(log.summary()) == 2
    assert log.summary().iloc[0].equals(first.iloc[0])
    assert any("being written or left by a crash" in n for n in log.report.notes)
    writer.write_step(2, synthetic_steps(300, seed=5), overwrite=True)
    assert log.summary().iloc[1]["n_steps"] == len(synthetic_steps(300, seed=5))


def test_a_malformed_metrics_line_is_skipped_and_named_or_refused_when_strict(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(300))
    path = tmp_path / "r" / "metrics.jsonl"
    path.write_text("not json\n" + path.read_text())
    log = open_run(tmp_path / "r")
    with pytest.warns(LoadWarning, match=r"metrics\.jsonl:1"):
        assert log.metrics()["train_step"].tolist() == [1]
    assert log.report.n_skipped == 1
    strict = open_log(tmp_path / "r", strict=True)
    with pytest.raises(LogFormatError, match=r"metrics\.jsonl:1: malformed JSON line"):
        strict.metrics()


def test_duplicated_rows_in_a_foreign_step_file(tmp_path):
    (tmp_path / "r" / "rollouts").mkdir(parents=True)
    steps = step_table(train_step=1)
    pd.concat([steps, steps.iloc[:2]]).to_parquet(step_path(tmp_path / "r", 1), index=False)
    with pytest.warns(LoadWarning, match="exact duplicate"):
        loaded = open_run(tmp_path / "r").load_step(1)
    assert len(loaded) == len(steps) and report_of(loaded).n_skipped == 2


def test_corrupt_step_file_names_the_file(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(300))
    step_path(tmp_path / "r", 2).write_bytes(b"this is not parquet")
    log = open_run(tmp_path / "r")
    with pytest.raises(LogFormatError, match=r"step-000002\.parquet: not a readable Parquet"):
        log.summary()
    assert len(log.load_step(1)) == len(synthetic_steps(300))


def test_metrics_with_a_train_step_that_is_no_whole_number(tmp_path):
    RunWriter(tmp_path / "r", MANIFEST).write_step(1, step_table())
    with open(tmp_path / "r" / "metrics.jsonl", "a") as f:
        f.write('{"train_step": "2", "loss": 1}\n')
    with pytest.raises(LogFormatError, match=r"metrics.jsonl:2: field 'train_step' must be a "
                                             r"whole number, got '2'"):
        open_run(tmp_path / "r").metrics()


def test_step_columns_read_a_few_columns_with_keys_as_categories(run):
    log = open_run(run)
    part = log.step_columns(2, ["group_id", "t", "state_key", "action", "nope"])
    whole = log.load_step(2)
    assert list(part.columns) == ["group_id", "t", "state_key", "action"]
    assert isinstance(part["state_key"].dtype, pd.CategoricalDtype)
    assert part["state_key"].astype(str).tolist() == whole["state_key"].tolist()
    assert part["action"].astype(str).tolist() == whole["action"].tolist()
    assert part["group_id"].tolist() == whole["group_id"].tolist()
    assert log.step_source(2) == step_path(run, 2) and log.read_options == {}
