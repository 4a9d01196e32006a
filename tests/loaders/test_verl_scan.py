"""The fast summary of a verl dump file: the full reader's table and errors, read faster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.triage import READ_COLUMNS
from g2po.errors import StepTableError
from loaders import LogFormatError
from loaders.lines import MALFORMED
from loaders.report import LoadReport
from loaders.verl import VALIDITY_ASSUMED, load_verl_file
from loaders.verl_scan import FAST_COLUMNS, scan_columns, scan_file, scan_files
from tests.loaders.builders import agent_loop_entries, legacy_entries, write_verl_dump


def _state_note(note: str) -> bool:
    return "state key" in note


def _same_as_full(path, step: int = 1):
    """scan_file's fast answer equals the full reader's: table, skips, assumptions, and every
    note but those about state keys (those come with the rows); or the same error."""
    try:
        full = scan_file(str(path), step, fast=False)
    except Exception as err:  # noqa: BLE001 - the full reader's error, whatever it is
        with pytest.raises(type(err)) as fast_err:
            scan_file(str(path), step)
        assert str(fast_err.value) == str(err)
        return None
    fast = scan_file(str(path), step)
    pd.testing.assert_frame_equal(fast.trajectories, full.trajectories)
    for key in ("skipped", "assumed", "n_skipped"):
        assert fast.report[key] == full.report[key]
    assert fast.report["notes"] == [n for n in full.report["notes"] if not _state_note(n)]
    _same_columns_as_full(path, step)
    return fast


def _same_columns_as_full(path, step: int = 1, columns=READ_COLUMNS) -> None:
    """scan_columns gives the full reader's columns (those it has) and its whole report."""
    report = LoadReport(str(path), "verl")
    full = load_verl_file(path, report, train_step=step)
    frame, got = scan_columns(str(path), step, columns,
                              {"state_regex": None, "action_regex": None})  # a dump's options
    pd.testing.assert_frame_equal(frame, full[[c for c in columns if c in full.columns]])
    assert got == report.to_dict()


def _dump(tmp_path, entries, step: int = 1):
    return write_verl_dump(tmp_path / "d", step, entries)


def test_plain_agent_loop_dump_takes_the_fast_path(tmp_path):
    path = _dump(tmp_path, agent_loop_entries(1, prompts=3, sessions=4))
    scan = _same_as_full(path)
    assert scan.how == "fast"
    table = scan.trajectories
    steps = load_verl_file(path)
    assert len(table) == steps.groupby(["group_id", "traj_id"]).ngroups == 12
    assert table["length"].sum() == len(steps)
    assert table["invalid"].isna().all()  # no is_action_valid: unknown, not 0
    assert scan.report["assumed"] == {"is_action_valid": VALIDITY_ASSUMED}


def test_validity_task_labels_and_step_notes(tmp_path):
    entries = agent_loop_entries(1, valid_extra=True)
    for i, e in enumerate(entries):
        e["gts"] = f"game-{e['uid'][:4]}" if i % 5 else None  # a label on most lines
        e["step"] = 1 if i != 3 else 2
    scan = _same_as_full(_dump(tmp_path, entries))
    assert scan.how == "fast"
    assert scan.trajectories["invalid"].sum() == sum(not e["is_action_valid"] for e in entries)
    assert any("field 'step' disagrees" in n for n in scan.report["notes"])
    assert "task" in scan.trajectories.columns


def test_scores_that_differ_between_turns(tmp_path):
    entries = agent_loop_entries(1)
    entries[0]["score"] = 3.0  # a first turn with its own score
    scan = _same_as_full(_dump(tmp_path, entries))
    assert scan.how == "fast"
    assert any("score differs between the turns of 1 line" in n for n in scan.report["notes"])


def _rewrite(path, edit):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(edit(lines)))


@pytest.mark.parametrize("case", [
    "legacy", "int uid", "uid without turn", "won field", "task field", "mixed validity",
    "numeric validity", "blank lines", "unfinished last line", "exact duplicate",
    "bad utf-8", "nan token in an extra", "whole float step", "skipped turn",
    "score varies, turn order shuffled", "an input without role lines",
])
def test_unusual_files_give_the_full_readers_answer(tmp_path, case):
    entries = legacy_entries(1) if case == "legacy" else agent_loop_entries(1)
    if case == "int uid":
        for i, e in enumerate(entries):
            e["uid"] = i
    elif case == "uid without turn":
        entries[1]["uid"] = entries[1]["uid"].rsplit("_", 1)[0]
    elif case in ("won field", "task field"):
        entries[0][case.split()[0]] = True if case == "won field" else "t"
    elif case == "mixed validity":
        entries[0]["is_action_valid"] = False
    elif case == "numeric validity":
        for e in entries:
            e["is_action_valid"] = 1
    elif case == "whole float step":
        entries[0]["step"] = 1.0
    elif case == "skipped turn":
        del entries[1]
    elif case == "score varies, turn order shuffled":
        entries[0]["score"], entries = 5.0, entries[::-1]
    elif case == "an input without role lines":  # the whole input is its state key; a note
        entries[2]["input"] = "  A plain prompt, no chat template.\n"
    path = _dump(tmp_path, entries)
    if case == "blank lines":
        _rewrite(path, lambda ls: [ls[0], "\n", "  \n", *ls[1:]])
    elif case == "unfinished last line":
        _rewrite(path, lambda ls: [*ls, ls[0][:40]])
    elif case == "exact duplicate":
        _rewrite(path, lambda ls: [*ls, ls[2]])
    elif case == "bad utf-8":
        path.write_bytes(path.read_bytes().replace(b"room 1", b"room \xff", 1))
    elif case == "nan token in an extra":
        _rewrite(path, lambda ls: [ls[0][:-2] + ', "acc": NaN}\n', *ls[1:]])
    fast = _same_as_full(path)
    if case in ("skipped turn", "mixed validity"):  # the full reader's own error, raised
        assert fast is None
        return
    still_plain = ("score varies, turn order shuffled", "blank lines", "whole float step",
                   "an input without role lines")
    assert fast.how == ("fast" if case in still_plain else "full")
    assert len(fast.trajectories) > 0


@pytest.mark.parametrize(("edit", "says"), [
    ({"score": "high"}, "field 'score' is not a number: 'high'"),
    ({"step": 1.5}, "field 'step' is not a whole number: 1.5"),
    ({"input": 7}, "field 'input' must be text"),
    ({"uid": None}, "field 'uid' must be text"),
])
def test_broken_lines_raise_the_full_readers_error(tmp_path, edit, says):
    entries = agent_loop_entries(1)
    entries[2].update(edit)
    path = _dump(tmp_path, entries)
    with pytest.raises(LogFormatError) as err:
        scan_file(str(path), 1)
    assert "1.jsonl:3: " in str(err.value) and says in str(err.value)


def test_a_malformed_line_goes_to_the_full_reader_which_skips_it(tmp_path):
    path = _dump(tmp_path, agent_loop_entries(1))
    _rewrite(path, lambda ls: [ls[0], '{"input": "x", oops\n', *ls[1:]])
    scan = scan_file(str(path), 1)
    full = load_verl_file(path)
    assert scan.how == "full" and scan.report["skipped"][MALFORMED]["where"] == [f"{path}:2"]
    assert scan.trajectories["length"].sum() == len(full)
    frame, report = scan_columns(str(path), 1, ["traj_id", "t"], {})
    assert frame["incomplete"].tolist() == full["incomplete"].tolist()  # kept, not asked for
    with pytest.raises(LogFormatError, match=r"1.jsonl:2: malformed JSON line"):
        scan_file(str(path), 1, strict=True)


def test_many_files_in_worker_processes(tmp_path):
    jobs = []
    for step in range(1, 6):
        entries = agent_loop_entries(step, prompts=2, valid_extra=step % 2 == 0)
        jobs.append((str(write_verl_dump(tmp_path / "d", step, entries)), step))
    here = [scan_file(*job) for job in jobs]
    spread = list(scan_files(jobs, workers=2))
    assert [s.train_step for s in spread] == [1, 2, 3, 4, 5]
    for a, b in zip(here, spread, strict=True):
        pd.testing.assert_frame_equal(a.trajectories, b.trajectories)
        assert a.report == b.report


def test_an_error_in_a_worker_is_raised_with_its_file(tmp_path):
    jobs = []
    for step in range(1, 4):
        entries = agent_loop_entries(step)
        if step == 2:
            entries[0]["score"] = "high"
        jobs.append((str(write_verl_dump(tmp_path / "d", step, entries)), step))
    with pytest.raises(LogFormatError, match=r"2.jsonl:1: field 'score'"):
        list(scan_files(jobs, workers=2))
    with pytest.raises(StepTableError):  # errors keep their type and fields across processes
        bad = agent_loop_entries(4)
        del bad[1]
        list(scan_files([jobs[0], (str(write_verl_dump(tmp_path / "d", 4, bad)), 4)],
                        workers=2))


def test_long_or_structured_gts_labels_nothing(tmp_path):
    entries = agent_loop_entries(1, prompts=3)
    for e in entries:
        p = int(e["uid"].rsplit("_", 2)[0][-1])
        e["gts"] = ["a", "b"] if p == 0 else "x" * 500 if p == 1 else "pick-mug-7"
    scan = _same_as_full(_dump(tmp_path, entries))
    labels = scan.trajectories.groupby("group_id")["task"].first()
    assert sorted(labels.dropna().unique().tolist()) == ["pick-mug-7"]
    assert labels.isna().sum() == 2


def test_a_json_written_like_verl_holds_the_fields_the_scan_reads(tmp_path):
    """The dump lines the fast path is built for: verl's field order and separators."""
    path = _dump(tmp_path, agent_loop_entries(1))
    first = json.loads(path.read_text().splitlines()[0])
    assert list(first) == ["input", "output", "gts", "score", "step", "uid"]
    assert np.isfinite(first["score"])


def test_a_threaded_process_scans_through_a_fork_server(tmp_path):
    """The app's server has threads: its workers come from a fork server, not a fork of it."""
    import threading

    from loaders.workers import worker_context

    jobs = [(str(write_verl_dump(tmp_path / "d", s, agent_loop_entries(s))), s)
            for s in (1, 2, 3)]
    here = [scan_file(*job) for job in jobs]
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert worker_context().get_start_method() == "forkserver"
        spread = list(scan_files(jobs, workers=2))
    finally:
        stop.set()
        thread.join()
    for a, b in zip(here, spread, strict=True):
        pd.testing.assert_frame_equal(a.trajectories, b.trajectories)


def test_columns_with_a_reader_option_or_another_column_are_the_full_readers(tmp_path):
    entries = agent_loop_entries(1)
    for e in entries:
        e["acc"] = 1.0  # a reward extra: the full reader's rows carry it
    path = _dump(tmp_path, entries)
    _same_columns_as_full(path, columns=["group_id", "acc", "action"])
    frame, _ = scan_columns(str(path), 1, ["action"], {"action_regex": r"go (\w+)"})
    assert frame["action"].tolist() == load_verl_file(path, action_regex=r"go (\w+)",
                                                      train_step=1)["action"].tolist()


def test_the_groups_pages_columns_stay_fast_unless_a_line_holds_one_it_does_not_compute(
        tmp_path, monkeypatch):
    """The triage asks for a recorded ``advantage`` and the estimators' step columns too: a
    dump without them still reads on the fast path (no full reader), and one whose lines
    carry an advantage (the verl backend writes it) gets the full reader's column."""
    import loaders.verl_scan as scan

    said = agent_loop_entries(1)
    for e in said:
        e["input"] += ' he said "advantage": no key'  # in a text, escaped: not a key
    plain = _dump(tmp_path / "plain", said)
    recorded = agent_loop_entries(1)
    for i, e in enumerate(recorded):
        e["advantage"] = float(i) / 10
    marked = _dump(tmp_path / "marked", recorded)
    _same_columns_as_full(plain)
    _same_columns_as_full(marked)
    assert "advantage" in scan_columns(str(marked), 1, READ_COLUMNS, {})[0].columns

    def full_reader(*args, **kwargs):
        raise AssertionError("the full reader was used")

    monkeypatch.setattr(scan, "load_verl_file", full_reader)
    assert set(READ_COLUMNS) - set(FAST_COLUMNS) - {"done"}  # columns it does not compute
    frame, _ = scan_columns(str(plain), 1, READ_COLUMNS, {})
    assert "advantage" not in frame.columns and len(frame)
    for asked, dump in ((READ_COLUMNS, marked), ([*READ_COLUMNS, "prompt"], plain)):
        with pytest.raises(AssertionError, match="full reader"):  # a key, or a text column
            scan_columns(str(dump), 1, asked, {})


def test_a_single_threaded_process_forks():
    """The CLI has one thread: its workers are plain forks (nothing imported again). Asked in
    a fresh process: this one may hold threads earlier tests left."""
    import subprocess
    import sys

    code = "from loaders.workers import worker_context; print(worker_context().get_start_method())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "fork"


def test_a_dumps_columns_for_a_whole_run_are_its_rows_read_in_workers(tmp_path):
    """What a whole-run analysis reads (the Groups page, ``g2po triage``): each step's
    columns, read ahead by worker processes, equal to the rows read here; the reports are
    the log's; a broken file's error comes at its turn, with its file."""
    from loaders import open_log

    d = tmp_path / "d"
    for step in range(1, 6):
        write_verl_dump(d, step, agent_loop_entries(step, prompts=3))
    write_verl_dump(d, 6, legacy_entries(6))
    columns = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward", "task"]
    log = open_log(d)
    read = list(log.columns_of_steps(log.train_steps(), columns))
    assert [s for s, _ in read] == [1, 2, 3, 4, 5, 6]
    notes = log.report.notes
    assert any(n.startswith("no uid field") for n in notes)  # the legacy file's report
    here = open_log(d)
    for step, frame in read:
        pd.testing.assert_frame_equal(frame, here.step_columns(step, columns))
    entries = agent_loop_entries(7)
    entries[3]["score"] = "high"
    write_verl_dump(d, 7, entries)
    log.refresh()
    got = []
    with pytest.raises(LogFormatError, match=r"7.jsonl:4: field 'score'"):
        for step, _ in log.columns_of_steps([5, 6, 7], columns):
            got.append(step)
    assert got == [5, 6]
