"""docs/tokens.png: a step's tokens coloured by log-prob on the Estimator comparison page, on a
batch-dump-like table whose responses carry per-token log-probs, entropies and a loss mask,
with a masked span (the environment's reply inside a multi-turn response) whose fake log-probs
lie around -45 nats (``tests.app.builders.token_steps``), taken in headless Chromium at
1280 x 800.

Usage: ``python scripts/tokens_screenshot.py [--row 4] [--colouring log-prob]
[--out docs/tokens.png]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.browser import chromium, chromium_missing, serve_app, wait_idle  # noqa: E402
from tests.app.builders import write_token_table  # noqa: E402

#: Glide's grid: header and row height (px), and the x of the row-selection boxes.
HEADER, ROW, TICK_X = 35, 35, 18


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--row", type=int, default=4, help="row of the per-step table")
    parser.add_argument("--colouring", default="log-prob",
                        help="advantage, log-prob, entropy or loss mask")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "tokens.png")
    args = parser.parse_args()
    if (why := chromium_missing()):
        print(why, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        log = write_token_table(Path(tmp) / "mug_batch.jsonl")
        with serve_app(["--log", str(log), "--refresh", "0"]) as url, chromium() as browser:
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(f"{url}/compare")
            grid = page.locator("[data-testid='stDataFrame']").first
            grid.wait_for(timeout=60_000)
            wait_idle(page)
            page.locator("[data-testid='stSidebar']").first.hover()
            page.locator("[data-testid='stSidebarCollapseButton'] button").first.click()
            time.sleep(1.0)
            grid.scroll_into_view_if_needed()
            box = grid.bounding_box()
            page.mouse.click(box["x"] + TICK_X, box["y"] + HEADER + ROW * args.row + ROW / 2)
            heading = page.get_by_text("Its tokens, coloured by credit").first
            heading.wait_for(timeout=30_000)
            wait_idle(page)
            page.locator("[data-testid='stRadio']", has_text="Colour the tokens by") \
                .get_by_text(args.colouring, exact=True).click()
            wait_idle(page)
            time.sleep(1.0)
            # the step's texts at the top, its tokens below them
            page.get_by_text("Model response").first.scroll_into_view_if_needed()
            page.get_by_text("Model response").first.hover()
            page.mouse.wheel(0, -60)
            page.mouse.move(20, args.height - 20)
            time.sleep(1.0)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            page.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
