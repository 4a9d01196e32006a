"""scripts/bench_triage.py at a tiny scale: what it measures, and that the second opening is
served by the cache."""

from __future__ import annotations

from tests.scripts import load_script


def test_a_tiny_run_is_measured_and_reopened_from_the_cache(tmp_path, capsys):
    bench = load_script("bench_triage")
    assert bench.main(["--steps", "3", "--tasks", "2", "--rollouts", "4", "--max-len", "10",
                       "--obs-chars", "80", "--repeats", "1", "--dir",
                       str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "one training step:" in out and " 2 groups" in out
    assert "whole run:" in out and "6 groups, 3 training steps" in out
    assert "opened again (cache)" in out
    step = bench.measure("step", tmp_path / "run", tmp_path / "unused", 2)
    assert step["groups"] == 2 and len(step["in_memory"]) == 2
    first = bench.measure("run", tmp_path / "run", tmp_path / "cache", 1)
    again = bench.measure("run", tmp_path / "run", tmp_path / "cache", 1)
    assert first["from_cache_at_start"] == 0 and again["from_cache_at_start"] == 3
    assert first["rows"] == again["rows"] > 0
