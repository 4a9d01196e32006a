"""Starting a run: print the configuration anywhere; refuse clearly where verl cannot start."""

from __future__ import annotations

import io
import os

import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from g2po.trainers.verl_backend import VerlConfigError, VerlRuntimeError, launch, run
from g2po.trainers.verl_backend.launch import prepare, runtime_problems


def test_print_config_composes_validates_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert run(["algorithm.g2po.w=0.8", "g2po_env.max_steps=15"], print_config=True,
               out=out) == 0
    printed = OmegaConf.create(out.getvalue())
    assert printed.algorithm.adv_estimator == "g2po" and printed.algorithm.g2po.w == 0.8
    assert printed.g2po_env.max_steps == 15
    assert printed.algorithm.g2po.success_reward == 10.0  # interpolations resolved
    assert os.listdir(tmp_path) == []


def test_a_bad_configuration_stops_before_anything_starts():
    with pytest.raises(VerlConfigError, match="trainer_mode=g2po"):
        run(["trainer.v1.trainer_mode=sync"], print_config=True)


def test_a_machine_without_gpus_gets_a_clear_refusal(default_config, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(launch.importlib.util, "find_spec", lambda name: None)
    found = runtime_problems(default_config)
    assert any("no CUDA GPU" in p and "--backend local" in p for p in found)
    assert any("needs the `vllm` package" in p for p in found)
    with pytest.raises(VerlRuntimeError, match="cannot start verl's trainer here"):
        run([])


def test_gpu_count_and_engine_are_checked(default_config, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(launch.importlib.util, "find_spec", lambda name: object())
    assert runtime_problems(default_config) == []
    eight = OmegaConf.merge(default_config, {"trainer": {"n_gpus_per_node": 8}})
    assert runtime_problems(eight) == ["trainer.n_gpus_per_node=8 but this machine shows 1 GPU(s)"]
    other = OmegaConf.merge(default_config, {"actor_rollout_ref": {"rollout": {"name": "hf"}}})
    assert "is not one of vllm, sglang, trtllm" in runtime_problems(other)[0]
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # a cluster checks its own nodes
    assert runtime_problems(eight) == []


def test_prepare_writes_the_task_lists_and_makes_paths_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from g2po.trainers.verl_backend import checked_config

    cfg = checked_config(["g2po_env.name=textworld:coin_collector-level2",
                          "g2po_env.train_tasks=2", "g2po_env.val_tasks=1",
                          "g2po_log.run_dir=runs/demo"])
    prepare(cfg)
    run_dir = tmp_path / "runs" / "demo"
    assert cfg.g2po_log.run_dir == str(run_dir)
    assert cfg.data.train_files == str(run_dir / "tasks" / "train.parquet")
    train = pd.read_parquet(cfg.data.train_files)
    val = pd.read_parquet(cfg.data.val_files)
    assert len(train) == 2 and len(val) == 1
    assert set(train["extra_info"].map(lambda e: e["task_id"])).isdisjoint(
        val["extra_info"].map(lambda e: e["task_id"]))


def test_given_data_files_are_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from g2po.trainers.verl_backend import checked_config

    cfg = checked_config(["data.train_files=/data/train.parquet",
                          "data.val_files=/data/val.parquet"])
    prepare(cfg)
    assert cfg.data.train_files == "/data/train.parquet"
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.parquet"))


def test_an_existing_run_is_continued_only_from_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from g2po.trainers.verl_backend import checked_config
    from g2po.trainers.verl_backend.launch import resume_checkpoint

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run.json").write_text('{"format": "g2po-run", "version": 1}')
    given = ["g2po_log.run_dir=out", "trainer.default_local_dir=out/checkpoints",
             "data.train_files=/d/train.parquet", "data.val_files=/d/val.parquet"]
    with pytest.raises(VerlConfigError, match="already holds a run"):
        prepare(checked_config(given))
    with pytest.raises(VerlConfigError, match="already holds a run"):
        prepare(checked_config([*given, "trainer.resume_mode=disable"]))
    # verl's own checkpoint layout: a tracker file naming global_step_N
    ckpt = tmp_path / "out" / "checkpoints"
    (ckpt / "global_step_3").mkdir(parents=True)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("3")
    cfg = prepare(checked_config(given))
    assert resume_checkpoint(cfg) == str(ckpt / "global_step_3")
    assert cfg.trainer.default_local_dir == str(ckpt)


def test_cpu_vllm_checks_the_model_before_anything_starts(tmp_path):
    """The default tiny model's heads (64 / 4 = 16) are no size vLLM's CPU attention takes: the
    run is refused up front, naming the fix, instead of failing inside vLLM's engine."""
    import json

    from g2po.trainers.verl_backend import checked_config, overrides_from_flags

    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 64,
                                                      "num_attention_heads": 4}))
    config = checked_config(overrides_from_flags({"device": "cpu", "rollout": "vllm"}) +
                            [f"actor_rollout_ref.model.path={tmp_path}"])
    assert any("heads of size 16" in p for p in runtime_problems(config))
    hf = checked_config(overrides_from_flags({"device": "cpu"}) +
                        [f"actor_rollout_ref.model.path={tmp_path}"])
    assert runtime_problems(hf) == []


def test_an_estimator_the_environment_cannot_feed_is_refused_before_the_run(tmp_path,
                                                                            monkeypatch):
    """MiGPO needs milestones: on an environment that does not report them, ``prepare``
    refuses it (verl would otherwise stop at its first advantage step)."""
    from g2po.envs import base
    from g2po.errors import G2POError
    from g2po.trainers.verl_backend import checked_config
    from tests.g2po.envs.corridor import CorridorFamily

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(base._REGISTRY, "corridor", (lambda details, **_: CorridorFamily(), ""))
    given = ["g2po_env.name=corridor:test", "algorithm.adv_estimator=migpo",
             "data.train_files=/d/train.parquet", "data.val_files=/d/val.parquet"]
    with pytest.raises(G2POError, match="'migpo' needs the step column.*milestone_achieved"):
        prepare(checked_config(given))
