"""Long computations in a separate process, so that one session's slow script run does not
stall the others'.

Every browser session of the app runs its script in a thread of one server process, and Python
threads take turns on one interpreter lock. A computation over a whole run (the Run overview's
state-merge rate reads every step row: a minute and more for 1.2 M rows) held that lock for
most of its run, and every other session's view waited behind it (``scripts/bench_users.py
--slow``). :func:`in_worker` runs such a computation in a fresh Python process instead: the
session that asked waits for the result without holding the lock, the others go on.

A worker is a new interpreter per job (``python -c``, this module's :func:`_serve`), given the
job on stdin and answering on stdout, both pickled (the parent and the worker are the same
code); it starts in about a second, holds no state between jobs and gives its memory back when
it ends. At most :data:`WORKERS` run at once; more jobs wait their turn. Only logs read from
disk a training step at a time (:data:`DISK_FORMATS`) go to a worker, which opens the log
itself from its path; a table log is already in the server's memory and is computed there.

Importable without Streamlit (a worker imports this module).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pandas as pd

import loaders
from g2po.errors import G2POError
from g2po.estimators import estimate

__all__ = ["WORKERS", "DISK_FORMATS", "WorkerError", "in_worker", "merge_rates_of",
           "log_merge_rates"]

#: Jobs running at once (each a process of ~150 MiB with pandas and pyarrow imported).
WORKERS = 2
#: Log formats read from disk one training step at a time: a worker can open them cheaply.
DISK_FORMATS = ("run", "verl")
_ROOT = Path(__file__).resolve().parents[1]
_BOOT = "from app.workers import _serve; _serve()"
_slots = threading.BoundedSemaphore(WORKERS)
_T = TypeVar("_T")


class WorkerError(G2POError):
    """A worker process died (killed for memory, say) before it answered."""


def in_worker(fn: Callable[..., _T], *args: object) -> _T:
    """``fn(*args)`` in a worker process; ``fn`` a function of one of our modules and
    ``args`` plain, picklable values. The exception it raises is raised here."""
    job = pickle.dumps((fn.__module__, fn.__qualname__, args))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with _slots:
        done = subprocess.run([sys.executable, "-c", _BOOT], input=job, capture_output=True,
                              cwd=_ROOT, env=env, check=False)
    try:
        ok, value = pickle.loads(done.stdout)
    except Exception:  # noqa: BLE001 - no answer: say how the process ended
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise WorkerError(f"the worker computing {fn.__name__} ended with exit code "
                          f"{done.returncode} before answering {tail[0]}".rstrip()) from None
    if not ok:
        raise value
    return value


def _serve() -> None:
    """A worker's body: one job from stdin, its result (or exception) pickled to stdout.
    Anything the job prints goes to stderr, so stdout carries the answer only."""
    import importlib

    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    module, name, args = pickle.loads(sys.stdin.buffer.read())
    try:
        data = pickle.dumps((True, getattr(importlib.import_module(module), name)(*args)))
    except Exception as err:  # noqa: BLE001 - handed to the caller, who shows it
        data = pickle.dumps((False, _portable(err)))
    answer.write(data)
    answer.close()


def _portable(err: Exception) -> Exception:
    """``err`` if it comes back from pickle with the same message, else a
    :class:`loaders.LoaderError` with that message (an exception whose constructor takes
    other arguments than its message does not round-trip)."""
    try:
        if str(pickle.loads(pickle.dumps(err))) == str(err):
            return err
    except Exception:  # noqa: BLE001 - any failure to round-trip: keep the text
        pass
    return loaders.LoaderError(f"{type(err).__name__}: {err}")


def merge_rates_of(log: loaders.Log, state_key: str = "exact") -> pd.DataFrame:
    """State-merge rate per training step, 1 − (state nodes / step rows), summed over the
    step's groups (nodes as the ``state_key`` strategy merges them). Reads every row of the
    log, one training step at a time. Columns: train_step, merge_rate."""
    rows = []
    for step in log.train_steps():
        steps = log.load_step(step)
        _, ix = estimate(steps, "grpo", state_key=state_key)
        rows.append({"train_step": step, "merge_rate": 1.0 - ix.n_nodes / max(ix.n_steps, 1)})
    return pd.DataFrame(rows, columns=["train_step", "merge_rate"])


def log_merge_rates(path: str, format: str | None, options: dict,
                    state_key: str = "exact") -> pd.DataFrame:
    """:func:`merge_rates_of` of the log at ``path`` (opened with ``format`` and the keyword
    ``options`` of :func:`loaders.open_log`): what a worker runs."""
    return merge_rates_of(loaders.open_log(path, format, **options), state_key)
