"""How readable the group explorer's first view is, on generated groups of about 10, 30, 50,
80, 100 and 250 states, or on the groups of a log: per group, what the first view shows (nodes
and terminals inside the canvas, the critical transitions' numbers on their own edges, their
arcs inside the canvas, state labels with words rather than bare numbers), edges through nodes
they do not touch (as drawn, and with "All edges"), overlapping nodes, the smallest label on
screen, edges at full strength, and the time to first draw.

Each group is drawn as the explorer draws it (:func:`app.graph.page.network_data`) in a real
Chromium (Playwright), in a canvas of the size the explorer's graph gets at the chosen window
size; the geometry is read back from the page (``window.g2po.geometry()``) and checked with
:func:`g2po.analysis.geometry.check_drawing` and :func:`~g2po.analysis.geometry.check_view`,
the checks the browser tests use.

Usage: ``PYTHONPATH=. .venv/bin/python scripts/bench_layout.py [--screen 1280] [--sizes 30 50]
[--log RUN --groups G1 G2 --step 1] [--shots DIR]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from app.graph import network_data, render_html  # noqa: E402
from g2po.analysis.geometry import check_drawing, check_view  # noqa: E402
from g2po.analysis.state_graph import StateGraph  # noqa: E402
from tests.app.layout_groups import layout_graph  # noqa: E402

#: The graph's canvas (width, height in px) in the group explorer, per window (width, height).
CANVAS = {(1280, 800): (820, 400), (1920, 1080): (1460, 400)}
SIZES = (10, 30, 50, 80, 100, 250)


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def measure(browser, graph: StateGraph, canvas: tuple[int, int], shot: Path | None = None,
            success_reward: float = 10.0) -> dict:
    """Draw ``graph`` in a page whose graph canvas is ``canvas`` px; the checks of its first
    view and the time to first draw (building the data + the browser's first drawing)."""
    t0 = time.perf_counter()
    data = network_data(graph, success_reward=success_reward, title="bench")
    build_s = time.perf_counter() - t0
    html = render_html(data, height=f"{canvas[1]}px")
    page = browser.new_page(viewport={"width": canvas[0], "height": canvas[1] + 120})
    page.set_content(html)
    deadline = time.monotonic() + 60
    while not page.evaluate("() => !!(window.g2po && window.g2po.drawn)"):
        if time.monotonic() > deadline:
            raise TimeoutError("the graph was not drawn in 60 s")
        time.sleep(0.02)
    page.wait_for_timeout(300)  # the resize observer's first frame
    draw_ms = page.evaluate("window.g2po.drawnAt")
    geometry = page.evaluate("window.g2po.geometry()")
    check, view = check_drawing(geometry), check_view(geometry)
    if shot is not None:
        page.screenshot(path=str(shot))
    page.evaluate("document.getElementById('g2po-all').click()")  # every edge full
    page.wait_for_timeout(100)
    every = check_drawing(page.evaluate("window.g2po.geometry()"))
    page.close()
    return {"states": graph.n_states, "edges": check.edges,
            "nodes_in": _share(view.nodes_inside, view.nodes),
            "terminals_in": _share(view.terminals_inside, view.terminals),
            "nums_on_edge": _share(view.labels_on_own_edge, view.critical_labels),
            "arcs_in": _share(view.critical_arcs_inside, view.critical_arcs),
            "arcs_out": view.arcs_leaving,
            "worded": _share(view.worded_labels, view.states),
            "through": check.edges_through_nodes, "through_all": every.edges_through_nodes,
            "overlaps": check.overlapping_nodes,
            "min_px": round(check.smallest_label_px, 1),
            "strong": check.full_strength,
            "data_ms": round(build_s * 1000), "draw_ms": round(draw_ms)}


def log_graphs(path: Path, step: int | None, groups: list[str]) -> list[tuple[str, StateGraph,
                                                                             float]]:
    """The named groups of a log (every group of ``step`` when none is named), graphed by the
    log's own outcome rule."""
    import loaders
    from g2po.analysis.state_graph import state_graph

    log = loaders.open_log(path)
    step = step if step is not None else log.train_steps()[0]
    names = groups or list(log.groups(step))
    rule = log.rule()
    return [(name, state_graph(log.load_group(step, name), rule=rule), rule.success_reward)
            for name in names]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screen", type=int, choices=[1280, 1920], default=1280)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--log", type=Path, default=None,
                        help="measure the groups of this log instead of generated ones")
    parser.add_argument("--step", type=int, default=None, help="its training step")
    parser.add_argument("--groups", nargs="*", default=[], help="its groups (default: all)")
    parser.add_argument("--shots", type=Path, default=None,
                        help="save a screenshot per group into this folder")
    args = parser.parse_args(argv)
    window = next(w for w in CANVAS if w[0] == args.screen)
    canvas = CANVAS[window]
    from tests.app.browser import chromium  # Playwright: imported only to run

    if args.log is not None:
        cases = log_graphs(args.log, args.step, args.groups)
    else:
        cases = [(str(n), layout_graph(n), 10.0) for n in args.sizes]
    print(f"window {window[0]}x{window[1]}, graph canvas {canvas[0]}x{canvas[1]} px")
    rows = []
    with chromium() as browser:
        for name, graph, reward in cases:
            shot = None
            if args.shots is not None:
                args.shots.mkdir(parents=True, exist_ok=True)
                safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name[-24:])
                shot = args.shots / f"bench-layout-{safe}-{args.screen}.png"
            rows.append({"group": name[-24:], **measure(browser, graph, canvas, shot, reward)})
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
