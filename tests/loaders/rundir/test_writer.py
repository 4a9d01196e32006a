"""The run directory's writer: layout and manifest, resume, refusals, atomic landing, rewind."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from g2po.errors import StepTableError
from g2po.synthetic import synthetic_steps
from loaders import (
    LoaderError,
    LoadWarning,
    RunWriter,
    detect_format,
    open_run,
)
from tests.loaders.builders import step_table
from tests.loaders.rundir.conftest import MANIFEST


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


def test_truncated_metrics_line_is_skipped_then_repaired_on_resume(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(300))
    with open(tmp_path / "r" / "metrics.jsonl", "a") as f:
        f.write('{"train_step": 2, "actor/lo')  # a crash mid-append
    with pytest.warns(LoadWarning, match="truncated last line"):
        assert open_run(tmp_path / "r").metrics()["train_step"].tolist() == [1]
    RunWriter(tmp_path / "r", {}, resume=True).write_step(2, synthetic_steps(300))
    assert open_run(tmp_path / "r").metrics()["train_step"].tolist() == [1, 2]


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
