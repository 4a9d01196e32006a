"""scripts/bench_recorded.py in a small mode: on a second-generator run the recorded-credit
audit ranks the broken records first and fires on nothing else, and the unusual score's
figures are printed."""

from __future__ import annotations

import re

from tests.scripts import load_script


def test_one_run_reports_the_figures(capsys):
    bench = load_script("bench_recorded")
    assert bench.main(["--runs", "1", "--healthy-runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "run 0: dag/binary10/N=8/conv 0%/g2po/run, 96 groups" in out
    assert re.search(r"recorded: precision@5 1\.00, named 5/5; fires on 0 of 91 other groups",
                     out)
    precision = float(re.search(r"unusual: precision@12 ([0-9.]+)", out)[1])
    assert precision >= 0.5
    fired, groups = map(int, re.search(r"nothing planted .*: fires on (\d+) of (\d+) groups",
                                       out).groups())
    assert groups == 160 and fired <= 16  # at most 10 % of healthy groups
