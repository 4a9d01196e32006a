"""validate_log: what a log holds and every problem, collected rather than raised."""

from __future__ import annotations

import os

import numpy as np
import pytest

from g2po.synthetic import synthetic_steps
from loaders import RunWriter
from loaders.rundir import step_path
from loaders.validate import validate_log
from tests.loaders.builders import (
    agent_loop_entries,
    rewrite_footer,
    step_table,
    write_verl_dump,
)


def test_run_counts_full_and_quick(tmp_path):
    writer = RunWriter(tmp_path / "r", {"env": "demo"})
    frames = [synthetic_steps(1000, seed=s) for s in (1, 2)]
    for s, frame in zip((1, 2), frames, strict=True):
        writer.write_step(s, frame)
    for quick in (False, True):
        result = validate_log(tmp_path / "r", quick=quick)
        assert result.ok and result.format == "run" and result.train_steps == [1, 2]
        assert result.n_steps == sum(len(f) for f in frames)
        assert result.n_groups == sum(f["group_id"].nunique() for f in frames)
        assert result.n_traj == sum(len(f.drop_duplicates(["group_id", "traj_id"]))
                                    for f in frames)


def test_a_broken_step_does_not_hide_the_others(tmp_path):
    writer = RunWriter(tmp_path / "r", {})
    writer.write_step(1, synthetic_steps(500))
    writer.write_step(3, synthetic_steps(500))
    step_path(tmp_path / "r", 2).write_bytes(b"garbage")
    result = validate_log(tmp_path / "r")
    assert not result.ok and result.train_steps == [1, 2, 3]
    assert len(result.problems) == 1 and result.problems[0].startswith("training step 2:")
    assert result.n_steps == 2 * len(synthetic_steps(500))


def test_problems_of_a_table_name_rows(tmp_path):
    steps = step_table()
    steps.loc[2, "episode_reward"] = np.inf
    steps.to_csv(tmp_path / "s.csv", index=False)
    result = validate_log(tmp_path / "s.csv")
    assert not result.ok and result.format == "csv"
    assert "'episode_reward' is not finite (inf) in 1 row(s): 4" in result.problems[0]


def test_skips_and_notes_are_reported(tmp_path):
    path = write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    path.write_text(path.read_text() + '{"input": "user\\nhalf')
    result = validate_log(tmp_path / "d")
    assert result.ok and result.report.n_skipped == 1
    assert any("is_action_valid absent" in n for n in result.report.notes)
    as_dict = result.to_dict()
    assert as_dict["skipped"]["truncated last line (a file still being written)"]["count"] == 1


def test_nothing_there(tmp_path):
    result = validate_log(tmp_path)
    assert not result.ok and result.format is None and "no logs found" in result.problems[0]


def _rotate_group_ids(groups):
    ids = [g["group_id"] for g in groups]
    for g, other in zip(groups, ids[1:] + ids[:1], strict=True):
        g["group_id"] = other


def _two_step_run(path):
    writer = RunWriter(path, {})
    for s in (1, 2):
        writer.write_step(s, step_table(groups=3, seed=s))
    return path


@pytest.mark.parametrize(("edit", "says"), [
    (b"{not json", "is not JSON"),
    (lambda f: f.update(groups=5), "is not an object with 'groups'"),
    (lambda f: [g.update(row_group=7) for g in f["groups"]], "past the file's 1 row group"),
    (lambda f: [g.update(stop=g["stop"] + 99) for g in f["groups"]], "which holds"),
    (lambda f: f["groups"].pop(), "lists other groups than the rows hold"),
    (lambda f: _rotate_group_ids(f["groups"]), "which hold other rows"),
])
def test_validate_checks_the_footer_the_app_reads(tmp_path, edit, says):
    run = _two_step_run(tmp_path / "r")
    rewrite_footer(step_path(run, 2), edit)
    result = validate_log(run)
    assert len(result.problems) == 1, result.problems
    assert result.problems[0].startswith("training step 2: ")
    assert "step-000002.parquet: the footer's g2po.step metadata" in result.problems[0]
    assert says in result.problems[0]
    assert validate_log(run, quick=True).problems or "other" in says  # quick reads footers too


def test_validate_names_step_files_that_lie_about_their_step(tmp_path):
    run = _two_step_run(tmp_path / "r")
    os.replace(step_path(run, 2), step_path(run, 3))
    other = RunWriter(tmp_path / "o", {})
    other.write_step(42, step_table(seed=4))
    os.replace(step_path(tmp_path / "o", 42), step_path(run, 2))
    (run / "rollouts" / "step-1.parquet").write_bytes(step_path(run, 1).read_bytes())
    problems = validate_log(run).problems
    assert any("training step 1 is claimed by step-000001.parquet and step-1.parquet" in p
               for p in problems)
    assert any("step-000002.parquet holds rows of training step 42" in p for p in problems)
    assert any("step-000003.parquet holds rows of training step 2" in p for p in problems)


def test_validate_mentions_stale_checkpoint_folders(tmp_path):
    run = _two_step_run(tmp_path / "r")
    stale = run / "checkpoints" / ".tmp-step-000002-999"
    stale.mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(b"0" * 2_000_000)
    result = validate_log(run)
    assert result.ok
    (note,) = [n for n in result.report.notes if "half-written" in n]
    assert str(stale) in note and "2.0 MB" in note


def test_a_folder_of_logs_says_which_logs_it_holds(tmp_path):
    (tmp_path / "a").mkdir()
    step_table().to_csv(tmp_path / "a" / "s.csv", index=False)
    (tmp_path / "junk.parquet").write_bytes(b"junk")
    problems = validate_log(tmp_path).problems
    assert "no logs found in this directory" in problems[0]
    assert problems[1].endswith("holds 1 log(s) below it: a/s.csv; validate each")


def test_a_verl_dump_is_checked_in_workers_as_one_process_would(tmp_path):
    """Every step read and checked (workers share the steps): the same counts, problems in
    step order, and skipped lines counted once."""
    from loaders import open_log
    from loaders.validate import _check
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    dump = tmp_path / "d"
    for step in range(1, 7):
        entries = agent_loop_entries(step)
        if step in (2, 5):
            entries[1]["score"] = "high"
        write_verl_dump(dump, step, entries)
    with open(dump / "6.jsonl", "a") as f:
        f.write('{"input": "unfinished')
    result = validate_log(dump)
    here = _check(open_log(dump), list(range(1, 7)))
    assert (result.n_groups, result.n_traj, result.n_steps) == \
        (here.n_groups, here.n_traj, here.n_steps) == (8, 16, 56)  # 4 readable steps
    assert result.problems == here.problems
    assert [p.split(":", 1)[0] for p in result.problems] == ["training step 2",
                                                           "training step 5"]
    assert result.report.n_skipped == 1
