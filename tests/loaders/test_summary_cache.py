"""The on-disk summaries of a verl dump: reused while files are unchanged, never trusted when
stale or damaged."""

from __future__ import annotations

import dataclasses
import os

import pandas as pd
import pytest

from g2po.cache import user_cache_dir
from loaders import open_log
from loaders.summary_cache import CacheProblem, SummaryCache
from tests.loaders.builders import agent_loop_entries, write_verl_dump


@pytest.fixture
def dump(tmp_path):
    d = tmp_path / "rollout_data"
    for step in (1, 2, 3):
        write_verl_dump(d, step, agent_loop_entries(step, valid_extra=step == 2))
    return d


def _tables(log):
    return {s: log.trajectories(s) for s in log.train_steps()}


def test_the_cache_lives_in_the_user_cache_not_beside_the_dump(dump):
    before = sorted(p.name for p in dump.iterdir())
    open_log(dump).summary()
    assert sorted(p.name for p in dump.iterdir()) == before
    cache = SummaryCache(dump)
    assert cache.path.is_file() and cache.path.is_relative_to(user_cache_dir())
    assert sorted(cache.read()[0]) == [1, 2, 3]


def test_a_later_open_gives_the_same_tables_and_summary(dump):
    first = open_log(dump)
    summary, tables = first.summary(), _tables(first)
    again = open_log(dump)
    pd.testing.assert_frame_equal(again.summary(), summary)
    for step, table in _tables(again).items():
        pd.testing.assert_frame_equal(table, tables[step])
    assert again.report.assumed == first.report.assumed  # the reports come back too
    assert again.group_summary(1).equals(first.group_summary(1))


def test_an_unchanged_file_is_not_read_again(dump):
    """Same size and modification time = the file that was read: its cached table is used
    (shown by swapping in other content of the same size, time put back)."""
    before = open_log(dump).summary()
    path = dump / "1.jsonl"
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b'"score": 10.0', b'"score": 20.0'))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert open_log(dump).summary()["mean_reward"].tolist() == before["mean_reward"].tolist()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # now it counts as changed
    after = open_log(dump).summary()
    assert after["mean_reward"].iloc[0] > before["mean_reward"].iloc[0]
    assert after["mean_reward"].iloc[1:].tolist() == before["mean_reward"].iloc[1:].tolist()


def test_a_run_being_written_adds_and_grows_files(dump):
    log = open_log(dump)
    assert log.summary()["train_step"].tolist() == [1, 2, 3]
    write_verl_dump(dump, 4, agent_loop_entries(4, prompts=3))
    with open(dump / "3.jsonl", "a") as f:  # a rewritten step: more lines
        f.write((dump / "4.jsonl").read_text())
    log.refresh()
    summary = log.summary()
    assert summary["train_step"].tolist() == [1, 2, 3, 4]
    assert summary["n_groups"].tolist() == [2, 2, 5, 3]
    fresh = open_log(dump).summary()
    pd.testing.assert_frame_equal(fresh, summary)
    assert sorted(SummaryCache(dump).read()[0]) == [1, 2, 3, 4]


def test_a_removed_file_leaves_the_cache(dump):
    open_log(dump).summary()
    (dump / "2.jsonl").unlink()
    assert open_log(dump).summary()["train_step"].tolist() == [1, 3]
    assert sorted(SummaryCache(dump).read()[0]) == [1, 3]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other version", "rows lost",
                                    "other log", "wrong column type", "node count"])
def test_a_damaged_cache_is_rebuilt_and_said_so(dump, tmp_path, damage):
    expected = open_log(dump).summary()
    cache = SummaryCache(dump)
    data = cache.path.read_bytes()
    if damage == "garbage":
        cache.path.write_bytes(b"not parquet at all")
    elif damage == "truncated":
        cache.path.write_bytes(data[: len(data) // 2])
    else:
        entries, rows = cache.read()
        if damage == "rows lost":
            rows = rows[rows["train_step"] != 2].reset_index(drop=True)
        elif damage == "wrong column type":
            rows = rows.assign(length=rows["length"] + 0.5)
        elif damage == "node count":
            entries[2] = dataclasses.replace(entries[2], nodes={"exact": -3})
        other = SummaryCache(tmp_path / "elsewhere") if damage == "other log" else cache
        if damage == "other version":
            import loaders.summary_cache as sc
            version, sc.CACHE_VERSION = sc.CACHE_VERSION, sc.CACHE_VERSION + 1
            try:
                cache.write(entries, rows)
            finally:
                sc.CACHE_VERSION = version
        else:
            other.write(entries, rows)
            if damage == "other log":
                other.path.replace(cache.path)
    with pytest.raises(CacheProblem):
        cache.read()
    log = open_log(dump)
    pd.testing.assert_frame_equal(log.summary(), expected)
    assert any("summary cache" in n and "rebuilt" in n for n in log.report.notes)
    assert log.merge_rates()["merge_rate"].between(0, 1).all()
    assert sorted(cache.read()[0]) == [1, 2, 3]  # written anew, readable


def test_an_unwritable_cache_folder_is_noted_and_the_dump_still_opens(dump, tmp_path,
                                                                     monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("G2PO_CACHE", str(blocker))
    log = open_log(dump)
    assert log.summary()["train_step"].tolist() == [1, 2, 3]
    assert any("summary cache not written" in n for n in log.report.notes)


def test_the_summary_without_a_cache_equals_the_full_reading(dump):
    from loaders.log import Log

    log = open_log(dump)
    full = Log.summary(log)  # the base class: load_step and trajectory_table, step by step
    pd.testing.assert_frame_equal(log.summary(), full, check_dtype=False)
    assert log.summary()["invalid_rate"].isna().tolist() == [True, False, True]
