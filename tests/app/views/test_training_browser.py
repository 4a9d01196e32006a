"""The pages over training in a real browser (Debian's headless Chromium): a run keeps its
colour when another run is added to the training curves, and clicking a point of a curve or of
a state's history opens that training step (and group) in the group explorer; a validation
success curve is drawn with its noise (a 95 % band per validation, the window mean dashed)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from g2po.evaluation import validation_curve
from tests.app.browser import ARTIFACTS, serve_app, wait_idle, watch
from tests.app.views.conftest import VAL_SUCCESS

VIEWPORT = {"width": 1500, "height": 1000}


def trace_colours(page) -> dict[str, str]:
    """Run name → line colour of the first chart's traces, as plotly drew them."""
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    return page.evaluate("""() => {
        const plot = document.querySelector('.js-plotly-plot');
        const out = {};
        for (const t of plot._fullData) out[t.name] = t.line.color;
        return out;
    }""")


def click_point(page, chart, index: int, then: str, tries: int = 3) -> None:
    """Click point ``index`` of the first trace of ``chart`` until the page headed ``then``
    shows: a click landing while Streamlit redraws the chart is lost, as a user's would be."""
    points = chart.locator(".scatterlayer .trace path.point")
    for attempt in range(tries):
        try:
            points.nth(index).wait_for(timeout=30_000)
        except Exception:  # keep what the page showed, for whoever reads the failure
            page.screenshot(path=str(ARTIFACTS / "click-point-failure.png"), full_page=True)
            raise
        wait_idle(page)
        points.nth(index).click(force=True)
        try:
            page.get_by_role("heading", name=then).first.wait_for(timeout=20_000)
            return
        except Exception:
            if attempt == tries - 1:
                raise


@pytest.fixture(scope="module")
def app_url(training_runs):
    with serve_app(["--log", str(training_runs), "--refresh", "0"]) as url:
        yield url


def test_a_runs_colour_survives_adding_another_and_a_click_opens_the_step(browser, app_url):
    url = app_url
    page = browser.new_page(viewport=VIEWPORT)
    seen = watch(page)
    page.goto(url)  # a deep link's first requests go to /curves/_stcore/… (404) first
    page.get_by_role("link", name="Training curves").first.click(timeout=60_000)
    page.get_by_role("heading", name="Training curves").first.wait_for(timeout=60_000)
    wait_idle(page)
    # only train_b on the chart
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_role("button", name="Remove train_a").first.click()
    wait_idle(page)
    alone = trace_colours(page)
    assert list(alone) == ["train_b"]
    # add train_a back
    sidebar.get_by_role("combobox").first.click()
    page.get_by_role("option", name="train_a").first.click()
    page.keyboard.press("Escape")
    wait_idle(page)
    both = trace_colours(page)
    assert set(both) == {"train_a", "train_b"}
    assert both["train_b"] == alone["train_b"]
    assert both["train_a"] != both["train_b"]
    page.screenshot(path=str(ARTIFACTS / "app-curves.png"))

    # clicking a point of a curve opens that training step in the group explorer
    click_point(page, page.locator(".js-plotly-plot").first, 1, "Group explorer")
    wait_idle(page)
    assert page.get_by_role("combobox", name="Training step").input_value() == "2"
    assert seen.console_errors == [] and seen.dialogs == [], seen.console_errors
    assert seen.external() == []
    page.close()


def test_a_link_followed_early_keeps_the_sidebars_choices_and_a_history_click_opens_the_step(
        browser, app_url):
    page = browser.new_page(viewport=VIEWPORT)
    seen = watch(page)
    # The browser draws no multiselect or selectbox until their scripts arrive: held back
    # here, so the sidebar's link is followed while the browser's copies of "Runs" and "Run to
    # inspect" have no value yet (in CI a slow first load did the same, and the new page
    # showed no run chosen: "Choose a run above" at the next rerun).
    held = []
    widgets = ("**/static/js/Multiselect.*.js", "**/static/js/Selectbox.*.js",
               "**/static/js/NumberInput.*.js")
    for pattern in widgets:
        page.route(pattern, lambda route: held.append(route))
    # a deep link: the run in view is not the first, γ not the default
    page.goto(f"{app_url}/?run=train_b&gamma=0.9")
    page.get_by_role("link", name="State over training").first.click(timeout=60_000)
    page.get_by_role("heading", name="State over training").first.wait_for(timeout=60_000)
    assert len(held) == 3, "the widgets' scripts were not requested"
    for route in held:
        route.continue_()
    for pattern in widgets:
        page.unroute(pattern)
    sidebar = page.locator("[data-testid='stSidebar']")
    for run in ("train_a", "train_b"):  # both runs still chosen, as the server has them
        sidebar.get_by_role("button", name=f"Remove {run}").first.wait_for(timeout=30_000)
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_role("combobox", name="Run to inspect").input_value() == "train_b"
    assert page.get_by_text("Choose a run above").count() == 0
    sidebar.get_by_text("G2PO parameters").first.click()
    assert sidebar.get_by_label("γ (discount)").input_value() == "0.90"  # not its minimum
    # the value chart (lines): its second point is training step 2
    click_point(page, page.locator(".js-plotly-plot").nth(1), 1, "Group explorer")
    wait_idle(page)
    assert page.get_by_role("combobox", name="Training step").input_value() == "2"
    group = page.get_by_role("combobox", name="Group (task)").input_value()
    # the task the history followed, at step 2 (the picker leads with what tells it apart)
    assert group.startswith("task-0 ·"), group
    assert parse_qs(urlparse(page.url).query)["group"] == ["s2-task-0"]
    assert seen.console_errors == [] and seen.dialogs == [], seen.console_errors
    page.close()


def test_the_curves_own_path_a_legend_a_band_wall_time_and_a_regex(browser, app_url):
    """/group and /curves open their pages; each chart names its runs in a legend; smoothing draws a
    band behind each curve; the x-axis turns to wall time; a regex picks the charts and a bad
    one says why."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = watch(page)
    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(f"{app_url}/group")  # the start page's own path (it was "Page not found")
    page.get_by_role("heading", name="Group explorer").first.wait_for(timeout=60_000)
    assert page.get_by_text("Page not found").count() == 0
    page.goto(f"{app_url}/curves")
    page.get_by_role("heading", name="Training curves").first.wait_for(timeout=60_000)
    assert page.get_by_text("Page not found").count() == 0
    page.locator(".js-plotly-plot").nth(2).wait_for(timeout=60_000)
    wait_idle(page)
    charts = page.locator(".js-plotly-plot")
    assert charts.count() == 3
    # a grid: the three charts side by side, filling the width of the main area
    boxes = [charts.nth(i).bounding_box() for i in range(3)]
    assert len({round(b["y"]) for b in boxes}) == 1, boxes
    main = page.locator("[data-testid='stMain']").bounding_box()
    assert boxes[2]["x"] + boxes[2]["width"] - boxes[0]["x"] > 0.7 * main["width"]
    legends = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(
        p => [...p.querySelectorAll('.legend .traces .legendtext')].map(t => t.textContent))""")
    assert legends == [["train_a", "train_b"]] * 3, legends
    # smoothing: a filled band per run behind the curves
    slider = page.get_by_role("slider").first
    slider.focus()
    for _ in range(60):
        page.keyboard.press("ArrowRight")
    wait_idle(page)
    bands = page.evaluate("""() => document.querySelector('.js-plotly-plot')._fullData
        .filter(t => t.fill === 'toself').length""")
    assert bands == 2
    page.get_by_text("wall time", exact=True).first.click()
    wait_idle(page)
    title = page.locator(".js-plotly-plot").first.locator(".g-xtitle").text_content()
    assert title.startswith("wall time ("), title
    page.screenshot(path=str(ARTIFACTS / "app-curves-smoothed-wall-time.png"))
    box = page.get_by_label("Or chart every metric matching", exact=False)
    box.fill("loss$")
    box.press("Enter")
    wait_idle(page)
    page.get_by_text("2 metric(s) match").first.wait_for(timeout=30_000)
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=30_000)  # drawn after the caption
    wait_idle(page)
    assert page.locator(".js-plotly-plot").count() == 2
    box.fill("(unclosed")
    box.press("Enter")
    wait_idle(page)
    page.get_by_text("invalid regular expression").first.wait_for(timeout=30_000)
    # a deep link's first requests go to /curves/_stcore/… (404) before the app routes
    assert all(u.startswith((f"{app_url}/curves/", f"{app_url}/group/")) for u in missing), \
        missing
    assert all("404" in e for e in seen.console_errors), seen.console_errors
    assert len(seen.console_errors) == len(missing) and seen.dialogs == []
    assert seen.external() == []
    page.close()


#: Per trace of the first chart, as plotly drew it: run, fill, dash, colour, points.
TRACES = """() => document.querySelector('.js-plotly-plot')._fullData.map(t => ({
    name: t.name, fill: t.fill, dash: t.line.dash, colour: t.line.color,
    x: Array.from(t.x), y: Array.from(t.y)}))"""


def noise_traces(page) -> dict[str, dict[str, dict]]:
    """Run → its curve (``value``), its 95 % band (``band``: filled) and its window mean
    (``mean``: dashed) on the first chart."""
    out: dict[str, dict[str, dict]] = {}
    for trace in page.evaluate(TRACES):
        part = "band" if trace["fill"] == "toself" else \
            "mean" if trace["dash"] == "dash" else "value"
        out.setdefault(trace["name"], {})[part] = trace
    return out


def test_a_validation_curve_shows_its_noise_band_and_window_mean(browser, app_url,
                                                                 training_runs):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = watch(page)
    page.goto(app_url)
    page.get_by_role("link", name="Training curves").first.click(timeout=60_000)
    page.get_by_role("heading", name="Training curves").first.wait_for(timeout=60_000)
    wait_idle(page)
    box = page.get_by_label("Or chart every metric matching", exact=False)
    box.fill("^val/success/")
    box.press("Enter")
    page.get_by_text("1 metric(s) match").first.wait_for(timeout=30_000)
    noise = page.get_by_role("checkbox", name="Validation noise")
    noise.wait_for(timeout=30_000)
    assert noise.is_checked()
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    wait_idle(page)
    for window in (3, 2):
        if window != 3:  # fewer validations in the window mean: the dashed line follows
            field = page.get_by_label("Validations in the window mean")
            field.fill(str(window))
            field.press("Enter")
            wait_idle(page)
        traces = noise_traces(page)
        assert set(traces) == {"train_a", "train_b"}
        for run, parts in traces.items():
            metrics = pd.read_json(training_runs / run / "metrics.jsonl", lines=True)
            want = validation_curve(metrics, VAL_SUCCESS, window)
            steps = want["train_step"].tolist()
            assert set(parts) == {"value", "band", "mean"}, parts
            band, mean = parts["band"], parts["mean"]
            assert band["x"] == steps + steps[::-1]
            assert band["y"] == pytest.approx(want["high"].tolist() + want["low"].tolist()[::-1])
            assert mean["x"] == steps
            assert mean["y"] == pytest.approx(want["window_mean"].tolist())
            # in the run's colour, the band around its values
            assert band["colour"] == mean["colour"] == parts["value"]["colour"]
            assert all(lo <= v <= hi for lo, v, hi in zip(
                want["low"], parts["value"]["y"], want["high"], strict=True))
    chart = page.locator(".js-plotly-plot").first
    fills = chart.locator(".scatterlayer .trace path.js-fill")
    assert fills.count() == 2 and all(len(fills.nth(i).get_attribute("d") or "") > 10
                                      for i in range(2))
    dashed = chart.locator(".scatterlayer .trace path.js-line").evaluate_all(
        "els => els.filter(e => (e.style.strokeDasharray || 'none') !== 'none').length")
    assert dashed == 2
    page.screenshot(path=str(ARTIFACTS / "app-curves-validation-noise.png"))
    assert seen.console_errors == [] and seen.dialogs == [] and seen.external() == []
    page.close()
