"""scripts/bench_history.py at a tiny scale: the run it writes and the figures it measures."""

from __future__ import annotations

import loaders
from loaders.across_steps import task_index
from tests.scripts import load_script


def _bench():
    return load_script("bench_history")


def test_the_run_keeps_tasks_and_logs_namespaced_metrics(tmp_path, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "cache"))  # run colours stay out of ~/.cache
    bench = _bench()
    rows = bench.generate_run(tmp_path / "run", 3, 2, 4, 10, 80)
    log = loaders.open_log(tmp_path / "run")
    assert int(log.summary()["n_steps"].sum()) == rows
    index = task_index(log)
    assert index.by == "task" and index.tasks() == ["task-0", "task-1"]
    assert index.groups_of("task-0")["group_id"].nunique() == 3  # a new group id every step
    first = set(log.load_group(1, index.groups_of("task-0")["group_id"][0])["state_key"])
    third = set(log.load_group(3, index.groups_of("task-0")["group_id"][2])["state_key"])
    assert first & third  # the task's observations recur across training steps
    metrics = log.metrics()
    assert {"actor/pg_loss", "adv/ec/std", "timing_s/gen", "g2po/merge_rate"} <= \
        set(metrics.columns)
    m = bench.measure(tmp_path / "run")
    assert m["history_steps"] == 3 and m["history_reached"] == 3
    assert m["n_namespaces"] >= 6
    assert all(len(t) == 2 for t in m["curves_page_s"] + m["history_page_s"])
