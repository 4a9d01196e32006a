"""``g2po validate``: the outcome rule it used, success and truncation counted by it."""

from __future__ import annotations

import json

import pandas as pd

from g2po.cli import main


def write_cut_log(path):
    """Two training steps without ``done`` or ``won``, successes rewarded 1.0: at each, four
    failures run to 6 steps (cut at the step limit), a failure and three successes end
    sooner."""
    rows = []
    for step in (1, 2):
        spec = [(6, 0.0)] * 4 + [(2, 0.0), (3, 1.0), (4, 1.0), (5, 1.0)]
        for i, (length, reward) in enumerate(spec):
            for t in range(length):
                rows.append({"train_step": step, "group_id": f"g{i % 2}", "traj_id": f"r{i}",
                             "t": t, "state_key": f"s{t}", "action": "go",
                             "episode_reward": reward, "is_action_valid": True})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_validate_prints_its_rule_and_counts_success_by_it(tmp_path, capsys):
    path = write_cut_log(tmp_path / "cut.csv")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "outcome rule    reward = success reward 10 (from the default" in out
    assert "successes       0 of 16 trajectories (0.0%)" in out
    assert "truncated       0" in out
    assert main(["validate", str(path), "--success-reward", "1"]) == 0
    out = capsys.readouterr().out
    assert "outcome rule    reward = success reward 1 (from the default (the log states " \
           "none), then success_reward=1.0)" in out
    assert "successes       6 of 16 trajectories (37.5%)" in out
    # 8 of the 10 failures end at 6 steps, the longest: offered as a step limit
    assert "truncation?     8 of 10 failed trajectories (of 16) end at the same, largest " \
           "length 6" in out and "Add --truncate-at 6" in out
    assert main(["validate", str(path), "--success-reward", "1", "--truncate-at", "6"]) == 0
    out = capsys.readouterr().out
    assert "truncated       8" in out and "truncation?" not in out
    assert "length ≥ 6 without success ⇒ truncated" in out


def test_validate_quick_and_json_count_the_same(tmp_path, capsys):
    path = write_cut_log(tmp_path / "cut.csv")
    found = []
    for quick in ([], ["--quick"]):
        assert main(["validate", str(path), "--json", "--success-min", "0.5", *quick]) == 0
        found.append(json.loads(capsys.readouterr().out))
    for result in found:
        assert result["rule"] == "reward ≥ threshold 0.5"
        assert result["n_success"] == 6 and result["n_truncated"] == 0
        assert result["truncation"]["length"] == 6 and result["truncation"]["n_cut"] == 8
