"""Worker processes for reading a log's many files at once (a verl dump's or a run
directory's step files): how many, how they start, and an ordered map that reads only a few
files ahead. Used by the dump scan (:mod:`loaders.verl_scan`), a dump's rows for a whole-run
analysis (:mod:`loaders.verl_dump`) and ``g2po validate`` (:mod:`loaders.validate`)."""

from __future__ import annotations

import multiprocessing
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

__all__ = ["MAX_WORKERS", "worker_count", "worker_context", "worker_pool", "map_ahead"]

#: The most worker processes one read starts.
MAX_WORKERS = 8


def worker_count(n_jobs: int) -> int:
    """Workers for ``n_jobs`` files: one per CPU this process may use, at most one per job and
    :data:`MAX_WORKERS`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, n_jobs, MAX_WORKERS))


def worker_context(preload: Sequence[str] = ()):
    """``fork`` from a single-threaded process (nothing to import again); from a threaded one
    (the app's server) a fork server, started once, whose children hold no other thread's
    locks (``preload``: modules it imports once, for every child)."""
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    return ctx


def worker_pool(n: int, preload: Sequence[str] = ()) -> ProcessPoolExecutor:
    """``n`` worker processes (:func:`worker_context`) that end when this process ends, however
    it ends: a pool's workers otherwise wait for work forever once the process that started
    them is killed (a server stopped mid-read: its workers and fork server stayed behind)."""
    return ProcessPoolExecutor(n, mp_context=worker_context(preload),
                               initializer=_end_with, initargs=(os.getpid(),))


def _end_with(starter: int) -> None:
    """In a worker: a thread that ends the worker once process ``starter`` has ended (its
    pidfd turns readable then; where there is none, its pid is looked for every second)."""
    try:
        handle = os.pidfd_open(starter)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):
        handle = None

    def watch() -> None:
        if handle is not None:
            select.select([handle], [], [])
        else:
            while True:
                time.sleep(1.0)
                try:
                    os.kill(starter, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    continue
        os._exit(1)

    threading.Thread(target=watch, name="g2po-end-with-starter", daemon=True).start()


def map_ahead(fn: Callable[..., Any], jobs: Sequence[tuple], preload: Sequence[str] = (),
              ahead: int = 2) -> Iterator[Any]:
    """``fn(*job)`` of each job, in order, computed by worker processes (:func:`worker_count`)
    at most ``ahead`` jobs per worker before the caller takes them, so that memory holds a
    few results, not all. One job or one CPU runs here; where no worker can be had, the rest
    runs here. ``fn`` must be a module-level function of a module in ``preload``. A job's
    error is raised when its turn comes."""
    n = worker_count(len(jobs))
    done = 0
    if n > 1:
        try:
            with worker_pool(n, preload) as pool:
                pending: deque[Future] = deque()
                for job in jobs:
                    pending.append(pool.submit(fn, *job))
                    if len(pending) >= n * ahead:
                        yield pending.popleft().result()
                        done += 1
                while pending:
                    yield pending.popleft().result()
                    done += 1
        except (BrokenProcessPool, OSError):
            pass  # no workers to be had (a worker killed, no fork): the rest is read here
    for job in jobs[done:]:
        yield fn(*job)
