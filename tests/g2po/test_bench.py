"""The benchmark runs every registered estimator and reports its figures (no timing asserted)."""

from __future__ import annotations

from g2po import list_estimators
from g2po.bench import run_benchmark


def test_reports_every_estimator(capsys):
    results = run_benchmark(sizes=[600], repeats=1)
    assert [r["estimator"] for r in results] == list_estimators()
    assert all(r["rows"] > 0 and r["best_s"] > 0 and r["estimator_s"] > 0 for r in results)
    printed = capsys.readouterr().out
    for name in list_estimators():
        assert name in printed
