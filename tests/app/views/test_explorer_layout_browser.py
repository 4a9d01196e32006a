"""The group explorer's first view of generated groups the size users bring (8 rollouts of up
to 40 steps, the shape of an ALFWorld group early in training: 30 and ~50 states) in a real
browser, at 1280×800 and 1920×1080: the geometry read back from the page
(``window.g2po.geometry()``) and checked with the library's checks
(:func:`g2po.analysis.geometry.check_drawing` and :func:`~g2po.analysis.geometry.check_view`,
the layout benchmark's): no edge through a node it does not touch, no overlapping nodes, every
label drawn at least 10 px, at most 60 edges at full strength, the graph the page's width; the
whole group in view with its terminals, the critical transitions' numbers on their own edges,
states labelled with words; a click on critical transition #1 frames both its ends. And the
state × state matrix of a dense 30-state verl group: its cells where their transitions are,
read back by hovering the #1 cell. Screenshots in ``artifacts/``.
"""

from __future__ import annotations

import pytest

import loaders
from g2po.analysis.critical import critical_transitions
from g2po.analysis.geometry import check_drawing, check_view, to_screen
from g2po.analysis.state_graph import state_graph
from loaders import RunWriter
from tests.app.browser import ARTIFACTS, click_row, graph_frame, serve_app, wait_idle, watch
from tests.app.layout_groups import SUCCESS_REWARD, layout_group, write_verl_group

SCREENS = [(1280, 800), (1920, 1080)]
#: The ~50-state group: 8 rollouts of up to 40 steps over 50 rooms (48 states visited).
FIFTY = {"n_states": 50, "seed": 3, "rollouts": 8}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server on two logs: a run of the generated groups, and a verl dump of a dense
    30-state group (16 rollouts: past the density where the page offers the matrix)."""
    root = tmp_path_factory.mktemp("rooms")
    writer = RunWriter(root / "rooms", {"env": "synthetic", "model": "test",
                                        "config": {"success_reward": SUCCESS_REWARD}})
    writer.write_step(1, layout_group(30))
    writer.write_step(2, layout_group(**FIFTY))
    uid = write_verl_group(root / "verl30", 30, rollouts=16)
    with serve_app(["--log", str(root / "rooms"), "--log", str(root / "verl30")]) as url:
        yield {"url": url, "root": root, "verl_group": uid}


def open_group(browser, served, size, query: str, group: str):
    """A page at ``size`` on ``?query``, once the graph of ``group`` is drawn and the app is
    idle: the page, what it did, and the graph's frame."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    seen = watch(page)
    page.goto(f"{served['url']}/?{query}")
    graph_frame(page, timeout=90_000, condition=f"document.title.includes('{group},')")
    wait_idle(page)
    return page, seen, graph_frame(page)


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_30_state_group_reads_at_first_sight(browser, served, size):
    page, seen, frame = open_group(browser, served, size, "run=rooms&step=1&group=rooms-30",
                                   "rooms-30")
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
    view = check_view(geometry)
    assert view.nodes_inside == view.nodes and view.terminals_inside == view.terminals >= 2
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


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_50_state_group_shows_whole_with_words_and_numbers_on_their_edges(browser, served,
                                                                          size):
    """The faults the issue saw at 50 states: terminals and right-hand nodes off the canvas,
    "#1" beside another node's label ("31#1"), bare numbers, edges through nodes; and a
    click on critical transition #1 that framed its source only."""
    page, seen, frame = open_group(browser, served, size, "run=rooms&step=2&group=rooms-50",
                                   "rooms-50")
    page.screenshot(path=str(ARTIFACTS / f"group-50-states-first-view-{size[0]}.png"))
    geometry = frame.evaluate("window.g2po.geometry()")
    check, view = check_drawing(geometry), check_view(geometry)
    assert view.states >= 45
    assert (view.nodes_inside, view.terminals_inside) == (view.nodes, view.terminals)
    assert view.labels_on_own_edge == view.critical_labels == 5, view.stray_labels
    assert view.worded_labels >= 0.8 * view.states  # words, not bare numbers
    assert check.edges_through_nodes <= 1, check.through
    assert check.overlapping_nodes == 0 and check.smallest_label_px >= 10
    if size[0] == 1280:
        assert view.critical_arcs_inside == view.critical_arcs == 5

    # critical transition #1, clicked in its table: both of its ends in view, and its arc
    click_row(page, 0, 0)
    frame = graph_frame(page, condition="window.g2po.selected.edges.length === 1")
    wait_idle(page)
    geometry = frame.evaluate("window.g2po.geometry()")
    edge = next(e for e in geometry["edges"] if e["critical"] == 1)
    assert frame.evaluate("window.g2po.selected.edges") == [edge["id"]]
    ends = [n for n in geometry["nodes"] if n["id"] in (edge["from"], edge["to"])]
    points = to_screen(geometry, [[n["x"], n["y"]] for n in ends] + edge["points"])
    assert ((points >= 0) & (points <= [geometry["width"], geometry["height"]])).all(), points
    assert seen.console_errors == [] and seen.external() == []
    page.close()


def test_the_matrix_of_a_dense_verl_group_has_every_cell_where_its_transition_is(browser,
                                                                                 served):
    """A 30-state verl group: node names ('0', '11', '4') were taken for numbers, both axes
    ran 0–25 and the terminals' columns were gone. Categorical axes in the graph's order,
    the terminals present, and the #1 cell read back by hovering it."""
    uid = served["verl_group"]
    log = loaders.open_log(served["root"] / "verl30")
    graph = state_graph(log.load_group(1, uid), rule=log.rule())
    top = critical_transitions(graph, 1).iloc[0]
    page, seen, _ = open_group(browser, served, (1280, 800), f"run=verl30&group={uid}", uid)
    page.locator("[data-testid='stButtonGroup'] button").filter(has_text="Matrix").click()
    chart = page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot").first
    chart.wait_for(timeout=60_000)
    wait_idle(page)
    figure = chart.evaluate("""gd => ({x: Array.from(gd.data[0].x), y: Array.from(gd.data[0].y),
        z: Array.from(gd.data[0].z, row => Array.from(row)),
        text: Array.from(gd.data[0].text, row => Array.from(row)),
        xtype: gd._fullLayout.xaxis.type, ytype: gd._fullLayout.yaxis.type})""")
    assert figure["xtype"] == figure["ytype"] == "category"
    assert len(figure["y"]) == graph.n_states and {"success", "failure"} <= set(figure["x"])
    i, j = figure["y"].index(top["from"]), figure["x"].index(top["to"])
    assert figure["z"][i][j] == pytest.approx(top["td_error"])
    assert figure["text"][i][j].split()[0] == "#1"
    page.screenshot(path=str(ARTIFACTS / "group-matrix-verl-30-states-1280.png"))
    # the cell drawn where its names are: hovering there names both nodes and the TD error
    chart.scroll_into_view_if_needed()
    # (by the category's index: plotly's d2p would read a name such as '22' as a number)
    where = chart.evaluate(f"""gd => {{
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, d = gd.data[0];
        const area = gd.querySelector('.nsewdrag').getBoundingClientRect();
        return {{x: area.left + xa.c2p(Array.from(d.x).indexOf({top['to']!r})),
                 y: area.top + ya.c2p(Array.from(d.y).indexOf({top['from']!r}))}};
    }}""")
    page.mouse.move(where["x"], where["y"])
    hover = page.locator(".hoverlayer .hovertext").first
    hover.wait_for(timeout=10_000)
    text = hover.text_content()
    assert f"from {top['from']}:" in text and f"to {top['to']}:" in text, text
    assert f"TD error {top['td_error']:.3g}" in text, text
    assert seen.console_errors == [] and seen.external() == []
    page.close()
