"""What a CPU run leaves in shared places, removed when it ends, also when it fails.

verl's and vLLM's processes on CPU create files outside the run directory: shared-memory
segments in ``/dev/shm`` (verl's weight-sync buckets ``verl_weights_*`` when there is no CUDA
IPC, Python ``SharedMemory`` blocks ``psm_*`` of vLLM's message queues and ``multiprocessing``
semaphores ``sem.mp-*``), vLLM's
``/tmp/vllm_dist_*`` rendezvous files and verl's ``/tmp/rl-colocate-zmq-*`` sockets. A process
that dies before its clean-up leaves them behind (a failed weight sync left 2 GiB in
``/dev/shm``). :func:`cleaned_up` notes what exists when a run starts and, when it ends, removes
what appeared under those names meanwhile and that no living process still maps or holds open
(so a run beside it on the same machine keeps its own).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

__all__ = ["SHARED_PLACES", "leftovers", "in_use", "cleaned_up"]

logger = logging.getLogger(__name__)

#: folder -> name patterns of what verl's and vLLM's processes create there.
SHARED_PLACES = {
    "/dev/shm": ("verl_weights_*", "psm_*", "sem.mp-*"),
    "/tmp": ("vllm_dist_*", "rl-colocate-zmq-*"),
}


def leftovers(places: dict[str, tuple[str, ...]] | None = None) -> set[Path]:
    """The paths in ``places`` (default :data:`SHARED_PLACES`) whose names match a pattern."""
    found = set()
    for folder, patterns in (places or SHARED_PLACES).items():
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if any(fnmatch(entry.name, p) for p in patterns):
                    found.add(Path(entry.path))
    return found


def in_use() -> set[Path]:
    """Paths that a living process maps into memory or holds open (what /proc shows us)."""
    used: set[Path] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for line in (proc / "maps").read_text().splitlines():
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    used.add(Path(parts[5].removesuffix(" (deleted)")))
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    used.add(Path(os.readlink(fd)))
    return used


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


@contextlib.contextmanager
def cleaned_up(places: dict[str, tuple[str, ...]] | None = None, *,
               wait_s: float = 10.0) -> Iterator[set[Path]]:
    """Remove, on the way out, what appeared in ``places`` during the block and is no longer
    in use; processes still closing are given up to ``wait_s`` seconds. Yields the set of
    removed paths (filled on exit)."""
    before = leftovers(places)
    removed: set[Path] = set()
    try:
        yield removed
    finally:
        deadline = time.monotonic() + wait_s
        while True:
            new = leftovers(places) - before
            busy = new & in_use()
            for path in new - busy:
                _remove(path)
                removed.add(path)
            if not busy or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if busy:
            logger.warning("left %d file(s) still in use by other processes: %s", len(busy),
                           ", ".join(sorted(map(str, busy))[:5]))
