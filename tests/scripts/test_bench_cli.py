"""scripts/bench_cli.py in its smallest mode: every figure it promises is printed (their values
depend on the machine; the start-up itself is tested in tests/g2po/cli/test_startup.py)."""

from __future__ import annotations

import re

from tests.scripts import load_script

SECONDS = r"\d+\.\d{3} s wall, +\d+\.\d{3} s CPU, load +\d+\.\d"


def test_the_smallest_run_prints_every_figure(tmp_path, capsys):
    bench = load_script("bench_cli")
    assert bench.main(["--runs", "1", "--steps", "2", "--tasks", "2", "--rollouts", "4",
                       "--max-len", "10", "--obs-chars", "80", "--dir",
                       str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    commands = bench.commands()
    assert {"advantages", "triage", "train"} <= set(commands)
    for words in ["", *(f"{name} " for name in commands)]:
        assert re.search(rf"^  g2po {words}--help +{SECONDS}$", out, re.M), words
    assert re.search(r"imports of g2po --help: \d+ modules, \d+\.\d{3} s .*heavy.*: none of "
                     r"pandas/numpy/torch/pyarrow$", out, re.M)
    assert re.search(r"g2po triage of [\d,]+ step rows, 4 groups; filling the cache", out)
    assert re.search(rf"^  g2po triage RUN \(cache\) +{SECONDS} +\(target <= 1 s\)$", out, re.M)
    assert re.search(r"imports of the cached triage: \d+ modules, .* pandas \d+\.\d{3} s", out)
    assert (tmp_path / "run" / "run.json").is_file()  # a given --dir is written and kept
