"""The Groups page in a real browser (Debian's headless Chromium): a URL sets the table's scope
and sort, and clicking a row opens that group in the group explorer."""

from __future__ import annotations

import loaders
from g2po.analysis.triage import sort_groups, triage_log
from tests.app.browser import ARTIFACTS, graph_frame, serve_app, wait_idle, watch

VIEWPORT = {"width": 1500, "height": 1000}
ROW = 35  # the data grid's row height, in CSS pixels (its header row too)


def test_a_row_click_opens_its_group_in_the_group_explorer(browser, runs_root):
    run = runs_root / "run_a"
    log = loaders.open_log(run)
    table = sort_groups(triage_log(log, cache=False), "steps", descending=False)
    pick = 2
    step, group = int(table["train_step"].iloc[pick]), str(table["group_id"].iloc[pick])
    with serve_app(["--log", str(run), "--refresh", "0"]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        seen = watch(page)
        missing = []
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
        page.goto(f"{url}/groups?gscope=all&gsort=steps&gorder=asc")
        page.get_by_role("heading", name="Groups").first.wait_for(timeout=60_000)
        page.get_by_text(f"{len(table)} group(s) of {log.train_steps()[-1]} training "
                         "steps").first.wait_for(timeout=60_000)
        wait_idle(page)
        assert "gsort=steps" in page.url and "gscope=all" in page.url
        grid = page.locator("[data-testid='stDataFrame']").first
        grid.scroll_into_view_if_needed()
        # the grid's accessible cells (hidden, beside its canvas): the row to click holds
        # the group the URL's sort puts there (column 2: the group id)
        cell = grid.locator(f"[data-testid='glide-cell-2-{pick}']")
        cell.wait_for(state="attached", timeout=30_000)
        assert cell.text_content() == group
        page.screenshot(path=str(ARTIFACTS / "app-groups.png"))
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 18, box["y"] + ROW + ROW * pick + ROW // 2)
        page.get_by_role("heading", name="Group explorer").first.wait_for(timeout=30_000)
        graph_frame(page, timeout=60_000,
                    condition=f"document.title.includes('group {group},') && "
                              f"document.title.includes('training step {step}')")
        wait_idle(page)
        assert f"group={group}" in page.url and f"step={step}" in page.url
        # back to the table: as it was left (scope and sort), though the URL was the group's
        page.get_by_role("link", name="Groups", exact=True).first.click()
        page.get_by_text(f"{len(table)} group(s) of {log.train_steps()[-1]} training "
                         "steps").first.wait_for(timeout=60_000)
        wait_idle(page)
        assert page.get_by_role("combobox", name="Sort by").input_value() == "steps"
        # a deep link's first requests go to /groups/_stcore/… (404) before the app routes
        assert all(u.startswith(f"{url}/groups/") for u in missing), missing
        assert all("404" in e for e in seen.console_errors), seen.console_errors
        assert len(seen.console_errors) == len(missing) and seen.external() == []
        page.close()
