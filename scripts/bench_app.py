"""Benchmark of the Streamlit app in a real browser (headless Chromium driven by Playwright).

Three figures, against the issue's targets:

1. launch: from starting ``streamlit run app/main.py`` (no arguments: the bundled sample
   rollouts) to the first drawn group view (vis-network's first ``afterDrawing``), target <= 3 s;
   a fresh server and a fresh browser profile (empty cache) each repeat; then the same with the
   browser's cache kept between repeats. Requests are recorded, not intercepted (interception
   costs the page ~0.3 s), and none may leave localhost.
2. group switch on the loaders' scale run (~1.3 M step rows, generated with
   ``scripts/bench_loaders.py``'s generator): from choosing another group in the sidebar to
   its graph drawn, target <= 0.5 s.
3. a 2,000-node graph: from its data arriving in the browser to drawn, target <= 2 s, and
   from drawn to the first hover tooltip, target <= 0.3 s (and, for reference, from opening
   the app's page to drawn).
4. the group explorer's interactions, server time (the script run, measured in-process with
   Streamlit's AppTest on the bundled cooking run's ~100-node group): highlighting a
   trajectory, a node click, a step-row click and a parameter change, median target <= 0.3 s.

Usage: ``python scripts/bench_app.py [--repeats 3] [--scale-dir DIR] [--skip-scale]
[--only server|big|launch]``.
Needs Debian's Chromium (``scripts/install_chromium.sh``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from g2po.outcomes import OutcomeRule  # noqa: E402
from tests.app.browser import (  # noqa: E402
    chromium,
    chromium_missing,
    graph_frame,
    hover_node,
    serve_app,
    watch,
)

VIEWPORT = {"width": 1600, "height": 1100}


def _fmt(values: list[float]) -> str:
    return (f"median {statistics.median(values):.2f} s (min {min(values):.2f}, "
            f"max {max(values):.2f}, n={len(values)})")


def bench_launch(browser, repeats: int, warm_cache: bool = False) -> list[float]:
    """Seconds from starting the server to the first drawn group view, a fresh server each
    repeat. By default each repeat is a new browser profile (nothing cached: a first visit);
    with ``warm_cache`` one profile is kept, so Streamlit's static files (served as immutable)
    come from the browser's cache, as for a user who has opened the app before."""
    times = []
    context = browser.new_context(viewport=VIEWPORT) if warm_cache else None
    if context is not None:  # fill the cache once
        with serve_app([]) as url:
            page = context.new_page()
            page.goto(url)
            graph_frame(page, timeout=60_000)
            page.close()
    for _ in range(repeats):
        start = time.perf_counter()
        with serve_app([]) as url:
            page = context.new_page() if context is not None else \
                browser.new_page(viewport=VIEWPORT)
            w = watch(page, block=False)  # record only: blocking would slow the page
            page.goto(url)
            graph_frame(page, timeout=60_000)
            times.append(time.perf_counter() - start)
            assert not w.external(), w.external()
            page.close()
    if context is not None:
        context.close()
    return times


def write_scale_run(path: Path, steps: int = 200, tasks: int = 16, rollouts: int = 8,
                    max_len: int = 50, obs_chars: int = 500) -> int:
    """The loaders' scale run (same generator and sizes as scripts/bench_loaders.py)."""
    from bench_loaders import generate_step

    from loaders import RunWriter

    writer = RunWriter(path, {"env": "bench", "model": "none"})
    rows = 0
    for step in range(1, steps + 1):
        frame = generate_step(step, tasks, rollouts, max_len, obs_chars)
        rows += len(frame)
        writer.write_step(step, frame)
    return rows


def bench_switch(browser, run_dir: Path, switches: int) -> list[float]:
    """Seconds from clicking another group in the sidebar's picker to its graph drawn."""
    from loaders import open_log

    log = open_log(run_dir)
    step = log.train_steps()[-1]
    groups = log.groups(step)
    times = []
    with serve_app(["--log", str(run_dir)]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        graph_frame(page, timeout=120_000, condition=f"document.title.includes({groups[0]!r})")
        for i in range(1, switches + 1):
            target = groups[i % len(groups)]
            page.get_by_role("combobox", name="Group (task)").first.click()
            option = page.get_by_role("option").filter(has_text=f"{target} ·").first
            option.wait_for()
            start = time.perf_counter()  # from the click on the other group
            option.click()
            graph_frame(page, timeout=30_000,
                        condition=f"document.title.includes('group {target},')")
            times.append(time.perf_counter() - start)
        page.close()
    return times


def write_big_graph_run(path: Path, target_nodes: int = 2000) -> int:
    """A run with one group whose state graph has about ``target_nodes`` nodes."""
    from loaders import RunWriter

    rng = np.random.default_rng(0)
    rollouts, length = 32, 160
    rows = []
    for r in range(rollouts):
        success = r % 3 == 0
        pos = 0
        for t in range(length):
            # rollouts share a spine of states early on, then wander over their own
            state = pos if pos < 40 else int(rng.integers(0, int(target_nodes * 1.2)))
            rows.append({"group_id": "big", "traj_id": f"r{r}", "t": t,
                         "state_key": f"room {state}: " + "a long observation " * 10,
                         "action": f"go {int(rng.integers(0, 4))}",
                         "episode_reward": 10.0 if success else 0.0,
                         "is_action_valid": bool(rng.random() > 0.05)})
            pos += int(rng.integers(1, 3))
    frame = pd.DataFrame(rows)
    RunWriter(path, {"env": "bench"}).write_step(1, frame)
    from g2po.analysis.state_graph import state_graph
    return len(state_graph(frame, rule=OutcomeRule()).nodes)


def bench_big_graph(browser, run_dir: Path, repeats: int) -> dict[str, list[float]]:
    """Seconds from the graph's data arriving in the browser to drawn, and to the first hover
    tooltip; and from requesting the page to drawn."""
    drawn, hover, total = [], [], []
    with serve_app(["--log", str(run_dir)]) as url:
        for _ in range(repeats):
            page = browser.new_page(viewport=VIEWPORT)
            start = time.perf_counter()
            page.goto(url)
            frame = graph_frame(page, timeout=120_000)
            drawn_ms = frame.evaluate("window.g2po.drawnAt - window.g2po.receivedAt")
            t0 = time.perf_counter()
            hover_node(page, frame, 0)
            hover_s = time.perf_counter() - t0
            drawn.append(drawn_ms / 1000.0)
            hover.append(hover_s)
            total.append(time.perf_counter() - start)
            nodes = frame.evaluate("window.g2po.nodes.length")
            page.close()
    return {"drawn": drawn, "hover": hover, "page": total, "nodes": [nodes]}


def bench_server(repeats: int) -> dict[str, list[float]]:
    """Seconds of server time (one script run) per group-explorer interaction, in-process
    with AppTest on the cooking sample's group nearest 100 nodes."""
    from dataclasses import replace

    import streamlit as st
    from app_screenshot import pick_group
    from streamlit.testing.v1 import AppTest

    from app.explorer.state import PICKS
    from g2po.analysis.state_graph import state_graph
    from loaders import open_log

    step, group, _ = pick_group("cooking", 100)
    log = open_log(ROOT / "sample_rollouts" / "cooking")
    graph = state_graph(log.load_group(step, group), rule=OutcomeRule())
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(ROOT / "scripts" / "_bench_app_entry.py"), default_timeout=120)
    at.query_params.update({"run": "cooking", "step": str(step), "group": group})
    at.run()
    assert not at.exception, at.exception
    trajs = at.multiselect(key="g_traj").options
    nodes = [int(n) for n in graph.nodes.index[graph.nodes["kind"] == "state"]]
    out: dict[str, list[float]] = {"highlight": [], "node click": [], "row click": [],
                                   "parameter change": []}

    def timed(name: str) -> None:
        t0 = time.perf_counter()
        at.run()
        out[name].append(time.perf_counter() - t0)
        assert not at.exception, at.exception

    for i in range(repeats):
        at.multiselect(key="g_traj").set_value([trajs[i % len(trajs)]])
        timed("highlight")
        node = nodes[(3 * i + 1) % len(nodes)]
        # what the click's callback does to the page's picks
        at.session_state[PICKS] = replace(at.session_state[PICKS], node=node,
                                          edge=None, filter=("node", node))
        timed("node click")
        row = graph.steps.iloc[(7 * i) % len(graph.steps)]
        at.session_state[PICKS] = replace(at.session_state[PICKS], node=int(row["node"]),
                                          edge=int(i % len(graph.edges)))  # a row click's
        timed("row click")
        at.number_input(key="p_gamma").set_value(round(0.9 - 0.005 * (i + 1), 3))  # a new γ
        timed("parameter change")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--switches", type=int, default=6)
    parser.add_argument("--scale-dir", type=Path, default=None,
                        help="an existing scale run to reuse (written there if absent)")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--only", choices=("server", "big", "launch"), default=None)
    args = parser.parse_args()
    if args.only in (None, "server"):
        server = bench_server(max(args.repeats, 5))
        for name, times in server.items():
            print(f"4. server time, {name}: {_fmt(times)}; target median <= 0.3 s")
        if args.only == "server":
            return 0
    if (why := chromium_missing()):
        print(why, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="g2po-bench-app-") as tmp, chromium() as browser:
        tmp = Path(tmp)
        if args.only in (None, "launch"):
            launch = bench_launch(browser, args.repeats)
            print(f"1. launch -> first drawn group view (sample rollouts): {_fmt(launch)}; "
                  "target <= 3 s")
            again = bench_launch(browser, args.repeats, warm_cache=True)
            print(f"   the same with the browser's cache warm (a returning user): {_fmt(again)}")

        if not args.skip_scale and args.only is None:
            scale = args.scale_dir or tmp / "scale"
            if not (scale / "run.json").exists():
                t = time.perf_counter()
                rows = write_scale_run(scale)
                print(f"   (wrote the scale run: {rows:,} step rows in "
                      f"{time.perf_counter() - t:.0f} s at {scale})")
            switch = bench_switch(browser, scale, args.switches)
            print(f"2. switch group on the scale run -> drawn: {_fmt(switch)}; target <= 0.5 s")

        if args.only in (None, "big"):
            big = tmp / "big"
            nodes = write_big_graph_run(big)
            result = bench_big_graph(browser, big, args.repeats)
            print(f"3. {nodes:,}-node graph ({result['nodes'][0]:,} drawn): data in the browser "
                  f"-> drawn {_fmt(result['drawn'])}, target <= 2 s; drawn -> first hover "
                  f"tooltip {_fmt(result['hover'])}, target <= 0.3 s (opening the app page -> "
                  f"drawn: {_fmt(result['page'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
