"""The state-merge rate per training step (:meth:`loaders.Log.merge_rates`): one definition
(:func:`g2po.index.merge_rate`), counted by Arrow for a run directory under the exact key."""

from __future__ import annotations

import os
import re

import pandas as pd
import pytest

import loaders
from g2po.analysis.state_graph import state_graph
from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps
from loaders import RunWriter
from loaders.summary_cache import SummaryCache
from tests.loaders.builders import agent_loop_entries, legacy_entries, write_verl_dump


def _write_run(path, train_steps: int = 3, rows: int = 300):
    writer = RunWriter(path, {"env": "synthetic", "config": {"success_reward": 10.0}})
    for step in range(1, train_steps + 1):
        writer.write_step(step, synthetic_steps(rows, rollouts=6, max_len=20,
                                                states_per_task=12, key_chars=60, seed=step))
    return path


def test_merge_rates_of_a_run_counted_in_arrow_equal_the_graphs(tmp_path):
    run = _write_run(tmp_path / "run")
    log = loaders.open_log(run)
    fast = log._exact_merge_rates()
    assert fast["train_step"].tolist() == [1, 2, 3]
    for step, rate in zip(fast["train_step"], fast["merge_rate"], strict=True):
        nodes = sum(state_graph(log.load_group(step, g), rule=OutcomeRule()).n_states
                    for g in log.groups(step))
        assert rate == pytest.approx(1.0 - nodes / len(log.load_step(step)))
    # the log's merge rates take it for the exact key, the estimator's index otherwise
    assert log.merge_rates("exact").equals(fast)
    normalized = log.merge_rates("normalized")
    assert normalized["merge_rate"].ge(fast["merge_rate"] - 1e-12).all()
    # a step file without a state_key column: the full path, which says what is wrong
    pd.DataFrame({"group_id": ["g"], "x": [1]}).to_parquet(
        run / "rollouts" / "step-000004.parquet")
    assert loaders.open_log(run)._exact_merge_rates() is None


def test_every_format_counts_the_same_merge_rate(tmp_path):
    """A run's rows written as a table give the same rates through the rows-read path."""
    run = _write_run(tmp_path / "run", train_steps=2)
    log = loaders.open_log(run)
    table = tmp_path / "steps.parquet"
    log.load().to_parquet(table)
    assert loaders.open_log(table).merge_rates().equals(log.merge_rates())


def test_the_formula_says_zero_for_no_steps_and_works_per_group():
    assert merge_rate(3, 12) == 0.75
    assert merge_rate(0, 0) == 0.0
    assert merge_rate(pd.Series([2, 5]).to_numpy(), pd.Series([4, 5]).to_numpy()).tolist() \
        == [0.5, 0.0]


# -- a verl dump: counted in the summary pass, kept with the summaries ------------------------

@pytest.fixture
def dump(tmp_path):
    d = tmp_path / "rollout_data"
    for step in (1, 2, 3):
        write_verl_dump(d, step, agent_loop_entries(step, prompts=3, sessions=3, turns=4))
    write_verl_dump(d, 4, legacy_entries(4))  # no uids: the full reader's file
    return d


@pytest.mark.parametrize("state_key", ["exact", "normalized", "regex:in (room)"])
@pytest.mark.parametrize("state_regex", [None, r"You are (in room \d+|[^.]+)"])
def test_a_verl_dumps_merge_rates_equal_the_rows_reading(dump, state_key, state_regex):
    """Counted in the scan's workers (fast path and full reader alike), the rates are those
    of the rows read in full (:meth:`loaders.Log.merge_rates`, the one definition)."""
    log = loaders.open_log(dump, state_regex=state_regex)
    counted = log.merge_rates(state_key)
    read = loaders.Log.merge_rates(log, state_key)
    assert counted["train_step"].tolist() == [1, 2, 3, 4]
    pd.testing.assert_frame_equal(counted, read)
    assert 0 < counted["merge_rate"].iloc[0] < 1


def test_a_verl_dumps_merge_rate_comes_with_the_summary_and_its_cache(dump):
    """The summary pass counts the exact key's nodes and keeps them on disk: a later open
    gives the rates from the cache (shown by swapping in other content of the same size,
    time put back), a changed file is counted again."""
    log = loaders.open_log(dump)
    log.summary()
    entries, _ = SummaryCache(dump).read()
    assert all(set(e.nodes) == {"exact"} for e in entries.values())
    before = loaders.open_log(dump).merge_rates()
    path = dump / "1.jsonl"
    stat = path.stat()
    # every observation of step 1 the same state: a higher merge rate once it counts
    text = path.read_text()
    path.write_text(re.sub(r"You are in room \d\.", "You are in room 0.", text))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert loaders.open_log(dump).merge_rates().equals(before)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    after = loaders.open_log(dump).merge_rates()
    assert after["merge_rate"].iloc[0] > before["merge_rate"].iloc[0]
    assert after["merge_rate"].iloc[1:].tolist() == before["merge_rate"].iloc[1:].tolist()


def test_another_strategy_is_counted_once_and_kept_beside_the_exact_one(dump):
    loaders.open_log(dump).merge_rates("normalized")
    entries, _ = SummaryCache(dump).read()
    assert all(set(e.nodes) == {"exact", "normalized"} for e in entries.values())
    loaders.open_log(dump, state_regex=r"You are (in room \d+|[^.]+)").merge_rates("exact")
    entries, _ = SummaryCache(dump).read()  # one file, the counts of both reads kept
    assert all(len(e.nodes) == 3 for e in entries.values())
