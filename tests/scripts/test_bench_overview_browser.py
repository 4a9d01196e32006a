"""scripts/bench_overview.py's floor pages draw in Chromium: the text and the overview's six
charts alone (what its browser figures are compared with)."""

from __future__ import annotations

from tests.scripts import load_script


def test_the_floor_pages_are_drawn():
    bench = load_script("bench_overview")
    floors = bench.floor_times()  # each waits for its page's own text or chart title
    assert list(floors) == list(bench.FLOOR_PAGES)
    assert all(0 < seconds < 120 for seconds in floors.values())
