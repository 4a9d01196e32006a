"""Rollout logging in the project's run-directory format, read back by the loaders."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from g2po import compute_advantages
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.synthetic import synthetic_steps
from g2po.trainers.verl_backend.data import task_rows
from g2po.trainers.verl_backend.rollout_log import RolloutLog, run_manifest, scalar_metrics
from loaders import open_run
from loaders.errors import LoaderError
from loaders.log import manifest_params, manifest_rule


def test_manifest_records_what_trained_the_run(default_config):
    manifest = run_manifest(default_config)
    assert manifest["backend"] == "verl" and manifest["estimator"] == "g2po"
    assert manifest["env"] == "textworld:coin_collector-level5"
    assert manifest["model"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert manifest["success_reward"] == 10.0 and manifest["rollouts_per_task"] == 8
    assert manifest["state_key"] == "exact"
    # The exact keyword arguments of the library call: the app recomputes the same advantages.
    steps = synthetic_steps(200, rollouts=4, max_len=8, seed=2)
    assert compute_advantages(steps, manifest["estimator"], state_key=manifest["state_key"],
                              **manifest["estimator_params"]).equals(compute_advantages(steps))
    assert manifest["config"]["algorithm"]["g2po"]["success_reward"] == 10.0
    json.dumps(manifest)
    # the house's values, whole, as the loaders read them back
    assert manifest["params"] == G2POParams().as_dict()
    assert manifest_rule(manifest) == OutcomeRule() and manifest_params(manifest) == G2POParams()


def test_a_run_reopens_with_the_rule_and_parameters_it_trained_with(tmp_path, default_config):
    """A verl run with a graded terminal, a threshold, a step limit and its own γ, w and state
    key opens in the loaders with exactly those, and records its validation panel: the rows of
    data.val_files, in file order."""
    val = tmp_path / "val.parquet"
    task_rows("textworld:coin_collector-level2", ["b", "a", "c"], "val").to_parquet(val)
    config = OmegaConf.merge(default_config, {
        "algorithm": {"g2po": {"terminal": "reward", "success_threshold": 5.0, "gamma": 0.9,
                               "w": 0.8, "state_key": "normalized", "truncate_at": 4}},
        "data": {"val_files": str(val)}})
    RolloutLog(tmp_path / "run", run_manifest(config)).write(1, synthetic_steps(50), {})
    run = open_run(tmp_path / "run")
    assert run.rule() == OutcomeRule(success_threshold=5.0, terminal="reward", truncate_at=4)
    assert manifest_params(run.manifest) == G2POParams(gamma=0.9, w=0.8,
                                                       state_key="normalized")
    assert run.manifest["validation_panel"] == {
        "env": "textworld:coin_collector-level2", "tasks": ["b", "a", "c"], "rollouts": 1,
        "episodes": 3}


def test_scalar_metrics_keeps_finite_numbers_only():
    metrics = {"a": 1, "b": np.float32(0.5), "c": torch.tensor(2.0), "d": [1, 2], "e": "x",
               "f": float("nan"), "g": True, "h": np.array([3.0]), "i": torch.ones(2)}
    assert scalar_metrics(metrics) == {"a": 1.0, "b": 0.5, "c": 2.0, "g": 1.0, "h": 3.0}


def test_written_steps_open_in_the_loaders(tmp_path, default_config):
    steps = synthetic_steps(300, rollouts=4, max_len=8, seed=4)
    log = RolloutLog(tmp_path / "run", run_manifest(default_config))
    log.write(1, steps, {"g2po/merge_rate": np.float64(0.25), "actor/lr": torch.tensor(1e-6)})
    log.write(2, steps, {"g2po/merge_rate": 0.5})
    run = open_run(tmp_path / "run")
    assert run.train_steps() == [1, 2]
    assert run.manifest["estimator"] == "g2po"
    loaded = run.load_step(2).sort_values(["group_id", "traj_id", "t"]).reset_index(drop=True)
    want = steps.sort_values(["group_id", "traj_id", "t"]).reset_index(drop=True)
    for column in steps.columns:
        assert loaded[column].tolist() == want[column].tolist()
    metrics = run.metrics()
    assert metrics["g2po/merge_rate"].tolist() == [0.25, 0.5]
    assert metrics["actor/lr"].iloc[0] == pytest.approx(1e-6)


def test_a_finished_run_is_never_overwritten_unless_resumed(tmp_path, default_config):
    steps = synthetic_steps(100, rollouts=2, max_len=5, seed=1)
    log = RolloutLog(tmp_path / "run", run_manifest(default_config))
    for step in (1, 2, 3):
        log.write(step, steps, {"loss": float(step)})
    with pytest.raises(LoaderError, match="already holds a run"):
        RolloutLog(tmp_path / "run", run_manifest(default_config))
    # verl resumed from its checkpoint of step 2: step 3 is trained, and logged, again.
    resumed = RolloutLog(tmp_path / "run", run_manifest(default_config), resume_from=2)
    run = open_run(tmp_path / "run")
    assert run.train_steps() == [1, 2] and run.metrics()["loss"].tolist() == [1.0, 2.0]
    resumed.write(3, steps.assign(episode_reward=0.0), {"loss": 30.0})
    run = open_run(tmp_path / "run")
    assert run.train_steps() == [1, 2, 3]
    assert run.metrics()["loss"].tolist() == [1.0, 2.0, 30.0]
    assert run.load_step(3)["episode_reward"].eq(0.0).all()
