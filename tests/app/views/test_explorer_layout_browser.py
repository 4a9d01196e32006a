"""The group explorer's first view of a 30-state group (8 rollouts of up to 40 steps, the size
of an ALFWorld group early in training) in a real browser, at 1280×800 and 1920×1080: the
geometry read back from the page (``window.g2po.geometry()``) and checked with the library's
checks (:func:`g2po.analysis.geometry.check_drawing`, the layout benchmark's): no edge through
a node it does not touch, no overlapping nodes, every label drawn at least 10 px, at most 60
edges at full strength, the graph the page's width. Screenshots in ``artifacts/``.
"""

from __future__ import annotations

import pytest

from g2po.analysis.geometry import check_drawing
from loaders import RunWriter
from tests.app.browser import ARTIFACTS, graph_frame, serve_app, wait_idle, watch
from tests.app.layout_groups import SUCCESS_REWARD, layout_group

SCREENS = [(1280, 800), (1920, 1080)]


@pytest.fixture(scope="module")
def rooms_url(tmp_path_factory):
    run = tmp_path_factory.mktemp("rooms") / "rooms30"
    writer = RunWriter(run, {"env": "synthetic", "model": "test",
                             "config": {"success_reward": SUCCESS_REWARD}})
    writer.write_step(1, layout_group(30))
    with serve_app(["--log", str(run)]) as url:
        yield url


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_30_state_group_reads_at_first_sight(browser, rooms_url, size):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    seen = watch(page)
    page.goto(f"{rooms_url}/?group=rooms-30")
    graph_frame(page, timeout=90_000, condition="document.title.includes('rooms-30,')")
    wait_idle(page)
    frame = graph_frame(page)
    page.screenshot(path=str(ARTIFACTS / f"group-30-states-first-view-{size[0]}.png"))
    geometry = frame.evaluate("window.g2po.geometry()")
    check = check_drawing(geometry)
    assert check.edges > 100  # the group is as dense as the issue's
    assert check.edges_through_nodes == 0, check.through
    assert check.overlapping_nodes == 0
    assert check.smallest_label_px >= 10, check
    assert check.labels_drawn >= 30  # every state shows at least its number
    assert check.full_strength <= 60
    # the whole graph is in the first view, and the graph has the page's width
    n = frame.evaluate("""() => {
        const n = window.g2po.network, pos = n.getPositions();
        return Object.values(pos).map(p => n.canvasToDOM(p));
    }""")
    assert all(0 <= p["x"] <= geometry["width"] and 0 <= p["y"] <= geometry["height"]
               for p in n)
    content = page.locator("[data-testid='stMainBlockContainer']").evaluate(
        "e => e.clientWidth - parseFloat(getComputedStyle(e).paddingLeft)"
        " - parseFloat(getComputedStyle(e).paddingRight)")
    assert geometry["width"] >= content - 2, (geometry["width"], content)
    # and it ends above the fold
    iframe = page.locator("iframe").first.bounding_box()
    assert iframe["y"] + geometry["height"] <= size[1], (iframe, geometry["height"])
    # the page says where a compact view would read better only when the group is dense
    assert page.get_by_text("Matrix").count() == (1 if check.edges > 150 else 0)
    # "All edges": every edge at full strength, one click away, and back
    frame.locator("#g2po-all").click()
    assert check_drawing(frame.evaluate("window.g2po.geometry()")).full_strength == check.edges
    frame.locator("#g2po-all").click()
    assert check_drawing(frame.evaluate("window.g2po.geometry()")).full_strength <= 60
    assert seen.console_errors == [] and seen.external() == []
    page.close()
