"""scripts/bench_triage_defects.py in a small mode: it plants every kind of defect, ranks them
first, and reports precision@K and each alarm's rate on the healthy groups, with and without
a run-wide step limit."""

from __future__ import annotations

import re

from tests.scripts import load_script


def test_a_small_run_ranks_the_planted_groups_first_and_reports_the_rates(tmp_path, capsys):
    bench = load_script("bench_triage_defects")
    assert bench.main(["--healthy", "24", "--per-kind", "1", "--seed", "0", "--step-limit",
                       "--keep", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    runs = out.split("\n== ")[1:]
    assert len(runs) == 2 and "step limit of 5" in runs[1]
    for run in runs:
        assert "30 groups, 6 planted" in run
        precision = float(re.search(r"precision@6 of the default order: ([0-9.]+)", run)[1])
        assert precision >= 0.9  # the behaviour issue 27 asks for, on this fixed seed
        rates = dict(re.findall(r"^  (\w+) +([0-9.]+)%", run, flags=re.M))
        assert set(rates) == {"no_signal", "collapsed", "penalty_amplification", "all_success",
                              "aliased", "hub", "truncation", "no_merging"}
        assert all(float(r) <= 10 for r in rates.values())
        ranks = re.findall(r"^ +(\d+) \((\w+)\)  (.+)$", run, flags=re.M)
        assert {kind for _, kind, _ in ranks} == set(bench.KINDS)
        assert all(reason for _, _, reason in ranks)  # each planted group says why
    # the step limit is classed run-wide, said once and not counted against the groups
    assert "classed run-wide (said once, not a group's alarm): none" in runs[0]
    assert re.search(r"classed run-wide \(said once, not a group's alarm\): truncation "
                     r"\(raw: on \d+ of 30 groups\)", runs[1])
    assert runs[1].count("run-wide finding: Truncation on") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run0.parquet", "run1.parquet"]
