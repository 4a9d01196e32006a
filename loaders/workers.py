"""Worker processes for reading a log's many files at once (a verl dump's or a run
directory's step files): how many, and how they start. Used by the dump scan
(:mod:`loaders.verl_scan`) and by ``g2po validate`` (:mod:`loaders.validate`)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Sequence

__all__ = ["MAX_WORKERS", "worker_count", "worker_context"]

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
