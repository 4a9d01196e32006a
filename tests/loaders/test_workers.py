"""loaders.workers: the worker processes of a read end with the process that started them,
however it ends (a server stopped mid-read must not leave workers waiting for work)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loaders.workers import worker_count
from tests.processes import naming, running

ROOT = Path(__file__).resolve().parents[2]

_JOB = """
import os, time
def work(folder):
    with open(os.path.join(folder, str(os.getpid())), "w"):
        pass
    time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds processes through /proc")
@pytest.mark.skipif(worker_count(2) < 2, reason="needs 2 CPUs for worker processes")
@pytest.mark.parametrize("threaded", [False, True], ids=["fork", "forkserver"])
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_workers_end_when_the_reader_is_killed(tmp_path, threaded, how):
    (tmp_path / "job_module.py").write_text(_JOB)
    pids = tmp_path / "pids"
    pids.mkdir()
    script = textwrap.dedent(f"""
        import sys, threading, time
        sys.path[:0] = [{str(tmp_path)!r}, {str(ROOT)!r}]
        import job_module
        from loaders.workers import map_ahead
        if {threaded}:  # a threaded process (the app's server) reads through a fork server
            threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        list(map_ahead(job_module.work, [({str(pids)!r},)] * 2, ["job_module"]))
    """)
    reader = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
    try:
        deadline = time.monotonic() + 60
        while len(list(pids.iterdir())) < 2:
            assert reader.poll() is None and time.monotonic() < deadline, "no workers started"
            time.sleep(0.05)
        workers = [int(p.name) for p in pids.iterdir()]
        reader.send_signal(how)
        reader.wait(timeout=30)
        deadline = time.monotonic() + 20
        while (left := [p for p in workers if running(p)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == [], "workers outlived the process that started them"
        # and nothing else of that read (the fork server) stays behind
        while (rest := naming(str(tmp_path))) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rest == []
    finally:
        for pid in [*naming(str(tmp_path)), reader.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reader.wait()
