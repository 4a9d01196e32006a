"""app/workers.py: a job runs in another Python process and comes back as the same value or
the same error; the Run overview's merge rate computed there equals the one computed here."""

from __future__ import annotations

import os
import signal

import pytest

import loaders
from app import workers
from g2po.errors import StepTableError
from g2po.graph import state_graph
from tests.app.builders import write_run


def pid() -> int:
    return os.getpid()


def fail(kind: str) -> None:
    if kind == "loader":
        raise loaders.LogFormatError("x.jsonl:3: field 'uid' is bad")
    if kind == "steps":
        raise StepTableError(["column 't' is missing"], "x.csv")
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_job_runs_in_another_process_and_its_errors_come_back():
    assert workers.in_worker(pid) != os.getpid()
    with pytest.raises(loaders.LogFormatError, match=r"x\.jsonl:3: field 'uid' is bad"):
        workers.in_worker(fail, "loader")
    # an exception that does not survive pickling keeps its message
    with pytest.raises(loaders.LoaderError, match=r"StepTableError: 1 problem\(s\) with the "
                                                  r"step table in x\.csv:\n  - column 't'"):
        workers.in_worker(fail, "steps")
    with pytest.raises(workers.WorkerError, match=r"ended with exit code -9"):
        workers.in_worker(fail, "die")


def test_merge_rates_in_a_worker_match_the_graphs(tmp_path):
    run = write_run(tmp_path / "run", 3, rows=300)
    log = loaders.open_log(run)
    rates = workers.in_worker(workers.log_merge_rates, str(run), None, {}, "exact")
    assert rates.equals(workers.merge_rates_of(log, "exact"))
    for step, rate in zip(rates["train_step"], rates["merge_rate"], strict=True):
        steps = log.load_step(step)
        nodes = sum(state_graph(log.load_group(step, g)).n_states for g in log.groups(step))
        assert rate == pytest.approx(1.0 - nodes / len(steps))
    assert rates["train_step"].tolist() == [1, 2, 3]
