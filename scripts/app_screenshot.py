"""The README's screenshot of the app: the group explorer on a bundled sample run's group of
about 100 nodes, one trajectory highlighted, taken in headless Chromium. The view is opened by
its URL (run, group, trajectory in the query string), as a bookmark would.

Usage: ``python scripts/app_screenshot.py [--run cooking] [--nodes 100]
[--out docs/screenshot.png]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from g2po.outcomes import OutcomeRule  # noqa: E402
from tests.app.browser import (  # noqa: E402
    chromium,
    chromium_missing,
    graph_frame,
    serve_app,
)


def pick_group(run: str, nodes: int) -> tuple[int, str, str]:
    """The (training step, group, first successful trajectory) of ``run`` whose graph size
    is nearest ``nodes``."""
    import loaders
    from g2po.analysis.labels import natural_key
    from g2po.analysis.state_graph import state_graph

    log = loaders.open_log(ROOT / "sample_rollouts" / run)
    best = None
    for step in log.train_steps():
        for group in log.groups(step):
            graph = state_graph(log.load_group(step, group), rule=OutcomeRule())
            gap = abs(len(graph.nodes) - nodes)
            if best is None or gap < best[0]:
                won = graph.steps.loc[graph.steps["success"], "traj_id"].astype(str)
                trajs = sorted((won if len(won) else graph.steps["traj_id"].astype(str))
                               .unique(), key=natural_key)
                best = (gap, step, group, trajs[0])
    assert best is not None, f"{run} holds no groups"
    return best[1], best[2], best[3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="cooking", help="a run of sample_rollouts/")
    parser.add_argument("--nodes", type=int, default=100, help="graph size to look for")
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot.png")
    args = parser.parse_args()
    if (why := chromium_missing()):
        print(why, file=sys.stderr)
        return 2
    step, group, traj = pick_group(args.run, args.nodes)
    # open on the group's first critical transition (largest |TD error|): node and edge
    import loaders
    from g2po.analysis.critical import critical_transitions
    from g2po.analysis.state_graph import state_graph

    graph = state_graph(loaders.open_log(ROOT / "sample_rollouts" / args.run)
                        .load_group(step, group), rule=OutcomeRule())
    top = critical_transitions(graph, 1)
    edge = int(graph.edges.index.get_loc(top.index[0]))
    query = urlencode({"run": args.run, "step": step, "group": group, "traj": traj,
                       "node": int(top["source"].iloc[0]), "edge": edge})
    with serve_app([]) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(f"{url}/?{query}")
        graph_frame(page, timeout=60_000, condition=f"document.title.includes({group!r}) && "
                    "window.g2po.edges.get().some(e => e.color.startsWith('rgba(180'))")
        time.sleep(1.5)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
    print(f"wrote {args.out} (training step {step}, group {group}, trajectory {traj}, "
          f"{len(graph.nodes)} nodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
