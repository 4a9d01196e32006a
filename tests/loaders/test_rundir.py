"""The run directory: atomic writer, lazy reader, live runs, summaries without rows."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from g2po.errors import StepTableError
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps
from loaders import (
    LoaderError,
    LoadWarning,
    LogFormatError,
    RunWriter,
    detect_format,
    load_steps,
    open_log,
    open_run,
    report_of,
)
from loaders.rundir import META_KEY, step_path
from loaders.summary import group_summary, step_summary, trajectory_table
from tests.loaders.builders import step_table

MANIFEST = {"config": {"gamma": 0.95, "success_reward": 10.0}, "estimator": "g2po",
            "env": "demo", "model": "tiny"}


@pytest.fixture
def run(tmp_path):
    writer = RunWriter(tmp_path / "run", MANIFEST)
    for s in (1, 2, 3):
        writer.write_step(s, synthetic_steps(2500, seed=s), {"actor/loss": 0.1 * s})
    return tmp_path / "run"


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    cols = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
            "is_action_valid"]
    return frame[cols].sort_values(["group_id", "traj_id", "t"]).reset_index(drop=True)


def test_layout_and_manifest(run):
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["format"] == "g2po-run" and manifest["version"] == 1
    assert manifest["env"] == "demo" and manifest["config"]["gamma"] == 0.95
    assert "created" in manifest
    assert sorted(p.name for p in (run / "rollouts").iterdir()) == \
        ["step-000001.parquet", "step-000002.parquet", "step-000003.parquet"]
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["train_step"] for line in lines] == [1, 2, 3]
    assert json.loads(lines[1])["actor/loss"] == pytest.approx(0.2)
    assert "rollout/success_rate" in json.loads(lines[0])
    # when each step was logged (Unix seconds): the training curves' wall clock
    stamps = [json.loads(line)["_timestamp"] for line in lines]
    assert stamps == sorted(stamps) and abs(stamps[-1] - time.time()) < 600
    assert detect_format(run) == "run" and detect_format(run / "run.json") == "run"


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


def test_small_groups_share_row_groups(tmp_path):
    steps = step_table(groups=40, trajs=2, length=2)
    RunWriter(tmp_path / "r", {}).write_step(1, steps)
    assert pq.ParquetFile(step_path(tmp_path / "r", 1)).num_row_groups == 1
    log = open_run(tmp_path / "r")
    assert len(log.load_group(1, "g17")) == (steps["group_id"] == "g17").sum()


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


def test_existing_run_is_not_overwritten_and_resumes(run):
    with pytest.raises(LoaderError, match="resume=True"):
        RunWriter(run, MANIFEST)
    created = json.loads((run / "run.json").read_text())["created"]
    writer = RunWriter(run, {"note": "resumed"}, resume=True)
    assert writer.completed_steps() == [1, 2, 3]
    with pytest.raises(LoaderError, match="already written"):
        writer.write_step(3, synthetic_steps(300))
    writer.write_step(3, synthetic_steps(300, seed=9), overwrite=True)
    writer.write_step(4, synthetic_steps(300))
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["created"] == created and manifest["note"] == "resumed"
    assert manifest["env"] == "demo"
    log = open_run(run)
    assert len(log.load_step(3)) == len(synthetic_steps(300, seed=9))
    with pytest.warns(LoadWarning, match="written again later"):
        metrics = log.metrics()
    assert metrics["train_step"].tolist() == [1, 2, 3, 4]
    assert log.report.n_skipped == 1


def test_invalid_table_is_refused_and_nothing_lands(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    bad = step_table()
    bad.loc[1, "episode_reward"] = np.nan
    with pytest.raises(StepTableError, match="episode_reward"):
        writer.write_step(1, bad)
    with pytest.raises(LoaderError, match="another train_step"):
        writer.write_step(1, step_table(train_step=2))
    with pytest.raises(LoaderError, match="no step rows"):
        writer.write_step(1, step_table().iloc[:0])
    with pytest.raises(StepTableError, match="repeats a step index"):
        writer.write_step(1, pd.concat([step_table(), step_table().iloc[:1]]))
    assert writer.completed_steps() == []
    assert list((tmp_path / "r" / "rollouts").iterdir()) == []
    assert not (tmp_path / "r" / "metrics.jsonl").exists()


def test_crash_mid_write_leaves_no_file_under_the_final_name(tmp_path, monkeypatch):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(2000))
    calls = []
    original = pq.ParquetWriter.write_table

    def crash(self, table, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return original(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", crash)
    with pytest.raises(OSError, match="disk full"):
        writer.write_step(2, synthetic_steps(2000, seed=1))
    assert writer.completed_steps() == [1]
    assert sorted(p.name for p in (tmp_path / "r" / "rollouts").iterdir()) == \
        ["step-000001.parquet"]
    assert len((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()) == 1


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


def test_truncated_metrics_line_is_skipped_then_repaired_on_resume(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(300))
    with open(tmp_path / "r" / "metrics.jsonl", "a") as f:
        f.write('{"train_step": 2, "actor/lo')  # a crash mid-append
    with pytest.warns(LoadWarning, match="truncated last line"):
        assert open_run(tmp_path / "r").metrics()["train_step"].tolist() == [1]
    RunWriter(tmp_path / "r", {}, resume=True).write_step(2, synthetic_steps(300))
    assert open_run(tmp_path / "r").metrics()["train_step"].tolist() == [1, 2]


def test_malformed_metrics_line_names_the_line(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(300))
    path = tmp_path / "r" / "metrics.jsonl"
    path.write_text("not json\n" + path.read_text())
    with pytest.raises(LogFormatError, match=r"metrics\.jsonl:1: malformed JSON line"):
        open_run(tmp_path / "r").metrics()


def test_manifest_problems(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.json").write_text('{"format": "g2po-run", "version": 99}')
    with pytest.raises(LogFormatError, match="version 99 is newer"):
        open_run(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "run.json").write_text('{"format": "wandb"}')
    with pytest.raises(LogFormatError, match="field 'format' is 'wandb'"):
        open_run(tmp_path / "b")
    (tmp_path / "c" / "rollouts").mkdir(parents=True)
    log = open_run(tmp_path / "c")
    assert log.train_steps() == [] and any("run.json missing" in n for n in log.report.notes)


def test_step_file_from_another_tool(tmp_path):
    """A Parquet step file without our footer: summaries from its columns, groups by filter."""
    (tmp_path / "r" / "rollouts").mkdir(parents=True)
    steps = step_table(groups=3, train_step=5)
    steps.to_parquet(tmp_path / "r" / "rollouts" / "step-000005.parquet", index=False)
    log = open_log(tmp_path / "r")
    assert log.summary()["n_steps"].tolist() == [len(steps)]
    assert log.groups(5) == ["g0", "g1", "g2"]
    assert len(log.load_group(5, "g1")) == (steps["group_id"] == "g1").sum()
    assert META_KEY not in (pq.read_metadata(step_path(tmp_path / "r", 5)).metadata or {})


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


def test_one_megabyte_observation_and_unicode(tmp_path):
    steps = step_table(groups=1, trajs=2, length=2)
    big = "観測 🌍 " + "x" * (1 << 20)
    steps["observation"] = big
    steps.loc[0, "state_key"] = "שלום 👋 κόσμε"
    writer = RunWriter(tmp_path / "r", {"model": "モデル"})
    writer.write_step(1, steps)
    log = open_run(tmp_path / "r")
    one = log.load_group(1, "g0")
    assert one["observation"].str.len().min() == len(big)
    assert "שלום 👋 κόσμε" in set(one["state_key"])
    assert log.manifest["model"] == "モデル"


def test_rewind_forgets_later_steps_and_metrics(run):
    from loaders.rundir import rewind_run

    path = run
    before = open_run(path).train_steps()
    assert len(before) >= 2
    keep = before[0]
    with open(path / "metrics.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"train_step": 99, "loss"')  # a half-written line of a killed run
    removed = rewind_run(path, keep)
    assert removed == before[1:]
    assert open_run(path).train_steps() == [keep]
    lines = (path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["train_step"] for line in lines] == [keep]


def test_corrupt_footer_is_an_error_naming_the_file_when_browsing(tmp_path):
    from tests.loaders.builders import rewrite_footer

    writer = RunWriter(tmp_path / "r", MANIFEST)
    writer.write_step(1, step_table(groups=3))
    rewrite_footer(step_path(tmp_path / "r", 1), b'{"groups": [')
    run = open_run(tmp_path / "r")
    for browse in (lambda: run.groups(1), lambda: run.load_group(1, "g0")):
        with pytest.raises(LogFormatError, match="step-000001.parquet: the footer's g2po.step "
                                                 "metadata is not JSON"):
            browse()


@pytest.mark.parametrize(("manifest", "says"), [
    ('{"format": "g2po-run", "version": "1"}', "field 'version' must be a whole number"),
    ('{"format": "g2po-run", "version": 7}', "newer than this reader"),
    ("[1, 2]", "a run manifest is a JSON object"),
])
def test_manifest_problems_are_named(tmp_path, manifest, says):
    RunWriter(tmp_path / "r", MANIFEST).write_step(1, step_table())
    (tmp_path / "r" / "run.json").write_text(manifest)
    with pytest.raises(LogFormatError, match=says):
        open_run(tmp_path / "r")


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


def test_entries_of_rollouts_not_named_like_step_files_are_noted(tmp_path):
    (tmp_path / "r" / "rollouts").mkdir(parents=True)
    step_table().to_parquet(tmp_path / "r" / "rollouts" / "step-000001.parquet")
    for name in ("STEP-000002.PARQUET", "step-3.csv", ".step-000004.parquet.tmp-9"):
        (tmp_path / "r" / "rollouts" / name).write_bytes(b"x")
    log = open_log(tmp_path / "r")
    assert log.train_steps() == [1]
    notes = log.report.notes
    assert any("run.json missing" in n for n in notes)
    assert any("2 entr(ies) not named step-NNNNNN.parquet, not read: STEP-000002.PARQUET, "
               "step-3.csv" in n for n in notes), notes
