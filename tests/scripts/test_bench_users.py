"""scripts/bench_users.py's pieces: the visit plan, view URLs, percentiles, the figures of a
round and the server's peak memory (the timed run itself is the script's, not a test)."""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from tests.scripts import load_script


def _bench():
    return load_script("bench_users")


def test_each_user_gets_its_own_seeded_random_visits_of_existing_groups():
    bench = _bench()
    groups = {1: ["task-0", "task-1"], 2: ["task-2"], 3: ["task-3", "task-4", "task-5"]}
    plans = bench.pick_visits(groups, sessions=8, visits=5, seed=3)
    assert len(plans) == 8 and all(len(p) == 5 for p in plans)
    assert all(g in groups[s] for plan in plans for s, g in plan)
    assert plans == bench.pick_visits(groups, sessions=8, visits=5, seed=3)
    assert plans != bench.pick_visits(groups, sessions=8, visits=5, seed=4)
    assert len({tuple(p) for p in plans}) > 1  # users do not all walk the same path
    with pytest.raises(ValueError, match="no groups"):
        bench.pick_visits({1: []}, 1, 1)


def test_view_url_carries_run_step_and_group_quoted():
    url = _bench().view_url("http://127.0.0.1:8501", "runs/a b&c", 12, "task #1")
    query = parse_qs(urlparse(url).query)
    assert url.startswith("http://127.0.0.1:8501/?")
    assert query == {"run": ["runs/a b&c"], "step": ["12"], "group": ["task #1"]}


def test_percentile_matches_numpy_and_summary_counts_failures():
    bench = _bench()
    values = [0.3, 2.5, 1.0, 7.0, 0.9, 4.2, 1.1]
    for q in (0, 50, 95, 100):
        assert bench.percentile(values, q) == pytest.approx(np.percentile(values, q))
    visits = [bench.Visit(0, 1, "g", s) for s in values] + \
        [bench.Visit(1, 1, "h", 120.0, "not drawn in 120 s")]
    figures = bench.Round(2, visits, peak_mib=512.4, wall_s=30.0).summary()
    assert figures["views"] == 8 and figures["failed"] == 1
    assert figures["median_s"] == pytest.approx(np.median(values), abs=0.01)
    assert figures["p95_s"] == pytest.approx(np.percentile(values, 95), abs=0.01)
    assert figures["errors"] == ["not drawn in 120 s"] and figures["peak_mib"] == 512


def test_peak_memory_is_read_from_the_process_and_grows_with_it():
    """A fresh process (this one's peak may already lie above what it touches next)."""
    import subprocess
    import sys

    bench = _bench()
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys\nimport numpy as np\nprint('ready', flush=True)\n"
         "sys.stdin.readline()\nblock = np.ones(64 * 2**20 // 8)  # 64 MiB touched\n"
         "print('grown', flush=True)\nsys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        before = bench.peak_rss_mib(child.pid)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "grown"
        after = bench.peak_rss_mib(child.pid)
        assert before > 10 and after >= before + 50
    finally:
        child.kill()
        child.wait()


def test_cpu_seconds_and_descendants_follow_a_child_process():
    import subprocess
    import sys
    import time

    bench = _bench()
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.5: pass\ntime.sleep(30)"])
    try:
        assert child.pid in bench.descendants(os.getpid())
        deadline = time.monotonic() + 60
        while bench.cpu_seconds(child.pid) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert bench.cpu_seconds(child.pid) >= 0.4
        assert bench.peak_rss_mib(child.pid, "VmRSS") > 1
    finally:
        child.kill()
        child.wait()
    assert bench.cpu_seconds(child.pid) == 0.0 and bench.peak_rss_mib(child.pid) == 0.0
