"""The state-merge rate per training step (:meth:`loaders.Log.merge_rates`): one definition
(:func:`g2po.index.merge_rate`), counted by Arrow for a run directory under the exact key."""

from __future__ import annotations

import pandas as pd
import pytest

import loaders
from g2po.analysis.state_graph import state_graph
from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps
from loaders import RunWriter


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
