"""``g2po seeds``: Table 1's summary from the validation runs of K seeds per estimator
(synthetic WebShop and ALFWorld validations), and K seeds of a local preset trained end to end."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml

from g2po.cli import main
from g2po.cli.seeds import parse_run_name, run_name
from g2po.evaluation import validation_dir
from loaders import RunWriter
from tests.g2po.trainers.fixtures import ENV, TINY, tiny_path  # noqa: F401

#: Per (estimator, seed), the WebShop scores of its three validation episodes (won = 1.0).
WEBSHOP = {("g2po", 0): [1.0, 0.5, 0.0], ("g2po", 1): [1.0, 1.0, 0.5],
           ("grpo", 0): [0.0, 0.25, 0.5], ("grpo", 1): [1.0, 0.0, 0.0]}


def _webshop_rows(scores: list[float]) -> pd.DataFrame:
    rows = []
    for i, score in enumerate(scores):
        for t in range(2):  # WebShop pays its score on the last step
            rows.append({"group_id": f"u{i}", "traj_id": "0", "t": t, "state_key": f"p{t}",
                         "action": "click[x]", "is_action_valid": True,
                         "episode_reward": 10.0 if score == 1.0 else 0.0,
                         "step_reward": score if t == 1 else 0.0, "env": "webshop:test",
                         "task": f"goal{i}"})
    return pd.DataFrame(rows)


def _write_runs(folder) -> None:
    for (estimator, seed), scores in WEBSHOP.items():
        run = folder / run_name(estimator, seed)
        RunWriter(run, {"estimator": estimator, "env": "webshop:train"})
        val = RunWriter(validation_dir(run), {"estimator": estimator, "env": "webshop:test",
                                              "success_reward": 10.0,
                                              "validation_of": str(run)})
        val.write_step(5, _webshop_rows([0.0, 0.0, 0.0]))  # an earlier validation
        val.write_step(10, _webshop_rows(scores))  # the last one is summarised


def test_summary_of_existing_runs(tmp_path, capsys):
    _write_runs(tmp_path)
    (tmp_path / "notes").mkdir()  # not a run: left alone
    assert main(["seeds", "--summary-only", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    # g2po: score means 0.5 and 0.8333 (std 0.2357), success 1/3 and 2/3 (std 0.2357)
    assert "| g2po | 66.7 ± 23.6 (SE 16.7) | 50.0 ± 23.6 (SE 16.7) | 2 |" in printed
    assert "| grpo | 29.2 ± 5.9 (SE 4.2) | 16.7 ± 23.6 (SE 16.7) | 2 |" in printed
    # one validation's noise: 3 episodes; success 1/3, 2/3 | 0, 1/3: SE 27.2, 27.2 | 0, 27.2
    assert "Each validation plays 3 episodes: one run's success carries a standard error of " \
        "20.4 points here (up to 28.9 at 50 %)." in printed
    assert (tmp_path / "summary.md").read_text().endswith(printed)
    results = pd.read_csv(tmp_path / "results.csv")
    assert sorted(zip(results["estimator"], results["seed"])) == sorted(WEBSHOP)
    assert (results["val_step"] == 10).all()
    summary = pd.read_csv(tmp_path / "summary.csv").set_index(["estimator", "metric"])
    assert summary.loc[("grpo", "val/score"), "mean"] == pytest.approx((0.25 + 1 / 3) / 2)
    assert summary.loc[("grpo", "val/score"), "n"] == 2
    assert summary.loc[("grpo", "val/score"), "se"] == pytest.approx(
        summary.loc[("grpo", "val/score"), "std"] / 2 ** 0.5)


def test_the_best_validation_is_summarised_with_its_bias(tmp_path, capsys):
    """--best takes each run's best validation by success (the first of equals) and says how
    far the best of N noisy validations lands above their value: the panel's standard error
    at the run's mean success times E[max of N standard normals] (1/√π for two)."""
    _write_runs(tmp_path)
    assert main(["seeds", "--summary-only", "--best", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    results = pd.read_csv(tmp_path / "results.csv").set_index(["estimator", "seed"])
    # grpo seed 0 never wins: its two validations tie at 0 and the first is kept
    assert results.loc[("grpo", 0), "val_step"] == 5
    assert results.loc[("g2po", 1), "val_step"] == 10
    assert (results["n_validations"] == 2).all()
    p = (0.0 + 1 / 3) / 2  # g2po seed 0: success 0 then 1/3 over 3 episodes each
    want = (p * (1 - p) / 3) ** 0.5 / math.pi ** 0.5
    assert results.loc[("g2po", 0), "best_bias"] == pytest.approx(want, rel=1e-4)
    assert "best of 2 validations: biased high by about" in printed
    assert (tmp_path / "summary.md").read_text().startswith(
        "# Validation over seeds (best validation of each run")


def test_nothing_to_summarise_and_bad_arguments_are_one_line(tmp_path, capsys):
    assert main(["seeds", "--summary-only", "--out", str(tmp_path)]) == 2
    assert "no run named ESTIMATOR-sSEED" in capsys.readouterr().err
    assert main(["seeds", "--out", str(tmp_path)]) == 2
    assert "--preset is required" in capsys.readouterr().err
    assert main(["seeds", "--preset", str(tmp_path / "nope.yaml"), "--out", str(tmp_path)]) == 2
    assert "no such preset" in capsys.readouterr().err
    preset = tmp_path / "p.yaml"
    preset.write_text("env: textworld:coin_collector-level2\n")
    assert main(["seeds", "--preset", str(preset), "--out", str(tmp_path / "o")]) == 2
    assert "val_tasks = 0" in capsys.readouterr().err


def test_run_names_round_trip():
    assert parse_run_name(run_name("g2po_ep", 7)) == ("g2po_ep", 7)
    assert parse_run_name("g2po-s7-val") is None


@pytest.mark.verl
def test_k_seeds_of_a_local_preset_end_to_end(tiny_path, tmp_path, capsys):  # noqa: F811
    preset = tmp_path / "preset.yaml"
    preset.write_text(yaml.safe_dump({
        "env": ENV, "model": TINY, "task_pool": 2, "tasks_per_step": 2, "rollouts_per_task": 3,
        "max_steps": 3, "max_new_tokens": 16, "micro_batch_size": 8, "lr": 1e-2,
        "total_steps": 1, "progress": False, "threads": 1, "val_tasks": 2}))
    out = tmp_path / "seeds"
    assert main(["seeds", "--preset", str(preset), "--seeds", "2", "--estimators",
                 "g2po,grpo", "--out", str(out), "val_rollouts=2"]) == 0
    results = pd.read_csv(out / "results.csv")
    assert sorted(zip(results["estimator"], results["seed"])) == [
        ("g2po", 0), ("g2po", 1), ("grpo", 0), ("grpo", 1)]
    assert (results["val/episodes"] == 4).all()  # 2 tasks x val_rollouts=2, the override
    assert (results["env"] == ENV).all() and (results["val_step"] == 1).all()
    printed = capsys.readouterr().out
    assert "| g2po |" in printed and "| grpo |" in printed
