"""The app in a real browser: Debian's headless Chromium, driven by Playwright, on the app
served by ``streamlit run`` on localhost. Screenshots land in ``artifacts/``."""

from __future__ import annotations

import contextlib
import io
import shutil
import time
from urllib.parse import urlparse

import pandas as pd

import loaders
from app.data import find_logs
from app.graph import FADED_EDGE, graph_html
from app.options import SAMPLE_DIR
from g2po.analysis.state_graph import state_graph
from g2po.cli import main
from g2po.outcomes import OutcomeRule
from loaders import RunWriter
from tests.app.browser import (
    ARTIFACTS,
    canvas_ink,
    choose,
    graph_frame,
    hover_node,
    serve_app,
    wait_idle,
    watch,
)
from tests.app.builders import XSS_ALL, XSS_IMG, XSS_LINK, XSS_SCRIPT, group_steps

VIEWPORT = {"width": 1600, "height": 1100}


def click_node(page, frame, node_id: int) -> None:
    box = page.locator("iframe").first.bounding_box()
    pos = frame.evaluate(f"""() => {{
        const n = window.g2po.network;
        return n.canvasToDOM(n.getPositions([{node_id}])[{node_id}]);
    }}""")
    page.mouse.click(box["x"] + pos["x"], box["y"] + pos["y"])


def test_sample_rollouts_draw_select_and_stay_offline(browser):
    refs, _ = find_logs(SAMPLE_DIR)
    assert refs, f"{SAMPLE_DIR} holds no runs"
    log = loaders.open_log(refs[0].path)
    step = log.train_steps()[-1]
    group = log.groups(step)[0]
    graph = state_graph(log.load_group(step, group), rule=OutcomeRule())

    with serve_app([]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        seen = watch(page)
        page.goto(url)
        frame = graph_frame(page, timeout=60_000)
        # the canvas is drawn, with the group's graph: every node and every edge
        assert frame.evaluate("window.g2po.nodes.length") == len(graph.nodes)
        assert frame.evaluate("window.g2po.edges.length") == len(graph.edges)
        assert frame.evaluate("document.getElementById('g2po-graph').dataset.nodeCount") == \
            str(len(graph.nodes))
        assert canvas_ink(frame) > 2_000
        assert f"group {group}," in frame.evaluate("document.title")
        wait_idle(page)
        page.screenshot(path=str(ARTIFACTS / "app-group-explorer.png"))

        # choosing a trajectory highlights its path (the rest fades), without a reload
        choose(page, "Highlight trajectories", index=1)
        page.keyboard.press("Escape")
        frame = graph_frame(page, condition=f"window.g2po.edges.get().some("
                                            f"e => e.color === {FADED_EDGE!r})")
        wait_idle(page)
        page.screenshot(path=str(ARTIFACTS / "app-trajectory-highlight.png"))

        # hovering a node shows its text; clicking it filters the step table to its steps
        assert "visits" in hover_node(page, frame, 1)
        click_node(page, frame, 1)
        visits = int(graph.nodes.loc[1, "visits"])
        page.get_by_text("at node 1").first.wait_for(timeout=20_000)
        assert f"Showing the {visits} step(s) at node 1" in page.inner_text("body")
        wait_idle(page)

        # the other pages render too
        for title in ("Run overview", "Estimator comparison", "State-merge diagnostics",
                      "Export"):
            page.get_by_role("link", name=title).first.click()
            page.get_by_role("heading", name=title).first.wait_for(timeout=30_000)
            wait_idle(page)
            assert not page.locator("[data-testid='stException']").count(), title
        page.screenshot(path=str(ARTIFACTS / "app-export.png"))

        # clicking a point of the overview opens that training step in the group explorer
        page.get_by_role("link", name="Run overview").first.click()
        points = page.locator(".js-plotly-plot .scatterlayer .trace").first.locator("path.point")
        points.first.wait_for(timeout=30_000)
        wait_idle(page)
        first_run = sorted(r.name for r in refs)[0]
        second_step = loaders.open_log(next(r.path for r in refs if r.name == first_run)
                                       ).train_steps()[1]
        points.nth(1).click(force=True)
        page.get_by_role("heading", name="Group explorer").first.wait_for(timeout=30_000)
        graph_frame(page, condition=f"document.title.includes('training step {second_step}')")

        # the URL `g2po url` prints for a node opens that group with that node selected
        cooking = next(r for r in refs if r.name == "cooking")
        log = loaders.open_log(cooking.path)
        group = log.groups(1)[2]
        linked = state_graph(log.load_group(1, group), rule=log.rule())
        states = linked.nodes[linked.nodes["kind"] == "state"]
        node = int(states.index[states["visits"] > 1][-1])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["url", cooking.path, "--group", group, "--node", str(node), "--base",
                         url]) == 0
        page.goto(out.getvalue().strip())
        frame = graph_frame(page, timeout=60_000, condition=f"document.title.includes("
                                                            f"'group {group},')")
        assert frame.evaluate("window.g2po.network.getSelectedNodes()") == [node]
        page.get_by_text(f"at node {node}").first.wait_for(timeout=20_000)
        assert f"Showing the {int(states.loc[node, 'visits'])} step(s) at node {node}" in \
            page.inner_text("body")

        assert seen.console_errors == []
        assert seen.dialogs == []
        assert seen.external() == [], "requests left localhost"
        page.close()


def assert_nothing_ran(page, seen) -> None:
    assert seen.dialogs == [], f"a payload opened a dialog: {seen.dialogs}"
    for frame in page.frames:
        try:
            state = frame.evaluate("""() => ({
                xss: typeof window.__xss,
                jsLinks: document.querySelectorAll('a[href^="javascript:" i]').length,
                imgX: document.querySelectorAll('img[src="x"]').length,
                scripts: [...document.scripts].filter(s => s.text.includes('__xss')).length,
            })""")
        except Exception:  # a frame navigating away: checked on the next page
            continue
        assert state == {"xss": "undefined", "jsLinks": 0, "imgX": 0, "scripts": 0}, \
            (frame.url, state)
    bad = [u for u in seen.requests if urlparse(u).path.rstrip("/").endswith("/x")]
    assert bad == [], f"an injected <img src=x> was loaded: {bad}"


def test_untrusted_log_text_never_runs_and_shows_as_text(browser, hostile_run):
    with serve_app(["--log", str(hostile_run)]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        seen = watch(page)
        page.goto(url)
        frame = graph_frame(page, timeout=60_000)
        wait_idle(page)
        body = page.inner_text("body")
        assert XSS_SCRIPT in body  # the group id, shown as text in the headline
        # tooltips show the state text as text
        node = frame.evaluate("window.g2po.nodes.getIds().find(id => id !== 0) ?? 0")
        tip = hover_node(page, frame, node)
        assert any(payload in tip for payload in (XSS_SCRIPT, XSS_IMG, XSS_LINK)), tip
        # a trajectory with a hostile id, a node with hostile text, the step text
        choose(page, "Highlight trajectories", option_text=XSS_IMG[:6])  # cut in the middle
        page.keyboard.press("Escape")  # a multiselect's menu stays open after a pick
        wait_idle(page)
        page.get_by_role("tab", name="Node").click()
        wait_idle(page)
        box = page.get_by_role("combobox", name="Select a node").first
        box.click()
        box.press("ArrowDown")  # the first click after the tab switch only focuses it
        page.get_by_role("option").nth(2).click()
        page.get_by_text("Occurrences").first.wait_for(timeout=20_000)
        wait_idle(page)
        # the node's state text in a code block, as text, whichever payload its key carries
        page.locator("[data-testid='stCode']").first.wait_for(timeout=20_000)  # loads lazily
        codes = " ".join(page.locator("[data-testid='stCode']").all_inner_texts())
        assert any(payload in codes for payload in XSS_ALL), codes
        page.get_by_role("tab", name="Step text").click()
        wait_idle(page)
        assert XSS_LINK in page.inner_text("body")
        assert_nothing_ran(page, seen)
        page.screenshot(path=str(ARTIFACTS / "app-hostile-text.png"))

        for title in ("Run overview", "Estimator comparison", "State-merge diagnostics",
                      "Export"):
            page.get_by_role("link", name=title).first.click()
            page.get_by_role("heading", name=title).first.wait_for(timeout=30_000)
            wait_idle(page)
            assert_nothing_ran(page, seen)
        assert seen.external() == []
        assert seen.console_errors == []
        page.close()


def test_a_live_run_refreshes_as_training_steps_land(browser, tmp_path, runs_root):
    live = tmp_path / "live"
    shutil.copytree(runs_root / "run_a", live)
    with serve_app(["--log", str(live), "--refresh", "1"]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        seen = watch(page)
        page.goto(url)
        graph_frame(page, timeout=60_000, condition="document.title.includes('training step 3')")
        RunWriter(live, {}, resume=True).write_step(4, group_steps(seed=42, rows=300))
        # no click: the watcher notices the new step and the view follows it
        graph_frame(page, timeout=30_000, condition="document.title.includes('training step 4')")
        assert page.get_by_role("combobox", name="Training step").input_value() == "4"
        assert seen.console_errors == [] and seen.external() == []
        page.close()


def test_the_exported_graph_opens_offline_from_a_file(browser, tmp_path):
    refs, _ = find_logs(SAMPLE_DIR)
    log = loaders.open_log(refs[0].path)
    step = log.train_steps()[0]
    graph = state_graph(log.load_group(step, log.groups(step)[0]), rule=OutcomeRule())
    path = tmp_path / "graph.html"
    path.write_text(graph_html(graph, title="exported", success_reward=10.0), encoding="utf-8")
    page = browser.new_page(viewport=VIEWPORT)
    seen = watch(page)
    page.goto(path.as_uri())
    frame = page.main_frame
    deadline = time.monotonic() + 30
    while not frame.evaluate("() => !!(window.g2po && window.g2po.drawn)"):
        assert time.monotonic() < deadline, "the exported graph was not drawn"
        time.sleep(0.05)
    assert frame.evaluate("window.g2po.nodes.length") == len(graph.nodes)
    assert frame.evaluate("window.g2po.edges.length") == len(graph.edges)
    assert canvas_ink(frame) > 2_000
    assert [u for u in seen.requests if not u.startswith("file:")] == []
    assert seen.console_errors == []  # the CSP let exactly the page's own scripts run
    page.screenshot(path=str(ARTIFACTS / "exported-graph.png"))
    page.close()


def write_reward_one_csv(path):
    """Successes rewarded 1.0 and marked ``won``: 3 of 4 rollouts won."""
    rows = []
    for i in range(4):
        for t in range(3):
            rows.append({"group_id": "ones", "traj_id": f"s0:{i}", "t": t,
                         "state_key": f"room {t} {i % 2 if t == 2 else ''}", "action": "go",
                         "episode_reward": 1.0 if i < 3 else 0.0, "is_action_valid": True,
                         "won": i < 3 and t == 2, "done": t == 2})
    pd.DataFrame(rows).to_csv(path, index=False)


def write_200_node_run(path):
    """One group whose state graph has about 200 nodes."""
    steps = group_steps(seed=7, rows=600, rollouts=8, max_len=120, states_per_task=300)
    first = steps[steps["group_id"] == steps["group_id"].iloc[0]]
    RunWriter(path, {"env": "synthetic", "config": {"success_reward": 10.0}}).write_step(
        1, first)
    return state_graph(first, rule=OutcomeRule())


def test_row_clicks_urls_a_200_node_group_and_won(browser, tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLIT_THEME_BASE", "dark")  # the graph follows the app's theme
    write_reward_one_csv(tmp_path / "ones.csv")
    big = write_200_node_run(tmp_path / "big")
    assert 150 <= len(big.nodes) <= 260, len(big.nodes)
    group = str(big.steps["group_id"].iloc[0])
    with serve_app(["--log", str(tmp_path / "ones.csv"), "--log", str(tmp_path / "big")]
                   ) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        seen = watch(page)
        # a URL opens the view it names: run, group, node (and the node's steps listed)
        node = int(big.nodes.index[big.nodes["visits"] > 1][1])
        page.goto(f"{url}/?run=big&step=1&group={group}&node={node}&edge_color=adv")
        frame = graph_frame(page, timeout=60_000, condition=f"document.title.includes("
                                                            f"'group {group},')")
        wait_idle(page)
        assert frame.evaluate("window.g2po.nodes.length") == len(big.nodes)
        assert frame.evaluate("window.g2po.dark && document.body.classList.contains("
                              "'g2po-dark')")
        assert frame.evaluate("window.g2po.network.getSelectedNodes()") == [node]
        assert "mean advantage A" in frame.inner_text("#g2po-legend")
        assert f"Showing the {int(big.nodes.loc[node, 'visits'])} step(s) at node {node}" in \
            page.inner_text("body")
        # at 1280×720 the graph is above the fold
        box = page.locator("iframe").first.bounding_box()
        assert box["y"] + box["height"] <= 720 + 50, box
        page.screenshot(path=str(ARTIFACTS / "app-200-node-group.png"))
        assert canvas_ink(frame) > 5_000
        page.get_by_role("button", name="Show all steps").click()
        page.get_by_text(f"at node {node}").first.wait_for(state="detached", timeout=20_000)
        wait_idle(page)

        # a step-row click selects its node and edge in the graph (read back from vis)
        grid = page.locator("[data-testid='stDataFrame']").last
        grid.scroll_into_view_if_needed()
        gbox = grid.bounding_box()
        page.mouse.click(gbox["x"] + 18, gbox["y"] + 35 + 35 * 2 + 17)  # the third row
        steps = big.steps.assign(_o=big.steps["traj_id"].map(lambda t: (len(t), t)))
        third = steps.sort_values(["_o", "t"], kind="stable").iloc[2]
        frame = graph_frame(page, condition=f"window.g2po.network.getSelectedNodes()"
                                            f"[0] === {int(third['node'])}")
        assert len(frame.evaluate("window.g2po.network.getSelectedEdges()")) == 1

        # a reward-1.0 log with `won`: the right success rate, no false alarm
        page.goto(f"{url}/?run=ones.csv")
        graph_frame(page, timeout=60_000, condition="document.title.includes('group ones,')")
        wait_idle(page)
        body = page.inner_text("body")
        assert "success rate 75%" in body and "disagrees" not in body
        assert seen.console_errors == [] and seen.external() == []
        page.close()
