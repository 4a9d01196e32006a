"""Training curves written by verl's own ``Tracking`` class (its ``file`` and ``tensorboard``
backends), read back: a plain run, a resumed file logger, a TensorBoard folder of several runs
and a resumed TensorBoard run, and a dump opened with its curves as one run."""

from __future__ import annotations

import json

import numpy as np
import pytest

import loaders
from loaders import LoaderError, LogFormatError, open_log, report_of
from loaders.curves import (
    RESUMED,
    TIMESTAMP,
    curves_kind,
    elapsed_seconds,
    find_curves,
    read_curves,
    read_file_logger,
    read_tensorboard,
    tensorboard_runs,
)
from loaders.lines import MALFORMED
from tests.loaders.builders import agent_loop_entries, write_verl_curves, write_verl_dump


@pytest.fixture(scope="module")
def verl_logs(tmp_path_factory):
    """Files written by verl's ``Tracking`` (imports verl and torch: slow, once)."""
    return write_verl_curves(tmp_path_factory.mktemp("verl_logs"))


def test_the_file_logger_and_tensorboard_give_the_same_curves(verl_logs):
    both = verl_logs / "both"
    assert curves_kind(both / "exp.jsonl") == "file"
    assert curves_kind(both / "tb") == "tensorboard"
    from_file = read_curves(both / "exp.jsonl")
    from_tb = read_curves(both / "tb")
    assert from_file["train_step"].tolist() == from_tb["train_step"].tolist() == list(range(1, 7))
    # TensorBoard's events also say when they were written; verl's file logger does not
    assert set(from_file.columns) == set(from_tb.columns) - {TIMESTAMP} == {
        "train_step", "actor/pg_loss", "actor/entropy", "critic/score/mean", "timing_s/gen",
        "timing_s/step", "perf/throughput", "response_length/mean",
        "val-core/alfworld/reward/mean@1"}
    for column in from_file.columns:
        np.testing.assert_allclose(from_tb[column].to_numpy(float),
                                   from_file[column].to_numpy(float), rtol=1e-6)
    # validation only every other step: the other steps have no value, not 0
    assert from_file["val-core/alfworld/reward/mean@1"].isna().tolist() == [True, False] * 3
    assert from_file.loc[2, "critic/score/mean"] == 3.0
    assert not report_of(from_file).notes


def test_the_file_loggers_default_place(verl_logs):
    frame = read_curves(verl_logs / "root" / "g2po" / "exp.jsonl")
    assert frame["train_step"].tolist() == [1, 2]


def test_a_resumed_file_logger_says_the_steps_before_are_missing(verl_logs):
    frame = read_file_logger(verl_logs / "resumed.jsonl")
    assert frame["train_step"].tolist() == [4, 5, 6, 7, 8]
    assert frame.loc[0, "critic/score/mean"] == 8.0  # the resumed run's values (scale 2)
    notes = report_of(frame).notes
    assert len(notes) == 1 and RESUMED in notes[0] and "steps 1-3 missing" in notes[0]


def test_a_tensorboard_folder_of_several_runs_names_them(verl_logs):
    folder = verl_logs / "tensorboard_log" / "g2po"
    assert [p.name for p in tensorboard_runs(folder)] == ["a", "b"]
    with pytest.raises(LoaderError, match=r"holds 2 TensorBoard runs \(a, b\)"):
        read_tensorboard(folder)
    assert read_tensorboard(folder / "b")["train_step"].tolist() == [1, 2, 3]


def test_a_resumed_tensorboard_run_keeps_the_later_values(verl_logs):
    run = verl_logs / "tensorboard_log" / "g2po" / "a"
    assert len(list(run.glob("events.out.tfevents.*"))) == 2
    frame = read_tensorboard(run)
    assert frame["train_step"].tolist() == list(range(1, 9))
    score = dict(zip(frame["train_step"], frame["critic/score/mean"]))
    assert score[3] == 3.0 and score[4] == 8.0 and score[8] == 16.0
    assert any("steps 4-6 are logged again" in n for n in report_of(frame).notes)


def test_the_wall_clock_is_the_loggers_times_else_verls_step_timings_summed(verl_logs):
    from_file = read_curves(verl_logs / "both" / "exp.jsonl")
    seconds, source = elapsed_seconds(from_file)
    # timing_s/step = 10 s × step: step 1 at 0, step k at the end of its own
    np.testing.assert_allclose(seconds, [0, 20, 50, 90, 140, 200])
    assert source == "verl's timing_s/step, summed"
    from_tb = read_curves(verl_logs / "both" / "tb")
    seconds, source = elapsed_seconds(from_tb)
    assert source == "the times the logger wrote" and seconds[0] == 0
    assert (np.diff(seconds) >= 0).all() and seconds[-1] < 60  # written within the test
    stamps = from_tb[TIMESTAMP].to_numpy()
    assert (stamps > 1.7e9).all()  # Unix seconds
    # a step without timing_s/step: unknown, and it adds nothing to the later steps' sum
    gap = from_file.assign(**{"timing_s/step": [10.0, np.nan, 30.0, 40.0, 50.0, 60.0]})
    seconds, _ = elapsed_seconds(gap)
    assert np.isnan(seconds[1])
    np.testing.assert_allclose(seconds[[0, 2, 3]], [0, 30, 70])
    assert elapsed_seconds(from_file.drop(columns="timing_s/step")) == (None, "")


def test_a_dump_and_its_curves_open_as_one_run(verl_logs, tmp_path):
    dump = tmp_path / "rollout_data"
    for step in (1, 2, 3):
        write_verl_dump(dump, step, agent_loop_entries(step))
    for source in (verl_logs / "both" / "exp.jsonl", verl_logs / "both" / "tb"):
        log = open_log(dump, metrics=source)
        assert log.train_steps() == [1, 2, 3]
        metrics = log.metrics()
        assert metrics["train_step"].tolist() == list(range(1, 7))
        assert "actor/pg_loss" in metrics.columns
    with pytest.raises(LoaderError, match="--metrics .*not training curves"):
        open_log(dump, metrics=dump / "1.jsonl")


def test_curves_beside_the_dump_are_found(verl_logs, tmp_path):
    run = tmp_path / "exp"
    dump = run / "rollout_data"
    for step in (1, 2):
        write_verl_dump(dump, step, agent_loop_entries(step))
    assert find_curves(dump) == (None, [])
    (run / "exp.jsonl").write_bytes((verl_logs / "both" / "exp.jsonl").read_bytes())
    log = open_log(dump)
    assert log.metrics_source == run / "exp.jsonl"
    assert any("training curves found beside the dump" in n for n in log.report.notes)
    assert len(log.metrics()) == 6
    # a second set beside it: ambiguous, so none is taken, and the report says why
    tb = run / "tensorboard_log" / "g2po" / "exp"
    tb.mkdir(parents=True)
    for event in (verl_logs / "both" / "tb").iterdir():
        (tb / event.name).write_bytes(event.read_bytes())
    log = open_log(dump)
    assert log.metrics_source is None and len(log.metrics().columns) == 1
    assert any("2 sets of training curves beside the dump" in n for n in log.report.notes)
    assert open_log(dump, metrics="").metrics_source is None  # "" = none, nothing looked for


@pytest.mark.parametrize(("line", "says"), [
    ('{"step": "one", "data": {}}', "field 'step' must be a whole number"),
    ('{"step": 1, "data": 3}', "field 'data' must be an object"),
    ('{"step": 1, "data": {}', "malformed JSON line"),
])
def test_a_broken_file_logger_line_names_file_and_line(tmp_path, line, says):
    path = tmp_path / "exp.jsonl"
    path.write_text(json.dumps({"step": 1, "data": {"a": 1.0}}) + "\n" + line + "\n"
                    + json.dumps({"step": 3, "data": {"a": 1.0}}) + "\n")
    with pytest.raises(LogFormatError, match=rf"exp.jsonl:2: .*{says}"):
        read_file_logger(path, strict=True)
    if says == "malformed JSON line":  # not JSON: one line lost, the curves kept
        frame = read_file_logger(path)
        assert frame["train_step"].tolist() == [1, 3]
        assert report_of(frame).skips[MALFORMED].where == [f"{path}:2"]
    else:  # JSON, but not the file logger's shape: the file is no file logger's
        with pytest.raises(LogFormatError, match=rf"exp.jsonl:2: .*{says}"):
            read_file_logger(path)


def test_a_step_logged_twice_merges_and_notes_it(tmp_path):
    path = tmp_path / "exp.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"step": 0, "data": {"val-core/x": 0.5}},
        {"step": 1, "data": {"a": 1.0}}, {"step": 1, "data": {"val-core/x": 0.7}},
        {"step": 1, "data": {"a": 2.0}}]) + "\n")
    frame = read_file_logger(path)
    assert frame["train_step"].tolist() == [0, 1]
    assert frame.loc[1, "a"] == 2.0 and frame.loc[1, "val-core/x"] == 0.7
    assert any("log a metric of a step again (first: line 4)" in n
               for n in report_of(frame).notes)


def test_what_is_no_curves_is_said(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(loaders.NoLogFoundError, match="no TensorBoard event files"):
        curves_kind(tmp_path / "empty")
    bad = tmp_path / "events.out.tfevents.123.host"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(LogFormatError, match="not a readable TensorBoard event file|no scalars"):
        read_curves(bad)
