"""How readable the group explorer's first view is, on generated groups of about 10, 30, 100
and 250 states: per size, edges through nodes they do not touch, overlapping nodes, the
smallest label on screen, edges at full strength, and the time to first draw.

Each group is drawn as the explorer draws it (:func:`app.graph_html.network_data`) in a real
Chromium (Playwright), in a canvas of the size the explorer's graph gets at the chosen window
size; the geometry is read back from the page (``window.g2po.geometry()``) and checked with
:func:`g2po.analysis.geometry.check_drawing`, the checks the browser tests use.

Usage: ``PYTHONPATH=. .venv/bin/python scripts/bench_layout.py [--screen 1280] [--sizes 10 30]``
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

from app.graph_html import network_data, render_html  # noqa: E402
from g2po.analysis.geometry import check_drawing  # noqa: E402
from g2po.analysis.state_graph import StateGraph  # noqa: E402
from tests.app.layout_groups import layout_graph  # noqa: E402

#: The graph's canvas (width, height in px) in the group explorer, per window (width, height).
CANVAS = {(1280, 800): (820, 400), (1920, 1080): (1460, 400)}
SIZES = (10, 30, 100, 250)


def measure(browser, graph: StateGraph, canvas: tuple[int, int], shot: Path | None = None
            ) -> dict:
    """Draw ``graph`` in a page whose graph canvas is ``canvas`` px; the checks of its first
    view and the time to first draw (building the data + the browser's first drawing)."""
    t0 = time.perf_counter()
    data = network_data(graph, success_reward=10.0, title="bench")
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
    check = check_drawing(page.evaluate("window.g2po.geometry()"))
    if shot is not None:
        page.screenshot(path=str(shot))
    page.close()
    return {"states": graph.n_states, "edges": check.edges,
            "through_nodes": check.edges_through_nodes, "overlaps": check.overlapping_nodes,
            "smallest_label_px": round(check.smallest_label_px, 1),
            "labels_drawn": check.labels_drawn, "labels_hidden": check.labels_hidden,
            "full_strength": check.full_strength,
            "data_ms": round(build_s * 1000), "draw_ms": round(draw_ms),
            "first_draw_ms": round(build_s * 1000 + draw_ms)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screen", type=int, choices=[1280, 1920], default=1280)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--shots", type=Path, default=None,
                        help="save a screenshot per size into this folder")
    args = parser.parse_args(argv)
    window = next(w for w in CANVAS if w[0] == args.screen)
    canvas = CANVAS[window]
    from tests.app.browser import chromium  # Playwright: imported only to run

    print(f"window {window[0]}x{window[1]}, graph canvas {canvas[0]}x{canvas[1]} px")
    rows = []
    with chromium() as browser:
        for n in args.sizes:
            graph = layout_graph(n)
            shot = None
            if args.shots is not None:
                args.shots.mkdir(parents=True, exist_ok=True)
                shot = args.shots / f"bench-layout-{n}-{args.screen}.png"
            rows.append({"size": n, **measure(browser, graph, canvas, shot)})
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
