"""The Groups page in a real browser (Debian's headless Chromium), one server for the module: a
URL sets the table's scope and sort, and clicking a row opens that group in the group explorer;
at 1280 × 800 the first screen shows rows, and the columns that decide (severity, success,
why) on a dump with uuid group ids and long task texts."""

from __future__ import annotations

import io

import numpy as np
import pytest

import loaders
from g2po.analysis.triage import sort_groups, triage_log
from tests.app.browser import ARTIFACTS, graph_frame, serve_app, wait_idle, watch
from tests.app.views.test_triage import write_first_screen_log

VIEWPORT = {"width": 1500, "height": 1000}
ROW = 35  # the data grid's row height, in CSS pixels (its header row too)


def cell_boxes(page, grid, row: int = 0) -> dict[str, dict[str, float]]:
    """The bounding box on the page of each cell of data row ``row`` the grid draws, by its
    column's header. The grid draws on a canvas (its accessible cells have no box): the
    column edges are read from the screen, as the x of each vertical border line (a pixel
    column of one colour down three rows), and the columns it draws are those its accessible
    header lists, left to right after the row-selection column."""
    from PIL import Image

    box = grid.bounding_box()
    shot = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB")).astype(int)
    left, right = int(box["x"]), min(int(box["x"] + box["width"]), shot.shape[1])
    strip = shot[int(box["y"]) + ROW + 2:int(box["y"]) + 4 * ROW - 2, left:right]
    line = (strip == strip[0]).all(axis=(0, 2)) & (strip[0] != 255).any(axis=1)
    edges = [left + int(i) for i in np.flatnonzero(line)]
    if edges[-1] < right - 2:
        edges.append(right)  # the last column runs on past the grid's edge
    headers = grid.locator("[role='columnheader']").all_text_contents()
    assert len(edges) >= len(headers) + 2, (edges, headers)
    top = box["y"] + ROW * (row + 1)
    return {h: {"x": edges[i + 1], "y": top, "width": edges[i + 2] - edges[i + 1],
                "height": ROW} for i, h in enumerate(headers)}


@pytest.fixture(scope="module")
def served(runs_root, tmp_path_factory):
    """The app serving ``run_a`` and a first-screen dump (``first.csv``): (its URL, their
    paths)."""
    first = write_first_screen_log(tmp_path_factory.mktemp("first") / "first.csv")
    run = runs_root / "run_a"
    with serve_app(["--log", str(run), "--log", str(first), "--refresh", "0"]) as url:
        yield url, run, first


def test_a_row_click_opens_its_group_in_the_group_explorer(browser, served):
    url, run, _ = served
    log = loaders.open_log(run)
    table = sort_groups(triage_log(log, cache=False), "steps", descending=False)
    pick = 2
    step, group = int(table["train_step"].iloc[pick]), str(table["group_id"].iloc[pick])
    page = browser.new_page(viewport=VIEWPORT)
    seen = watch(page)
    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(f"{url}/groups?run=run_a&gscope=all&gsort=steps&gorder=asc")
    page.get_by_role("heading", name="Groups").first.wait_for(timeout=60_000)
    page.get_by_text(f"{len(table)} group(s) of {log.train_steps()[-1]} training "
                     "steps").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert "gsort=steps" in page.url and "gscope=all" in page.url
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.scroll_into_view_if_needed()
    # the grid's accessible cells (hidden, beside its canvas): the row to click holds the
    # group the URL's sort puts there (the whole id: the last column but one)
    ids = grid.locator(f"[data-testid='glide-cell-2-{pick}']")
    ids.wait_for(state="attached", timeout=30_000)
    assert group.endswith(ids.text_content())  # the short id: what tells it apart
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


def test_the_first_screen_shows_the_rows_and_what_decides_at_1280(browser, served):
    url, _, first = served
    width, height = 1280, 800
    page = browser.new_page(viewport={"width": width, "height": height})
    seen = watch(page)
    page.goto(f"{url}/groups?run=first.csv")
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.wait_for(timeout=60_000)
    wait_idle(page)
    # the step limit the failures suggest: said on the one line above the rows
    hint = loaders.open_log(first).truncation_hint()
    page.get_by_text(f"Failures cut at a step limit of {hint.length}?").first.wait_for()
    page.mouse.move(width - 5, height - 5)  # no toolbar or hover over the grid
    # the first data row's cells that decide, inside the screen, the reason with room to read
    cells = cell_boxes(page, grid)
    assert list(cells)[:5] == ["group", "task", "severity", "success", "why"]
    for column in ("group", "task", "severity", "success"):
        b = cells[column]
        assert 0 <= b["x"] and b["x"] + b["width"] <= width, (column, b)
        assert b["y"] + b["height"] <= height, (column, b)
    assert cells["why"]["x"] + 250 <= width and cells["why"]["y"] + ROW <= height
    assert "group id" not in cells  # the whole id: off to the right
    # what those cells hold (the grid's accessible cells): the worst group's
    header = [grid.locator(f"[data-testid='glide-cell-{c}-0']").text_content()
              for c in range(1, 6)]
    table = sort_groups(triage_log(loaders.open_log(first), cache=False))
    top = table.iloc[0]
    assert top["group_id"].endswith(header[0].split("…")[-1]) and len(header[0]) <= 14
    assert "Welcome" not in header[1]
    assert float(header[2]) == pytest.approx(top["severity"])
    assert float(header[3]) == pytest.approx(top["success_rate"])
    assert header[4] == top["reason"]
    page.screenshot(path=str(ARTIFACTS / "groups-1280.png"))
    assert all("404" in e for e in seen.console_errors), seen.console_errors  # deep link
    assert seen.external() == []
    page.close()
