"""The group explorer in a real browser (Debian's headless Chromium, driven by Playwright, on
the app served by ``streamlit run``), on a 16-rollout TextWorld cooking group of 251 nodes
(``tests/app/data/cooking16``): what the first view and "Fit all" show at 1280×720 and
1920×1080 (screenshots in ``artifacts/``), that nothing is cut, and that what the user chose
stays chosen. The canvas, the labels vis-network draws and the tables' rows exist only in the
browser, so these are read there. The same server holds a second, small log (one group of four
ALFWorld-like rollouts) whose trainer recorded the advantage it trained with (0 on one step
where G2PO gives credit) and whose responses carry their tokens: the recorded advantage beside
the recomputed one, the tokens coloured by either, and two nodes merged in the Node tab.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pandas as pd
import pytest

import loaders
from app.colors import diverging_colors
from app.graph import FADED_EDGE, HIGHLIGHT_COLOR
from app.tables import FLIP_BACKGROUND
from g2po.analysis.state_graph import state_graph
from g2po.analysis.whatif import merge_nodes, node_changes_text
from g2po.outcomes import OutcomeRule
from tests.app.browser import (
    ARTIFACTS,
    GRID_ROW,
    choose,
    click_row,
    graph_frame,
    grid_text,
    grid_with,
    hover_node,
    near,
    pixel,
    rgb,
    serve_app,
    wait_idle,
    watch,
)
from tests.app.builders import write_recorded_table

COOKING = Path(__file__).resolve().parents[1] / "data" / "cooking16"
BIG = "cooking-recipe3-take2-go9-open-cook-cut-train-s1"
SCREENS = [(1280, 720), (1920, 1080)]
#: A label smaller than this on screen is not read.
LEGIBLE_PX = 11


@pytest.fixture(scope="module")
def big_graph():
    log = loaders.open_log(COOKING)
    return state_graph(log.load_group(1, BIG), rule=OutcomeRule())


#: The small log's name in the app (its file's), and its one group.
RECORDED = "recorded.jsonl"
MUG = "mug-task"


@pytest.fixture(scope="module")
def recorded_log(tmp_path_factory) -> Path:
    return write_recorded_table(tmp_path_factory.mktemp("recorded") / RECORDED)


@pytest.fixture(scope="module")
def app_url(recorded_log):
    with serve_app(["--log", str(COOKING), "--log", str(recorded_log)]) as url:
        yield url


def open_group(browser, url: str, size: tuple[int, int], query: str = ""):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    seen = watch(page)
    page.goto(f"{url}/?group={BIG}{query}")
    graph_frame(page, timeout=90_000, condition=f"document.title.includes('{BIG},')")
    wait_idle(page)
    return page, seen, graph_frame(page)


#: The start and terminal nodes (by their shapes) and the critical transitions (the edges
#: with a rank: the page draws #1…#5 on them), as drawn.
KEY_PARTS = """
    const starts = window.g2po.nodes.get().filter(d => d.shape === 'diamond').map(d => d.id);
    const ends = window.g2po.nodes.get().filter(d => ['star', 'square', 'triangleDown']
                                                     .includes(d.shape)).map(d => d.id);
    const critical = window.g2po.edges.get().filter(d => d.rank);
"""
#: Where the start nodes and both ends of each critical transition are on screen, and the
#: canvas's size: the first view must show them.
FOCUS = """() => {""" + KEY_PARTS + """
    const n = window.g2po.network, ids = starts.slice();
    for (const d of critical) { ids.push(d.from, d.to); }
    const pos = n.getPositions(ids);
    const box = document.getElementById('g2po-graph').getBoundingClientRect();
    return {w: box.width, h: box.height, n: critical.length,
            points: ids.map(id => n.canvasToDOM(pos[id]))};
}"""
#: The on-screen size (px) of the labels that must stay legible: the start and terminal
#: nodes' (as vis-network draws them) and the critical transitions' numbers (as the page
#: draws them on their edges).
LABEL_PX = """() => {""" + KEY_PARTS + """
    const n = window.g2po.network, s = n.getScale(), sizes = {};
    for (const id of starts.concat(ends)) {
        sizes['n' + id] = n.body.nodes[id].labelModule.fontOptions.size * s;
    }
    const drawn = window.g2po.geometry().edges;
    for (const d of critical) sizes[d.id] = drawn.find(e => e.id === d.id).labelPx;
    return sizes;
}"""
#: The box around every node on screen, and the canvas's size.
EXTENT = """() => {
    const n = window.g2po.network, pos = n.getPositions();
    const pts = Object.values(pos).map(p => n.canvasToDOM(p));
    const box = document.getElementById('g2po-graph').getBoundingClientRect();
    const xs = pts.map(p => p.x), ys = pts.map(p => p.y);
    return {w: box.width, h: box.height, x0: Math.min(...xs), x1: Math.max(...xs),
            y0: Math.min(...ys), y1: Math.max(...ys)};
}"""


def assert_legible(frame) -> None:
    sizes = frame.evaluate(LABEL_PX)
    assert sizes and min(sizes.values()) >= LEGIBLE_PX, sizes


def text_fits(page, label: str) -> tuple[str, bool]:
    """A selectbox's shown value and whether it fits its box (not cut)."""
    box = page.get_by_role("combobox", name=label).first
    value, scroll, client = box.evaluate("e => [e.value, e.scrollWidth, e.clientWidth]")
    return value, scroll <= client


def grid_headers(page, index: int) -> list[str]:
    """The column headers a dataframe draws in its visible width (glide-data-grid lists
    only those in its accessible table)."""
    return page.locator("[data-testid='stDataFrame']").nth(index).evaluate(
        "g => [...g.querySelectorAll('table th')].map(t => t.textContent)")


@pytest.mark.parametrize("size", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_large_group_opens_on_its_critical_transitions_and_fits_whole(browser, app_url,
                                                                        big_graph, size):
    page, seen, frame = open_group(browser, app_url, size)
    assert frame.evaluate("window.g2po.nodes.length") == len(big_graph.nodes) > 240
    # the first view frames the start and every critical transition, numbers legible
    focus = frame.evaluate(FOCUS)
    assert focus["n"] == 5
    outside = [p for p in focus["points"] if not (0 <= p["x"] <= focus["w"] and
                                                  0 <= p["y"] <= focus["h"])]
    assert outside == [], (focus["w"], focus["h"], outside)
    assert_legible(frame)
    page.screenshot(path=str(ARTIFACTS / f"group-251-nodes-first-view-{size[0]}.png"))

    # Fit all: the whole graph fills the canvas (wrapped to its shape), key labels legible
    frame.locator("#g2po-fit").click()
    extent = frame.evaluate(EXTENT)
    assert extent["x0"] >= 0 and extent["x1"] <= extent["w"], extent
    assert extent["y0"] >= 0 and extent["y1"] <= extent["h"], extent
    assert (extent["x1"] - extent["x0"]) >= 0.6 * extent["w"], extent
    assert (extent["y1"] - extent["y0"]) >= 0.6 * extent["h"], extent
    assert_legible(frame)
    page.screenshot(path=str(ARTIFACTS / f"group-251-nodes-fit-all-{size[0]}.png"))

    # nothing cut: the group picker (what tells groups apart first, the success rate), the
    # colour pickers, the critical transitions' numbers (then the action)
    group, fits = text_fits(page, "Group (task)")
    assert fits and group.startswith("s1 ·") and "success 6%" in group, group
    for label in ("Edge colour", "V scale"):
        value, fits = text_fits(page, label)
        assert fits, (label, value)
    headers = grid_headers(page, 0)
    assert headers[:6] == ["#", "from", "to", "TD error", "mean A", "action"], headers
    legend = frame.locator("#g2po-legend")
    assert legend.evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    iframe = page.locator("iframe").first.bounding_box()
    wrap = frame.locator("#g2po-wrap").bounding_box()
    assert wrap["height"] <= iframe["height"] + 1, (wrap, iframe)
    assert seen.console_errors == [] and seen.external() == []
    page.close()


def critical_selected(page) -> list[str]:
    """The rows of the critical-transitions table that are ticked (their # column)."""
    return page.locator("[data-testid='stDataFrame']").first.evaluate(
        "g => [...g.querySelectorAll('table tbody tr[aria-selected=\"true\"]')]"
        ".map(r => r.querySelector('td').textContent)")


def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)


def query(page) -> dict[str, list[str]]:
    """The page's query string as the page has it now (``history.replaceState`` included)."""
    return parse_qs(page.evaluate("location.search").lstrip("?"))


VIEW = (1600, 1100)


def test_a_step_row_click_unticks_the_critical_transition(browser, app_url, big_graph):
    page, seen, frame = open_group(browser, app_url, VIEW)
    click_row(page, 0, 0)  # critical transition #1: its steps are listed
    page.get_by_text("step(s) along edge").first.wait_for(timeout=30_000)
    wait_idle(page)
    assert critical_selected(page) == ["1"]
    click_row(page, 1, 0)  # a step row: the selection is now that step's node and edge
    wait_idle(page)
    wait_for(lambda: critical_selected(page) == [], what="the critical transition unticked")
    assert query(page).get("node") is not None
    assert seen.console_errors == []
    page.close()


def test_changing_gamma_keeps_the_highlighted_trajectory(browser, app_url, big_graph):
    traj = sorted(big_graph.steps["traj_id"].unique())[3]
    page, seen, frame = open_group(browser, app_url, VIEW, f"&traj={traj}")
    faded = f"window.g2po.edges.get().filter(e => e.color === {FADED_EDGE!r}).length"
    before = frame.evaluate(faded)
    assert before > 0
    page.get_by_test_id("stExpander").get_by_text("G2PO parameters", exact=True).click()
    gamma = page.get_by_label("γ (discount)")
    gamma.fill("0.9")
    gamma.press("Enter")
    try:
        wait_for(lambda: query(page).get("gamma") == ["0.9"], 90, "gamma in the URL")
    except TimeoutError:
        page.screenshot(path=str(ARTIFACTS / "group-gamma-failure.png"), full_page=True)
        raise
    wait_idle(page)
    assert query(page).get("traj") == [traj]
    frame = graph_frame(page)
    assert frame.evaluate(faded) == before  # the same path still highlighted
    assert seen.console_errors == []
    page.close()


def test_an_alarms_steps_are_in_the_url_and_a_reload_shows_them(browser, app_url, big_graph):
    node = int(big_graph.nodes.index[big_graph.nodes["visits"] > 3][1])
    page, seen, frame = open_group(browser, app_url, VIEW, f"&node={node}")
    assert f"at node {node}" in page.inner_text("body")
    alarm = page.locator("[data-testid='stButton'] button").filter(has_text="Aliased states")
    alarm.first.click()
    page.get_by_text("of “Aliased states").first.wait_for(timeout=30_000)
    wait_idle(page)
    shown = page.get_by_text("of “Aliased states").first.inner_text()
    assert query(page).get("filter") == ["alarm:aliased"]
    page.reload()
    graph_frame(page, timeout=90_000)
    wait_idle(page)
    page.get_by_text("of “Aliased states").first.wait_for(timeout=30_000)
    assert page.get_by_text("of “Aliased states").first.inner_text() == shown
    assert f"at node {node}" not in page.inner_text("body")
    assert seen.console_errors == []
    page.close()


def test_a_tooltip_leaves_with_the_mouse(browser, app_url, big_graph):
    page, seen, frame = open_group(browser, app_url, VIEW)
    start = int(big_graph.nodes.index[big_graph.nodes["is_start"]][0])
    assert "visits" in hover_node(page, frame, start)
    page.mouse.move(5, 5)  # out of the graph's frame, in one move
    frame.locator("div.vis-tooltip").wait_for(state="hidden", timeout=5_000)
    page.close()


#: The colour on screen at the far end of a self-loop (its apex: the point of its circle
#: farthest from the node), as RGB.
LOOP_APEX = """(id) => {
    const n = window.g2po.network, e = n.body.edges[id];
    const [cx, cy, r] = e.edgeType._getCircleData(n.body.container.querySelector('canvas')
                                                   .getContext('2d'));
    const node = e.from, a = Math.atan2(cy - node.y, cx - node.x);
    const p = n.canvasToDOM({x: cx + (r - 1) * Math.cos(a), y: cy + (r - 1) * Math.sin(a)});
    const c = n.body.container.querySelector('canvas');
    const ratio = c.width / c.getBoundingClientRect().width;
    const d = c.getContext('2d').getImageData(Math.round(p.x * ratio) - 2,
                                              Math.round(p.y * ratio) - 2, 5, 5).data;
    const px = [];
    for (let i = 0; i < d.length; i += 4) px.push([d[i], d[i + 1], d[i + 2]]);
    return px;
}"""


def test_a_selected_self_loop_shows_past_the_selection_ring(browser, app_url, big_graph):
    edges = big_graph.edges
    loop = int(edges.index[(edges["source"] == edges["target"]).to_numpy()][0])
    node = int(edges.loc[loop, "source"])
    page, seen, frame = open_group(browser, app_url, VIEW, f"&node={node}&edge={loop}")
    frame = graph_frame(page, condition=f"window.g2po.network.getSelectedEdges()[0] === "
                                        f"'e{loop}'")
    frame.evaluate(f"""() => {{
        const n = window.g2po.network;
        window.g2po.redrawn = false;
        n.once('afterDrawing', () => {{ window.g2po.redrawn = true; }});
        n.focus({node}, {{scale: 2.0, animation: false}});
    }}""")
    frame = graph_frame(page, condition="window.g2po.redrawn")
    want = tuple(int(HIGHLIGHT_COLOR[i:i + 2], 16) for i in (1, 3, 5))
    pixels = frame.evaluate(LOOP_APEX, f"e{loop}")
    assert any(sum(abs(a - b) for a, b in zip(p, want, strict=True)) < 60 for p in pixels), \
        pixels
    page.screenshot(path=str(ARTIFACTS / "group-selected-self-loop.png"))
    page.close()


def open_recorded(browser, url: str, query: str = ""):
    """A page on the small log's group, once its graph is drawn and the app is idle."""
    page = browser.new_page(viewport={"width": VIEW[0], "height": VIEW[1]})
    seen = watch(page)
    page.goto(f"{url}/?run={RECORDED}&group={MUG}{query}")
    graph_frame(page, timeout=90_000, condition=f"document.title.includes('group {MUG},')")
    wait_idle(page)
    return page, seen


def step_tokens(page, t: int) -> list[dict]:
    """Step ``t``'s token spans in the token view: text, tooltip and background as drawn."""
    spans = page.locator(f"[data-testid='stHtml'] span[title^='t={t} ']")
    spans.first.wait_for(timeout=30_000)
    return spans.evaluate_all("""els => els.map(e => ({text: e.textContent, title: e.title,
        colour: getComputedStyle(e).backgroundColor,
        hatched: getComputedStyle(e).backgroundImage.includes('gradient')}))""")


def one_colour(tokens: list[dict]) -> tuple[int, int, int]:
    """The one background of a step's trained (unmasked) tokens: one value per step."""
    colours = {t["colour"] for t in tokens if "masked" not in t["title"]}
    assert len(colours) == 1, colours
    return rgb(colours.pop())


def test_the_recorded_advantage_beside_the_recomputed_and_tokens_coloured_by_either(
        browser, app_url, recorded_log):
    steps = pd.read_json(recorded_log, lines=True)
    zeroed = steps[(steps["traj_id"] == f"{MUG}:1") & (steps["t"] == 0)].iloc[0]
    page, seen = open_recorded(browser, app_url, f"&traj={MUG}:1")
    # the audit in one line above the graph
    line = page.get_by_text("step(s) recorded as 0 where g2po gives credit").first
    assert line.inner_text().startswith(
        "Recorded advantage (the trainer's, audited against g2po's recomputation): 1 step(s) "
        "recorded as 0 where g2po gives credit (1 of 10 recorded steps differ"), \
        line.inner_text()
    # the Steps tab: A, then the trainer's value and the audit's word for each step
    page.get_by_text("recorded (trainer): the advantage the log's trainer recorded").first \
        .wait_for(timeout=30_000)
    grid = grid_with(page, "audit")
    grid.scroll_into_view_if_needed()
    head, rows = grid_text(grid)
    at_a = head.index("A")
    assert head[at_a + 1: at_a + 3] == ["recorded (trainer)", "audit"], head
    audit, recorded, t = (head.index(c) for c in ("audit", "recorded (trainer)", "t"))
    flagged = [r for r in rows if r[audit] == "zeroed"]
    assert len(flagged) == 1 and flagged[0][t] == "0", rows
    assert float(flagged[0][recorded]) == 0.0 and abs(float(flagged[0][at_a])) > 0.1
    matching = [r for r in rows if r[audit] == "matches"]
    assert matching and all(abs(float(r[recorded]) - float(r[at_a])) < 1e-3 for r in matching)
    page.screenshot(path=str(ARTIFACTS / "group-recorded-advantage.png"))

    # the Step text tab: the highlighted rollout's tokens, coloured by its steps' advantage
    page.get_by_role("tab", name="Step text").click()
    first = step_tokens(page, 0)
    wait_idle(page)
    assert "".join(t["text"] for t in first) == zeroed["response"]
    masked = [t for t in first if "masked" in t["title"]]
    assert masked and all(t["hatched"] for t in masked)  # the tool's reply: not in the loss
    white = rgb(diverging_colors(np.zeros(1), 1.0)[0])
    under_g2po = one_colour(first)
    assert not near(under_g2po, white, 6)  # G2PO gives the step credit
    assert not near(one_colour(step_tokens(page, 1)), white, 6)
    # the same tokens under the recorded advantage: 0 on that step, white; the next unchanged
    choose(page, "Advantage of", "recorded (trainer)")
    page.get_by_text("the step's advantage under recorded (trainer)").first.wait_for(
        timeout=30_000)
    wait_idle(page)
    recorded_first = step_tokens(page, 0)
    assert near(one_colour(recorded_first), white, 2), recorded_first
    assert any(t["title"].endswith("advantage +0") for t in recorded_first), recorded_first
    assert not near(one_colour(step_tokens(page, 1)), white, 6)  # as recorded
    page.screenshot(path=str(ARTIFACTS / "group-step-text-tokens.png"))
    assert seen.console_errors == [] and seen.external() == []
    page.close()


def flipping_merge(graph, rule: OutcomeRule) -> tuple[int, int]:
    """The first two state nodes whose merge flips the sign of some step's advantage."""
    states = graph.nodes.index[graph.nodes["kind"] == "state"].astype(int)
    for a in states:
        for b in states[states > a]:
            if merge_nodes(graph, a, b, rule=rule).summary()["sign_flips"]:
                return int(a), int(b)
    raise AssertionError("no merge of two state nodes flips a sign in this group")


def test_two_nodes_merged_show_the_steps_whose_sign_flips(browser, app_url, recorded_log):
    rule = OutcomeRule()
    graph = state_graph(pd.read_json(recorded_log, lines=True), rule=rule)
    a, b = flipping_merge(graph, rule)
    merged = merge_nodes(graph, a, b, rule=rule)
    page, seen = open_recorded(browser, app_url, f"&node={a}")
    page.get_by_role("tab", name="Node").click()
    page.get_by_text(f"Node {a} (state)").first.wait_for(timeout=30_000)
    choose(page, "Compare with node (key diff, merge)", re.compile(rf"^{b}: "))
    wait_idle(page)
    page.get_by_role("button", name=f"Merge node {a} with node {b}").click()
    # the paragraph (its label is bold: an element of its own)
    summary = page.locator("[data-testid='stMarkdownContainer'] p").filter(
        has_text=f"nodes {a} and {b} merged:").first
    summary.wait_for(timeout=30_000)
    wait_idle(page)
    s = merged.summary()
    assert summary.inner_text().startswith(
        f"nodes {a} and {b} merged: {s['changed']} of {s['steps']} steps change"), \
        summary.inner_text()
    assert f"{s['sign_flips']} sign flip(s)" in summary.inner_text()
    # node values before → after, each side's nodes in words
    head, rows = grid_text(grid_with(page, "before"))
    want = node_changes_text(merged.nodes)
    assert head == list(want.columns), head
    assert rows == want.astype(str).to_numpy().tolist(), rows
    # the changed steps, sign flips first and highlighted, V before → after
    changed = grid_with(page, "A before")
    changed.scroll_into_view_if_needed()
    head, rows = grid_text(changed)
    assert head[:7] == ["rollout", "t", "action", "A before", "A after", "ΔA", "sign"], head
    assert [r[6] for r in rows[:s["sign_flips"]]] == ["flips"] * s["sign_flips"]
    before, after = float(rows[0][3]), float(rows[0][4])
    assert np.sign(before) != np.sign(after), rows[0]
    box = changed.bounding_box()
    shown = pixel(page, box["x"] + 60, box["y"] + GRID_ROW * 1.5)  # the rollout cell
    assert near(shown, rgb(FLIP_BACKGROUND)), shown
    page.screenshot(path=str(ARTIFACTS / "group-node-merged.png"))
    assert seen.console_errors == [] and seen.external() == []
    page.close()
