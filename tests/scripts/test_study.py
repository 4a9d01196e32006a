"""scripts/study.py: the report of the miniature study, on run directories written here."""

from __future__ import annotations

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
    summary = study.report(runs, tmp_path / "docs", ["grpo", "g2po"], [0, 1])
    assert summary["estimator"].tolist() == ["grpo", "g2po"]
    assert (summary["seeds"] == 2).all() and (summary["updates"] == 12).all()
    out = tmp_path / "docs" / "study"
    assert (out / "success.png").stat().st_size > 10_000
    table = (out / "summary.md").read_text()
    assert table.count("\n") == 4 and "| g2po |" in table
    results = (out / "results.csv").read_text().splitlines()
    assert len(results) == 1 + 2 * 2 * 12
