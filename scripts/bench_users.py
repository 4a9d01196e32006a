"""Benchmark: many users on one app server.

A team shares one app (``streamlit run app/main.py --server.address 0.0.0.0 -- --log RUN``).
This starts the app the same way on a generated run of ~1.2 M step rows (the loaders' scale
run: ``scripts/bench_app.py``'s ``write_scale_run``), then, for K = 1, 4 and 8, opens K real
browser sessions at once (Debian's Chromium driven by Playwright, one browser context per
user), each visiting ``--visits`` random groups by URL (``?run=…&step=…&group=…``, a fresh
page load each). Per K it reports:

- the median and p95 seconds from requesting a group's URL to its graph drawn (vis-network's
  first drawing of that group);
- failed views: not drawn within ``--timeout`` seconds, another group drawn, or an error or
  exception box on the page;
- the server's peak resident memory, a fresh server per K: the process's own peak
  (``VmHWM``), or, should it start child processes, the largest sum of its and their
  resident memory seen (sampled twice a second), whichever is larger;
- the CPU seconds the server (with any children) and the browsers used.

With ``--slow``, one more session keeps the server busy with a slow script run (the Run
overview's state-merge rate, which reads every row of the run) while the K users browse: what
one session's long script run costs the others. ``--beside`` measures the same without
browsers, in this process: a group's graph and drawing data (a view's main server work) built
again and again, alone and then while another thread computes that merge rate
(``app.data.merge_rates``), and how long the merge rate took.

The browser and the server share this machine's cores, so the figures include the browsers'
own drawing; on a loaded machine they are noisy: repeat them (``--repeats``).

Usage: ``python scripts/bench_users.py [--run-dir DIR] [--users 1 4 8] [--visits 5]
[--address 127.0.0.1] [--slow] [--repeats 1] [--beside]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from g2po.outcomes import OutcomeRule  # noqa: E402
from tests.app.browser import (  # noqa: E402
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    chromium_missing,
    free_port,
    stop_process,
    wait_healthy,
)

VIEWPORT = {"width": 1400, "height": 1000}
#: Elements of a view that went wrong: an exception box, an error message.
ERROR_SELECTOR = "[data-testid='stException'], [data-testid='stAlertContentError']"


# -- the pieces (tested in tests/scripts/test_bench_users.py) ------------------------------

def pick_visits(groups: dict[int, list[str]], sessions: int, visits: int,
                seed: int = 0) -> list[list[tuple[int, str]]]:
    """``visits`` random (training step, group) pairs for each of ``sessions`` users, drawn
    uniformly from ``groups`` (training step → its group ids) with a fixed seed."""
    rng = random.Random(seed)
    pairs = [(step, g) for step in sorted(groups) for g in groups[step]]
    if not pairs:
        raise ValueError("the run holds no groups to visit")
    return [[rng.choice(pairs) for _ in range(visits)] for _ in range(sessions)]


def view_url(base: str, run: str, train_step: int, group: str) -> str:
    """The app's URL of one group's view (the query string the app keeps its view in)."""
    return f"{base}/?{urlencode({'run': run, 'step': train_step, 'group': group})}"


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, linear between the closest ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (``/proc/PID/stat``); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, …), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def peak_rss_mib(pid: int, field: str = "VmHWM") -> float:
    """The peak resident memory of a process (``VmHWM`` in ``/proc/PID/status``; ``VmRSS``:
    the current one), in MiB; 0 once the process is gone (or a zombie, not yet reaped)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0.0
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


@dataclass
class Visit:
    """One view of one group by one user: seconds to drawn, or why it failed."""

    user: int
    train_step: int
    group: str
    seconds: float
    error: str | None = None


@dataclass
class Round:
    """The figures of one K."""

    users: int
    visits: list[Visit] = field(default_factory=list)
    peak_mib: float = float("nan")
    wall_s: float = 0.0
    slow_s: float | None = None
    server_cpu_s: float = float("nan")
    browser_cpu_s: float = float("nan")

    def summary(self) -> dict:
        ok = [v.seconds for v in self.visits if v.error is None]
        failed = [v for v in self.visits if v.error is not None]
        return {"users": self.users, "views": len(self.visits), "failed": len(failed),
                "median_s": round(statistics.median(ok), 2) if ok else None,
                "p95_s": round(percentile(ok, 95), 2) if ok else None,
                "max_s": round(max(ok), 2) if ok else None,
                "peak_mib": round(self.peak_mib), "wall_s": round(self.wall_s, 1),
                "server_cpu_s": round(self.server_cpu_s, 1),
                "browser_cpu_s": round(self.browser_cpu_s, 1),
                "slow_run_s": None if self.slow_s is None else round(self.slow_s, 1),
                "errors": sorted({v.error for v in failed})[:5]}


# -- the server --------------------------------------------------------------------------

@contextlib.contextmanager
def serve(run_dir: Path, address: str, timeout: float = 120.0) -> Iterator[tuple[str, int]]:
    """``streamlit run app/main.py --server.address ADDRESS -- --log RUN`` on a free port, as
    a team would start it; yields (URL, server pid) once it answers, and stops it after."""
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "bench-users-server.log", "w")  # noqa: SIM115 - closed below
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "main.py"),
           "--server.headless", "true", "--server.port", str(port),
           "--server.address", address, "--server.fileWatcherType", "none",
           "--", "--log", str(run_dir), "--refresh", "0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    host = "127.0.0.1" if address in ("0.0.0.0", "::") else address
    url = f"http://{host}:{port}"
    try:
        wait_healthy(proc, url, timeout)
        yield url, proc.pid
    finally:
        stop_process(proc)
        log.close()


# -- the browsers --------------------------------------------------------------------------

_DRAWN = ("() => !!(window.g2po && window.g2po.drawn && "
          "document.title.includes({title}))")


async def _drawn(page, group: str, train_step: int, timeout: float) -> str | None:
    """Wait until the view shows the graph of ``group`` drawn; None, or what went wrong."""
    title = json.dumps(f"group {group}, training step {train_step}")
    check = _DRAWN.format(title=title)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in page.frames:
            try:
                if await frame.evaluate(check):
                    return None
            except Exception:  # noqa: BLE001 - a frame navigating or detaching: look again
                pass
        if await page.locator(ERROR_SELECTOR).count():
            text = await page.locator(ERROR_SELECTOR).first.inner_text()
            return "error on the page: " + " ".join(text.split())[:160]
        await asyncio.sleep(0.1)
    return f"not drawn in {timeout:.0f} s"


async def _user(browser, user: int, base: str, run: str, plan: list[tuple[int, str]],
                timeout: float, out: list[Visit]) -> None:
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    try:
        for train_step, group in plan:
            start = time.perf_counter()
            try:
                await page.goto(view_url(base, run, train_step, group), timeout=timeout * 1000)
                error = await _drawn(page, group, train_step, timeout)
            except Exception as err:  # noqa: BLE001 - a failed view, counted and reported
                error = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
            if error is None and await page.locator(ERROR_SELECTOR).count():
                error = "error on the page after drawing"
            out.append(Visit(user, train_step, group, time.perf_counter() - start, error))
    finally:
        await context.close()


async def _slow_session(browser, base: str, run: str, done: asyncio.Event) -> float | None:
    """A session running a slow script: the Run overview computing the state-merge rate of
    the whole run. Returns the seconds until that was done (the merge-rate chart is drawn),
    or None when it was still running once ``done`` (every user finished)."""
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    try:
        start = time.perf_counter()
        await page.goto(f"{base}/overview?{urlencode({'run': run})}")
        # the rates are shown: their chart is drawn (the page leaves it out while unknown)
        chart = page.locator("text.gtitle", has_text="State-merge rate")
        while not done.is_set():
            if await chart.count():
                return time.perf_counter() - start
            await asyncio.sleep(0.25)
        return None
    finally:
        await context.close()


async def _round(users: int, base: str, run: str, plans: list[list[tuple[int, str]]],
                 timeout: float, slow: bool) -> tuple[list[Visit], float | None]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                          headless=True)
        try:
            visits: list[Visit] = []
            done = asyncio.Event()
            slow_task = asyncio.create_task(_slow_session(browser, base, run, done)) \
                if slow else None
            if slow_task is not None:
                await asyncio.sleep(3.0)  # its script run under way before the users come
            await asyncio.gather(*(_user(browser, u, base, run, plans[u], timeout, visits)
                                   for u in range(users)))
            done.set()
            slow_s = await slow_task if slow_task is not None else None
            return visits, slow_s
        finally:
            await browser.close()


def run_round(run_dir: Path, run: str, users: int, plans: list[list[tuple[int, str]]],
              address: str, timeout: float, slow: bool) -> Round:
    """K users on a fresh server; its peak memory read before it stops, and the CPU time the
    server and the browsers (this process's Chromium processes) used meanwhile."""
    with serve(run_dir, address) as (base, pid):
        server_cpu = cpu_seconds(pid)
        browsers: dict[int, float] = {}
        children: dict[int, float] = {}
        together = [0.0]  # the largest server + children resident memory seen

        async def watch_browsers(done: asyncio.Event) -> None:
            while not done.is_set():  # processes come and go: the last reading of each
                below = descendants(pid)
                for child in below:
                    children[child] = max(children.get(child, 0.0), cpu_seconds(child))
                together[0] = max(together[0], peak_rss_mib(pid, "VmRSS")
                                  + sum(peak_rss_mib(c, "VmRSS") for c in below))
                for child in (c for c in descendants(os.getpid()) if c != pid
                              and c not in below):
                    browsers[child] = max(browsers.get(child, 0.0), cpu_seconds(child))
                await asyncio.sleep(0.5)

        async def measured():
            done = asyncio.Event()
            watcher = asyncio.create_task(watch_browsers(done))
            try:
                return await _round(users, base, run, plans, timeout, slow)
            finally:
                done.set()
                await watcher

        start = time.perf_counter()
        visits, slow_s = asyncio.run(measured())
        wall = time.perf_counter() - start
        peak = max(peak_rss_mib(pid), together[0])
        server_cpu = cpu_seconds(pid) - server_cpu + sum(children.values())
    return Round(users, visits, peak, wall, slow_s, server_cpu, sum(browsers.values()))


def bench_beside(run_dir: Path, views: int = 60, seed: int = 0) -> dict:
    """Seconds of a group's graph and drawing data (load, ``state_graph``, ``network_data``)
    alone, then while another thread computes the run's merge rate with the app's own
    ``app.data.merge_rates``; and the merge rate's seconds."""
    import threading

    from app import data
    from app.graph import Highlight, network_data
    from g2po.analysis.state_graph import state_graph
    from loaders import open_log

    log = open_log(run_dir)
    rng = random.Random(seed)
    steps = log.train_steps()
    picks = [(s, str(rng.choice(log.groups(s)))) for s in rng.choices(steps, k=views)]

    def view(step: int, group: str) -> float:
        start = time.perf_counter()
        graph = state_graph(log.load_group(step, group), rule=OutcomeRule())
        network_data(graph, Highlight(), success_reward=10.0, title="bench", graph_id="bench")
        return time.perf_counter() - start

    view(*picks[0])  # imports and first-use costs
    alone = [view(*p) for p in picks[: views // 4]]
    start = time.perf_counter()
    slow = threading.Thread(target=data.merge_rates, args=(log, f"bench:{run_dir}",
                                                           (len(steps), steps[-1]), "exact"))
    slow.start()
    beside = []
    for pick in picks[views // 4:]:
        if not slow.is_alive():
            break
        beside.append(view(*pick))
    slow.join()
    return {"merge_rate_s": round(time.perf_counter() - start, 1),
            "view_alone_median_s": round(statistics.median(alone), 3),
            "view_beside_median_s": round(statistics.median(beside), 3) if beside else None,
            "views_beside": len(beside)}


def scale_run(run_dir: Path | None) -> Path:
    """The ~1.2 M-row scale run: ``run_dir`` when it holds one, else written there (or in a
    temporary folder)."""
    from bench_app import write_scale_run

    path = run_dir or Path(tempfile.mkdtemp(prefix="g2po-bench-users-")) / "scale"
    if not (path / "run.json").exists():
        t = time.perf_counter()
        rows = write_scale_run(path)
        print(f"(wrote the scale run: {rows:,} step rows in {time.perf_counter() - t:.0f} s "
              f"at {path})", flush=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=Path, help="the scale run (written there if absent)")
    parser.add_argument("--users", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--visits", type=int, default=5, help="groups each user opens")
    parser.add_argument("--address", default="127.0.0.1",
                        help="--server.address of the app (a team: 0.0.0.0)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per view")
    parser.add_argument("--slow", action="store_true",
                        help="one more session runs a slow script meanwhile")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--beside", action="store_true",
                        help="only the in-process measure of views beside the merge rate")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    why = chromium_missing()
    if why:
        print(why, file=sys.stderr)
        return 2
    from loaders import open_log

    run_dir = scale_run(args.run_dir)
    if args.beside:
        for _ in range(args.repeats):
            print(json.dumps(bench_beside(run_dir, seed=args.seed)), flush=True)
        return 0
    log = open_log(run_dir)
    groups = {s: [str(g) for g in log.groups(s)] for s in log.train_steps()}
    rows = int(log.summary()["n_steps"].sum())
    print(f"run {run_dir.name}: {rows:,} step rows, {len(groups)} training steps, "
          f"{sum(map(len, groups.values()))} groups; server --server.address {args.address}"
          + ("; with a slow session" if args.slow else ""), flush=True)
    results = []
    for repeat in range(args.repeats):
        for users in args.users:
            plans = pick_visits(groups, users, args.visits, seed=args.seed + 1000 * repeat
                                + users)
            figures = run_round(run_dir, run_dir.name, users, plans, args.address,
                                args.timeout, args.slow).summary()
            figures["repeat"] = repeat
            results.append(figures)
            print(f"K={users}: {figures['views']} views, median {figures['median_s']} s, "
                  f"p95 {figures['p95_s']} s, max {figures['max_s']} s, failed "
                  f"{figures['failed']}, server peak {figures['peak_mib']} MiB, wall "
                  f"{figures['wall_s']} s, CPU s: server {figures['server_cpu_s']}, browsers "
                  f"{figures['browser_cpu_s']}"
                  + (f", slow run {figures['slow_run_s'] or 'still going'} s" if args.slow
                     else "")
                  + (f"; errors: {figures['errors']}" if figures["errors"] else ""),
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
