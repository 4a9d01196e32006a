"""docs/groups-1280.png: the Groups page's first screen at 1280 x 800 (the sidebar open, as a
user first sees it), taken in headless Chromium on a log of the user's choice (default: the
bundled training run ``tiny_g2po_training``, the README's, whose tasks are TextWorld's long
intros).

Usage: ``python scripts/groups_screenshot.py [--log PATH] [--query "gscope=all"]
[--width 1280] [--height 800] [--out docs/groups-1280.png]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.browser import chromium, chromium_missing, serve_app, wait_idle  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", type=Path, default=ROOT / "sample_rollouts" / "tiny_g2po_training")
    parser.add_argument("--query", default="gscope=all", help="the page's URL query")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "groups-1280.png")
    args = parser.parse_args()
    if (why := chromium_missing()):
        print(why, file=sys.stderr)
        return 2
    with serve_app(["--log", str(args.log), "--refresh", "0"]) as url, \
            chromium() as browser:
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(f"{url}/groups?{args.query}")
        page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=120_000)
        wait_idle(page)
        page.mouse.move(args.width - 10, args.height - 10)  # off the table: no toolbar on it
        time.sleep(1.0)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        page.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
