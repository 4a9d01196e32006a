"""docs/whatif.png: the What-if merging page on a bundled sample group, the second state key
the room's name alone (the first line of the observation, ``regex:^[^\\n]*``) against the
exact observation, taken in headless Chromium at 1280 x 800.

Usage: ``python scripts/whatif_screenshot.py [--run treasure_hunter] [--step 1]
[--group treasure_hunter-level15-s0] [--out docs/whatif.png]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.browser import chromium, chromium_missing, serve_app, wait_idle  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="treasure_hunter", help="a run of sample_rollouts/")
    parser.add_argument("--step", type=int, default=1)
    parser.add_argument("--group", default="treasure_hunter-level15-s0")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "whatif.png")
    args = parser.parse_args()
    if (why := chromium_missing()):
        print(why, file=sys.stderr)
        return 2
    query = urlencode({"run": args.run, "step": args.step, "group": args.group,
                       "wkey": r"regex:^[^\n]*"})
    log = ROOT / "sample_rollouts" / args.run
    with serve_app(["--log", str(log), "--refresh", "0"]) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(f"{url}/whatif?{query}")
        page.get_by_text("(after)").first.wait_for(timeout=60_000)
        wait_idle(page)
        # the sidebar folded away: the page's width for the tables
        page.locator("[data-testid='stSidebar']").first.hover()
        page.locator("[data-testid='stSidebarCollapseButton'] button").first.click()
        time.sleep(1.0)
        # the title scrolled out of view, the headline (run, step, group) kept
        page.get_by_role("heading", name="Nodes that merged or split").first.hover()
        page.mouse.wheel(0, 126)
        page.mouse.move(20, args.height - 20)  # off the tables: no toolbar over them
        time.sleep(1.0)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        page.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
