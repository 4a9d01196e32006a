"""The Run overview of a verl dump in a real browser (Debian's Chromium via Playwright): its
state-merge rate drawn at once, and after the app is started again, from the dump's summary
cache (the rows are not read again)."""

from __future__ import annotations

import os
import re
import time

import pytest

import loaders
from tests.app.browser import serve_app, wait_idle
from tests.loaders.builders import agent_loop_entries, write_verl_dump

VIEWPORT = {"width": 1600, "height": 1100}
TITLE = "State-merge rate"


def _drawn_rates(page, timeout: float = 180.0) -> list[float]:
    """The y values of the overview's merge-rate chart once plotly has drawn it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ys = page.evaluate("""(title) => {
            for (const gd of document.querySelectorAll('.js-plotly-plot')) {
                const text = gd.layout && gd.layout.title && gd.layout.title.text;
                if (text && text.includes(title) && gd._fullData && gd._fullData.length)
                    return Array.from(gd._fullData[0].y);  // decoded (data may hold bdata)
            }
            return null;
        }""", TITLE)
        if ys:
            return [float(y) for y in ys]
        time.sleep(0.2)
    pytest.fail(f"no {TITLE!r} chart drawn in {timeout} s")


def test_a_dumps_overview_shows_its_merge_rate_after_a_restart_from_the_cache(browser,
                                                                              tmp_path):
    dump = tmp_path / "rollout_data"
    for step in (1, 2, 3):
        write_verl_dump(dump, step, agent_loop_entries(step, prompts=3, sessions=3, turns=4))
    expected = loaders.Log.merge_rates(loaders.open_log(dump))["merge_rate"].tolist()

    with serve_app(["--log", str(dump)]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/overview")
        assert _drawn_rates(page) == pytest.approx(expected, abs=1e-9)
        wait_idle(page)
        assert not page.get_by_text("Compute the state-merge rate").count()
        page.close()

    # Other content of the same size and time: rows read again would count other rates.
    path = dump / "1.jsonl"
    stat = path.stat()
    path.write_text(re.sub(r"You are in room \d\.", "You are in room 0.", path.read_text()))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert loaders.Log.merge_rates(loaders.open_log(dump))["merge_rate"].tolist() != expected

    with serve_app(["--log", str(dump)]) as url:  # the app started again
        page = browser.new_page(viewport=VIEWPORT)
        start = time.monotonic()
        page.goto(f"{url}/overview")
        assert _drawn_rates(page) == pytest.approx(expected, abs=1e-9)
        drawn = time.monotonic() - start
        page.screenshot(path=str(tmp_path / "overview.png"))
        page.close()
    assert drawn < 60  # generous on a shared machine; scripts/bench_overview.py times it


def test_a_dumps_groups_page_after_a_restart_comes_from_the_cache(browser, tmp_path,
                                                                  monkeypatch):
    """The Groups page of every training step: computed once, then after the app is started
    again shown from the caches on disk (nothing computed or written again)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("G2PO_CACHE", str(cache))  # the servers inherit it
    dump = tmp_path / "rollout_data"
    for step in (1, 2, 3):
        write_verl_dump(dump, step, agent_loop_entries(step, prompts=3, sessions=3, turns=4))
    shown = "text=/3 training steps/"

    with serve_app(["--log", str(dump)]) as url:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/groups?gscope=all")
        page.locator(shown).first.wait_for(timeout=180_000)
        wait_idle(page)
        page.close()
    written = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    assert any("triage" in p.parts for p in written), sorted(written)

    with serve_app(["--log", str(dump)]) as url:  # the app started again
        page = browser.new_page(viewport=VIEWPORT)
        start = time.monotonic()
        page.goto(f"{url}/groups?gscope=all")
        page.locator(shown).first.wait_for(timeout=180_000)
        page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=60_000)  # the table
        drawn = time.monotonic() - start
        wait_idle(page)
        page.close()
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()} == written
    assert drawn < 60  # generous on a shared machine; scripts/bench_overview.py times it
