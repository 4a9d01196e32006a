"""The estimator comparison in a real browser (Debian's headless Chromium): a click on a row of
the sign-disagreement table opens that step in the group explorer, its node and edge selected
and its trajectory highlighted, every time (not only on the session's first visit)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import loaders
from g2po.analysis.compare import compare_estimators, sign_disagreements, step_location
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.browser import ARTIFACTS, graph_frame, serve_app, wait_idle, watch

#: The width the issue saw the comparison clipped at.
VIEWPORT = {"width": 1280, "height": 720}
#: Glide's grid: header and row height (px), and the x of the row-selection boxes.
HEADER, ROW, TICK_X = 35, 35, 18


def expected_steps(runs_root, k: int) -> list[tuple[str, int, int, int]]:
    """The first ``k`` rows of the page's default G2PO-vs-GRPO disagreement table of run_a's
    group task-0 at training step 1, each as (traj_id, t, node, edge) in the explorer's graph."""
    steps = loaders.open_log(str(runs_root / "run_a")).load_group(1, "task-0")
    result = compare_estimators(steps, ["g2po", "grpo"], rule=OutcomeRule())
    diff = sign_disagreements(result.table, "g2po", "grpo", result.parts)
    graph = state_graph(steps, rule=OutcomeRule())
    out = []
    for row in diff.head(k).itertuples():
        node, edge = step_location(graph, row.traj_id, row.t)
        out.append((str(row.traj_id), int(row.t), node, edge))
    return out


def open_comparison(page) -> None:
    page.get_by_role("link", name="Estimator comparison").first.click()
    page.get_by_text("steps get opposite signs").first.wait_for(timeout=60_000)
    wait_idle(page)


def click_row(page, index: int) -> None:
    """Tick row ``index`` of the sign-disagreement table (the page's last table)."""
    grid = page.locator("[data-testid='stDataFrame']").last
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + TICK_X, box["y"] + HEADER + ROW * index + ROW / 2)


def test_a_disagreement_row_opens_its_step_in_the_group_explorer(browser, runs_root):
    rows = expected_steps(runs_root, 8)
    first = rows[0]
    # a later row at another node, for the second visit
    other = next(r for r in rows[1:] if r[2] != first[2])
    with serve_app(["--log", str(runs_root), "--refresh", "0"]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        seen = watch(page)
        # the session starts on the explorer, so its URL names are read once already
        page.goto(f"{url}/?run=run_a&step=1&group=task-0")
        graph_frame(page, timeout=60_000, condition="document.title.includes('group task-0,')")
        wait_idle(page)
        open_comparison(page)
        page.locator("[data-testid='stDataFrame']").last.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "app-compare-disagreements-1280.png"))

        for traj_id, _t, node, edge in (first, other):
            click_row(page, rows.index(next(r for r in rows if r[2] == node
                                            and r[0] == traj_id)))
            page.get_by_role("heading", name="Group explorer").first.wait_for(timeout=30_000)
            frame = graph_frame(page, condition=f"window.g2po.network.getSelectedNodes()[0]"
                                                f" === {node}")
            assert frame.evaluate("window.g2po.network.getSelectedEdges()") == [f"e{edge}"]
            page.get_by_text(f"at node {node}").first.wait_for(timeout=30_000)
            query = parse_qs(urlparse(page.url).query)
            assert query["node"] == [str(node)] and query["edge"] == [str(edge)]
            assert query["traj"] == [traj_id]  # its trajectory highlighted
            assert query["group"] == ["task-0"] and query["step"] == ["1"]
            wait_idle(page)
            if (traj_id, node) == (first[0], first[2]):
                page.screenshot(path=str(ARTIFACTS / "app-compare-row-opened.png"))
                open_comparison(page)

        assert seen.console_errors == [] and seen.dialogs == []
        assert seen.external() == []
        page.close()


def test_a_verl_dump_explains_disagreements_and_shows_a_steps_texts(browser, tmp_path):
    """On a verl dump: the counts by deciding term and the reasons in words; a click on a step
    of the per-step table shows its current observation beside the model's response, its
    tokens coloured by the step's advantage, and the whole prompt one click further."""
    from tests.loaders.builders import SYSTEM, agent_loop_entries, write_verl_dump

    dump = tmp_path / "rollout_data"
    write_verl_dump(dump, 1, agent_loop_entries(1, prompts=2, sessions=4))
    with serve_app(["--log", str(dump), "--refresh", "0"]) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = watch(page)
        page.goto(url)
        page.get_by_role("link", name="Estimator comparison").first.wait_for(timeout=60_000)
        open_comparison(page)
        page.get_by_text("By deciding term").first.wait_for(timeout=30_000)
        page.get_by_text("Why, step by step").first.wait_for(timeout=30_000)
        page.get_by_text("Why, step by step").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "app-compare-why-verl-1280.png"))
        grid = page.locator("[data-testid='stDataFrame']").first
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        page.mouse.click(box["x"] + TICK_X, box["y"] + HEADER + ROW * 2 + ROW / 2)
        prompt = page.get_by_text("The whole prompt (").first
        prompt.wait_for(timeout=30_000)
        observation = page.locator("[data-testid='stCode']:visible", has_text="room 2.")
        assert observation.first.inner_text().strip() == "You are in room 2."
        response = page.locator("[data-testid='stCode']:visible", has_text="<action>")
        assert response.first.inner_text().strip().endswith("<action>go to room 3</action>")
        assert not page.locator("[data-testid='stCode']:visible", has_text=SYSTEM).count()
        # the response's tokens, coloured by the step's advantage, its text as it was
        tokens = page.locator("[data-testid='stHtml'] span[title^='t=2 ']")
        tokens.first.wait_for(timeout=30_000)
        assert tokens.evaluate_all("els => els.map(e => e.textContent).join('')") == \
            "<think>Turn 2: try something.</think><action>go to room 3</action>"
        colours = set(tokens.evaluate_all(
            "els => els.map(e => getComputedStyle(e).backgroundColor)"))
        assert len(colours) == 1 and colours != {"rgba(0, 0, 0, 0)"}  # one colour: one step
        assert page.evaluate("window.__xss") is None
        prompt.click()
        page.get_by_text(SYSTEM).first.wait_for(timeout=30_000)
        wait_idle(page)
        prompt.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "app-compare-step-texts-verl-1280.png"))
        assert seen.console_errors == [] and seen.dialogs == []
        assert seen.external() == []
        page.close()
