"""The docs' screenshots of the group explorer on one group: its first view (the graph) and its
state × state matrix, at one window size, taken in headless Chromium on the app served by
``streamlit run``. The view is opened by its URL (run, training step, group), as a bookmark
would; the matrix by the page's View switch (offered for dense groups only).

Usage: ``PYTHONPATH=. .venv/bin/python scripts/graph_screenshots.py --log RUN --group ID
[--step 1] [--width 1280 --height 800] [--out PNG] [--matrix-out PNG]`` (the docs' are
``docs/explorer-alfworld-46-states*.png``, see docs/app.md for the run they show).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.app.browser import (  # noqa: E402
    chromium,
    chromium_missing,
    graph_frame,
    serve_app,
    wait_idle,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", type=Path, required=True, help="the run or log to open")
    parser.add_argument("--group", required=True, help="the group to show")
    parser.add_argument("--step", type=int, default=1, help="its training step")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--out", type=Path,
                        default=ROOT / "docs" / "explorer-alfworld-46-states.png")
    parser.add_argument("--matrix-out", type=Path,
                        default=ROOT / "docs" / "explorer-alfworld-46-states-matrix.png")
    args = parser.parse_args(argv)
    if (why := chromium_missing()):
        print(why, file=sys.stderr)
        return 2
    query = urlencode({"step": args.step, "group": args.group})
    with serve_app(["--log", str(args.log)]) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(f"{url}/?{query}")
        graph_frame(page, timeout=120_000,
                    condition=f"document.title.includes({args.group + ','!r})")
        wait_idle(page)
        page.wait_for_timeout(1000)  # the resize observer's last frame
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        print(f"wrote {args.out}")
        switch = page.locator("[data-testid='stButtonGroup'] button").filter(has_text="Matrix")
        if not switch.count():
            print("no matrix: the group is not dense enough for the page to offer it")
            return 0
        switch.click()
        chart = page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot").first
        chart.wait_for(timeout=60_000)
        wait_idle(page)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(args.matrix_out))
        print(f"wrote {args.matrix_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
