"""tests/g2po/cli/verl_runs.py: a background verl run ends with the test session that started
it, even a session killed outright (no atexit, no pytest_sessionfinish)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.g2po.cli.verl_runs import watch_command
from tests.processes import running

_SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
# A stand-in session: starts a "run" in its own process group and its watcher, as _run does.
_SESSION = """
import json, subprocess, sys, time
run = subprocess.Popen(json.loads(sys.argv[1]), start_new_session=True)
watch = json.loads(sys.argv[2])
watch[-1] = str(run.pid)
watch[-2] = str(__import__("os").getpid())
subprocess.Popen(watch, start_new_session=True)
print(run.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="looks at processes through /proc")
def test_a_killed_session_ends_its_run():
    session = subprocess.Popen(
        [sys.executable, "-c", _SESSION, json.dumps(_SLEEPER), json.dumps(watch_command(0))],
        stdout=subprocess.PIPE, text=True)
    run = int(session.stdout.readline())
    try:
        assert running(run)
        session.kill()  # SIGKILL: nothing of the session's own runs
        session.wait()
        deadline = time.monotonic() + 30
        while running(run) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(run), "the run outlived its session"
    finally:
        if running(run):
            os.killpg(run, 9)


def test_the_watcher_ends_with_the_run():
    run = subprocess.Popen(_SLEEPER, start_new_session=True)
    watcher = subprocess.Popen(watch_command(run.pid), start_new_session=True)
    time.sleep(1.5)
    assert watcher.poll() is None  # the run goes on, and so does its watcher
    run.kill()
    run.wait()
    assert watcher.wait(timeout=10) == 0
