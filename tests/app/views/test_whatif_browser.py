"""The What-if merging page in a real browser (Debian's headless Chromium): it draws, a step
whose advantage changes sign is shown highlighted, and a click on the run's table opens that
group on the page."""

from __future__ import annotations

import loaders
from app.tables import FLIP_BACKGROUND
from g2po.analysis.whatif import what_if, whatif_log
from tests.app.browser import ARTIFACTS, near, pixel, rgb, serve_app, wait_idle, watch
from tests.app.browser import GRID_ROW as ROW


def test_the_page_draws_a_sign_change_highlighted_and_opens_a_clicked_group(browser,
                                                                            runs_root):
    run = runs_root / "run_a"
    log = loaders.open_log(run)
    step = log.train_steps()[-1]
    group = log.groups(step)[0]
    result = what_if(log.load_group(step, group), "similarity:0.9", rule=log.rule())
    flips = result.summary()["sign_flips"]
    assert flips > 0
    table = whatif_log(log, "similarity:0.9")
    other = table[(table["train_step"] != step) | (table["group_id"] != group)].index[0]
    with serve_app(["--log", str(run), "--refresh", "0"]) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = watch(page)
        missing = []
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
        page.goto(f"{url}/whatif?step={step}&group={group}")
        page.get_by_text("Sign flips").first.wait_for(timeout=60_000)
        wait_idle(page)
        assert page.get_by_text(str(flips), exact=True).count() >= 1  # the metric
        grid = page.locator("[data-testid='stDataFrame']").nth(1)  # the changed steps
        grid.scroll_into_view_if_needed()
        cell = grid.locator("[data-testid='glide-cell-6-0']")  # column "sign", first row
        cell.wait_for(state="attached", timeout=30_000)
        assert cell.text_content() == "flips"
        # the first row is drawn on the highlight (the rollout cell, away from its text)
        box = grid.bounding_box()
        shown = pixel(page, box["x"] + 60, box["y"] + ROW + ROW // 2)
        assert near(shown, rgb(FLIP_BACKGROUND)), shown
        page.screenshot(path=str(ARTIFACTS / "app-whatif.png"))

        page.get_by_role("button", name="Compute for every group of the run").click()
        page.get_by_text("group(s) change").first.wait_for(timeout=60_000)
        wait_idle(page)
        runs = page.locator("[data-testid='stDataFrame']").last
        runs.scroll_into_view_if_needed()
        box = runs.bounding_box()
        page.mouse.click(box["x"] + 18, box["y"] + ROW + ROW * int(other) + ROW // 2)
        want = table.loc[other]
        page.get_by_text(f"group {want['group_id']}", exact=False).first.wait_for(
            timeout=30_000)
        wait_idle(page)
        assert f"group={want['group_id']}" in page.url
        assert f"step={int(want['train_step'])}" in page.url
        assert page.get_by_role("heading", name="What-if merging").count() == 1
        # a deep link's first requests go to /whatif/_stcore/… (404) before the app routes
        assert all(u.startswith(f"{url}/whatif/") for u in missing), missing
        assert len(seen.console_errors) == len(missing) and seen.external() == []
        page.close()
