"""scripts/study.py: the report of the miniature study, on run directories written here."""

from __future__ import annotations

import json

import pytest

from g2po.synthetic import synthetic_steps
from loaders import RunWriter
from tests.scripts import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("study")


def test_commands_are_plain_g2po_train(study, tmp_path):
    cmd = study.command(tmp_path / "g2po_p0-s1", "g2po_p0", 1, study.SETTINGS)
    assert cmd[1:5] == ["-m", "g2po", "train", "--backend"]
    assert ["--estimator", "g2po"] == cmd[cmd.index("--estimator"):][:2]
    assert "--total-steps" in cmd and cmd[-1] == "invalid_penalty=0.0"


def test_report_from_run_directories(study, tmp_path):
    runs = tmp_path / "runs"
    for est in ("grpo", "g2po"):
        for seed in (0, 1):
            writer = RunWriter(runs / f"{est}-s{seed}", {"estimator": est})
            for step in range(1, 13):
                writer.write_step(step, synthetic_steps(300, seed=step * 7 + seed),
                                  {"time/rollout_s": 1.0, "time/update_s": 2.0,
                                   "time/advantages_s": 0.003})
    for arm in ("init", "grpo", "g2po"):
        for seed in (0, 1):
            (runs / f"{arm}-s{seed}").mkdir(parents=True, exist_ok=True)
            (runs / f"{arm}-s{seed}" / "heldout.json").write_text(json.dumps(
                {"seed": seed, "success": 0.25 + 0.25 * seed + 0.1 * (arm == "g2po"),
                 "invalid_rate": 0.1, "length_won": 3.0}))
    text = study.report(runs, tmp_path / "docs", ["grpo", "g2po"], [0, 1])
    for arm in ("init", "grpo", "g2po"):
        assert f"| {arm} | 2 |" in text  # every arm's row, over both seeds
    assert (tmp_path / "docs" / "study" / "summary.md").read_text().strip()
    # flagged: a defect of the group's own (n_alarms), not one said once for the run
    import io
    import subprocess
    import sys

    import pandas as pd

    views = pd.read_csv(tmp_path / "docs" / "study" / "triage.csv").set_index(["arm", "seed"])
    csv = subprocess.run([sys.executable, "-m", "g2po", "triage", str(runs / "grpo-s0"),
                          "--format", "csv", "--estimator", "grpo", "--param",
                          f"penalty={study.ARMS['grpo'][1]}"], capture_output=True, text=True,
                         check=True).stdout
    groups = pd.read_csv(io.StringIO(csv))
    assert views.loc[("grpo", 0), "flagged"] == pytest.approx((groups["n_alarms"] > 0).mean())
