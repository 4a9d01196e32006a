"""``g2po audit`` run as a user runs it: the library's findings, worst first, as text, CSV or
JSON; the run's estimator from its manifest; a clear error for a log without a record."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.recorded import GROUP_COLUMNS, audit_recorded
from g2po.cli import main
from g2po.estimators import compute_advantages
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders import RunWriter
from tests.g2po.analysis.groups import random_walks


def write(path, estimator: str = "gigpo", broken: bool = True, **params):
    """A two-step run that records ``estimator``'s advantages, zeroed on one group."""
    writer = RunWriter(path, {"estimator": estimator, "config": {"success_reward": 10.0}})
    for step in (1, 2):
        steps = random_walks(groups=4, rollouts=4, length=5, seed=step, invalid_rate=0.1)
        steps["advantage"] = compute_advantages(steps, estimator, **params)["adv"]
        if broken and step == 2:
            steps.loc[(steps["group_id"] == "g1") & (steps["t"] < 4), "advantage"] = 0.0
        writer.write_step(step, steps)
    return path


def test_csv_is_the_librarys_findings_worst_first(tmp_path, capsys):
    run = write(tmp_path / "run")
    assert main(["audit", str(run), "--format", "csv", "--no-fit"]) == 0
    out = capsys.readouterr()
    got = pd.read_csv(io.StringIO(out.out))
    assert list(got.columns) == GROUP_COLUMNS
    assert got[["train_step", "group_id", "kind"]].values.tolist() == [[2, "g1", "zeroed"]]
    steps = pd.concat([pd.read_parquet(p) for p in sorted((run / "rollouts").iterdir())])
    want = audit_recorded(steps, rule=OutcomeRule(), params=G2POParams(), estimator="gigpo",
                          fit=False)
    assert got["severity"].tolist() == pytest.approx(want.findings["severity"].tolist())
    assert "recomputed with gigpo (the run's manifest)" in out.err
    assert "run: recorded credit differs from gigpo's recomputation on 1 of 8 groups" in out.err


def test_the_terminal_table_and_the_steps(tmp_path, capsys):
    run = write(tmp_path / "run")
    assert main(["audit", str(run)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("1 of 8 group(s) with findings")
    assert "zeroed" in text and "recorded as 0 where gigpo gives credit" in text
    assert main(["audit", str(run), "--steps", "--format", "json", "--no-fit"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {r["group_id"] for r in rows} == {"g1"}
    assert {r["cause"] for r in rows} == {"zeroed"} and all(r["recorded"] == 0 for r in rows)
    assert main(["audit", str(run), "--all", "--format", "json", "--no-fit"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 8


def test_the_estimator_and_parameters_of_the_run(tmp_path, capsys):
    run = write(tmp_path / "run", estimator="g2po", broken=False, gamma=0.9)
    assert main(["audit", str(run), "--format", "csv", "--no-fit"]) == 0
    assert len(pd.read_csv(io.StringIO(capsys.readouterr().out))) >= 4  # γ 0.95 is not it
    assert main(["audit", str(run), "-p", "gamma=0.9", "--format", "csv", "--no-fit"]) == 0
    assert pd.read_csv(io.StringIO(capsys.readouterr().out)).empty
    assert main(["audit", str(run), "-e", "g2po", "-p", "omega=0.8"]) == 2
    assert "takes no parameter(s) 'omega'" in capsys.readouterr().err


def test_a_log_without_a_recorded_advantage_says_what_was_looked_for(tmp_path, capsys):
    path = tmp_path / "steps.csv"
    random_walks(groups=2, rollouts=2, length=2).to_csv(path, index=False)
    assert main(["audit", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"g2po audit: error: {path}: no recorded advantage")
    assert "'advantage' or 'advantages'" in err and "verl dump" in err
    assert "--map advantage=COLUMN" in err
    mapped = tmp_path / "mapped.csv"
    steps = random_walks(groups=2, rollouts=2, length=2)
    steps.assign(credit=compute_advantages(steps, "g2po")["adv"].astype(np.float32)) \
        .to_csv(mapped, index=False)
    assert main(["audit", str(mapped), "--map", "advantage=credit", "--format", "csv"]) == 0
    assert pd.read_csv(io.StringIO(capsys.readouterr().out)).empty
