"""scripts/bench_whatif.py at a tiny scale: what it measures on the 30-state group and on a
run."""

from __future__ import annotations

from tests.scripts import load_script


def test_a_tiny_run_and_the_thirty_state_group_are_measured(tmp_path, capsys):
    bench = load_script("bench_whatif")
    assert bench.main(["--steps", "3", "--tasks", "2", "--rollouts", "4", "--max-len", "10",
                       "--obs-chars", "80", "--repeats", "1", "--runs", "1",
                       "--key", bench.RUN_KEYS[0], "--dir", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "one group: 189 step rows, 30 states" in out
    for name in (*bench.GROUP_KEYS, "merge_nodes(0, 1)", "split_node"):
        line = next(line for line in out.splitlines() if line.strip().startswith(name))
        assert " sign flips, nodes 30 → " in line and "(0 steps changed" not in line
    assert "6 groups, 3 training steps" in out and "#1 " in out
