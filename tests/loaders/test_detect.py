"""Format detection by content and name, and the --format override."""

from __future__ import annotations

import pickle

import pytest

from loaders import LoaderError, NoLogFoundError, RunWriter, detect_format, load_steps, open_log
from tests.loaders.builders import agent_loop_entries, step_table, write_verl_dump


def test_by_content_when_the_name_says_nothing(tmp_path):
    steps = step_table()
    steps.to_parquet(tmp_path / "a")
    steps.to_json(tmp_path / "b", orient="records", lines=True)
    steps.to_csv(tmp_path / "c", index=False)
    (tmp_path / "d").write_bytes(pickle.dumps({"x": [1]}))
    write_verl_dump(tmp_path / "v", 1, agent_loop_entries(1))
    (tmp_path / "v" / "1.jsonl").rename(tmp_path / "e.log")
    assert [detect_format(tmp_path / n) for n in "abcd"] == ["parquet", "jsonl", "csv", "pickle"]
    assert detect_format(tmp_path / "e.log") == "verl"


def test_directories(tmp_path):
    RunWriter(tmp_path / "run", {})
    write_verl_dump(tmp_path / "verl", 5, agent_loop_entries(5))
    assert detect_format(tmp_path / "run") == "run"
    assert detect_format(tmp_path / "verl") == "verl"


def test_directory_with_no_logs(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NoLogFoundError, match="no logs found.*expected a g2po run directory.*"
                                              "It holds: notes.txt"):
        load_steps(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoLogFoundError, match="It holds: nothing"):
        open_log(tmp_path / "empty")
    # a run's rollouts/ folder, given instead of the run: the message says which to pass
    writer = RunWriter(tmp_path / "run", {})
    writer.write_step(1, step_table())
    with pytest.raises(NoLogFoundError, match=r"It holds: step-000001\.parquet \(a run's "
                                              r"rollouts/ folder\? pass the run directory, "
                                              + str(tmp_path / "run")):
        load_steps(tmp_path / "run" / "rollouts")


def test_missing_path_and_unknown_content(tmp_path):
    with pytest.raises(NoLogFoundError, match="no such file"):
        load_steps(tmp_path / "nope.csv")
    (tmp_path / "x.bin").write_bytes(b"\x00\x01\x02 binary")
    with pytest.raises(NoLogFoundError, match="binary content"):
        load_steps(tmp_path / "x.bin")
    (tmp_path / "x.txt").write_text("just some text\n")
    with pytest.raises(NoLogFoundError, match="unknown log format \\(pass --format\\)"):
        load_steps(tmp_path / "x.txt")


def test_format_override(tmp_path):
    step_table().to_json(tmp_path / "steps.txt", orient="records", lines=True)
    assert len(load_steps(tmp_path / "steps.txt", format="jsonl")) == len(step_table())
    assert len(load_steps(tmp_path / "steps.txt", format="table")) == len(step_table())
    with pytest.raises(LoaderError, match="unknown format 'xml'"):
        load_steps(tmp_path / "steps.txt", format="xml")
    # A verl dump forced to be read as a plain table lacks the step-table fields.
    path = write_verl_dump(tmp_path / "v", 1, agent_loop_entries(1))
    with pytest.raises(LoaderError, match="missing required column"):
        load_steps(path, format="jsonl")


def test_options_that_do_not_apply_are_refused(tmp_path):
    RunWriter(tmp_path / "run", {})
    with pytest.raises(LoaderError, match="mapping do not apply to a run log"):
        open_log(tmp_path / "run", mapping={"group_id": "uid"})
    step_table().to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(LoaderError, match="state_regex do not apply to a csv log"):
        open_log(tmp_path / "s.csv", state_regex="x")
