"""scripts/bench_overview.py at a tiny scale: it measures the pages' data, and the restart
reads the caches the first measurement left."""

from __future__ import annotations

import loaders
from g2po.analysis.triage import triage_log
from tests.scripts import load_script


def test_the_overview_and_groups_measures_read_what_the_pages_read(tmp_path, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "cache"))
    bench = load_script("bench_overview")
    dump = tmp_path / "dump"
    lines, _ = load_script("bench_verl_dump").generate_dump(dump, 3, 2, 3, 6)
    first = bench.measure("overview", dump)
    assert first["rows"] == lines and first["wall_s"] > 0
    rates = loaders.Log.merge_rates(loaders.open_log(dump))["merge_rate"]
    assert abs(first["merge_rate_mean"] - rates.mean()) < 1e-12 and 0 < rates.mean() < 1
    groups = bench.measure("groups", dump)
    assert groups["rows"] == lines and groups["groups"] == 3 * 2
    assert len(triage_log(loaders.open_log(dump))) == groups["groups"]
    line = bench._line("small", "overview", "restart", first)
    assert "target <= 3 s" in line and f"{lines:,} rows" in line
