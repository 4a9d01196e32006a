"""The example scripts compose and validate as written (their GPU part runs on GPU machines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples" / "verl"


@pytest.fixture(scope="module")
def paper_config(tmp_path_factory):
    """script -> (its printed configuration, the folder it ran in), printed once per module
    (each print is a fresh interpreter composing verl's configuration, ~20 s)."""
    printed = {}

    def get(script: str):
        if script not in printed:
            cwd = tmp_path_factory.mktemp("paper")
            printed[script] = print_config(script, cwd), cwd
        return printed[script]

    return get


def print_config(script: str, tmp_path: Path, **env: str):
    bin_dir = str(Path(sys.executable).parent)  # the g2po command of this environment
    result = subprocess.run(
        ["bash", str(EXAMPLES / script)], cwd=tmp_path, capture_output=True, text=True,
        timeout=600, env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"],
                          "G2PO_PRINT_CONFIG": "1", **env})
    assert result.returncode == 0, result.stderr[-3000:]
    return OmegaConf.create(result.stdout)


@pytest.mark.parametrize("script, env_name, max_steps, val_name", [
    ("alfworld_g2po_qwen2.5_1.5b.sh", "alfworld:train", 50, "alfworld:valid_seen"),
    ("webshop_g2po_qwen2.5_1.5b.sh", "webshop:train", 15, "webshop:test"),
])
def test_paper_scripts_have_the_papers_settings(paper_config, script, env_name, max_steps,
                                                val_name):
    cfg, tmp_path = paper_config(script)
    assert cfg.g2po_env.name == env_name and cfg.g2po_env.val_name == val_name
    assert cfg.g2po_env.max_steps == max_steps and cfg.g2po_env.history_length == 2
    assert cfg.actor_rollout_ref.model.path == "Qwen/Qwen2.5-1.5B-Instruct"
    assert cfg.actor_rollout_ref.rollout.n == 8
    actor = cfg.actor_rollout_ref.actor
    assert actor.optim.lr == 1e-6 and actor.use_kl_loss and actor.kl_loss_coef == 0.01
    assert actor.kl_loss_type == "low_var_kl"
    g2po = cfg.algorithm.g2po
    assert (cfg.algorithm.adv_estimator, g2po.penalty, g2po.gamma) == ("g2po", 0.1, 0.95)
    assert cfg.trainer.v1.trainer_mode == "g2po"
    assert cfg.g2po_log.run_dir.startswith(str(tmp_path))
    assert not any(tmp_path.iterdir())  # printing the configuration writes nothing


#: Each value the authors' scripts set (Nala-YN/G2PO examples/g2po_trainer/run_*.sh and their
#: ppo_trainer.yaml), as our key and value; docs/verl.md has the table with the reasons.
COMMON = {
    "data.train_batch_size": 16, "data.max_response_length": 512,
    "data.filter_overlong_prompts": True, "data.truncation": "error",
    "actor_rollout_ref.rollout.n": 8, "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.actor.use_kl_loss": True, "actor_rollout_ref.actor.kl_loss_coef": 0.01,
    "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
    "actor_rollout_ref.actor.entropy_coeff": 0.001, "actor_rollout_ref.actor.clip_ratio": 0.2,
    "actor_rollout_ref.actor.loss_agg_mode": "token-mean", "actor_rollout_ref.actor.ppo_epochs": 1,
    "actor_rollout_ref.actor.optim.weight_decay": 0.01, "actor_rollout_ref.actor.grad_clip": 1.0,
    "actor_rollout_ref.model.use_remove_padding": True,
    "actor_rollout_ref.model.enable_gradient_checkpointing": True,
    "actor_rollout_ref.actor.fsdp_config.param_offload": False,
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": False,
    "actor_rollout_ref.ref.fsdp_config.param_offload": True,
    "actor_rollout_ref.rollout.tensor_model_parallel_size": 2,
    "actor_rollout_ref.rollout.gpu_memory_utilization": 0.6,
    "actor_rollout_ref.rollout.enable_chunked_prefill": False,
    "actor_rollout_ref.rollout.enforce_eager": False,
    "actor_rollout_ref.rollout.free_cache_engine": False,
    "actor_rollout_ref.rollout.temperature": 1.0,
    "actor_rollout_ref.rollout.val_kwargs.temperature": 0.4,
    "actor_rollout_ref.rollout.val_kwargs.do_sample": True,
    "algorithm.use_kl_in_reward": False, "algorithm.adv_estimator": "g2po",
    "algorithm.g2po.gamma": 0.95, "algorithm.g2po.w": 1.0, "algorithm.g2po.penalty": 0.1,
    "g2po_env.history_length": 2, "g2po_env.seed": 0, "g2po_env.success_reward": 10.0,
    "trainer.n_gpus_per_node": 8, "trainer.nnodes": 1, "trainer.critic_warmup": 0,
    "trainer.save_freq": -1, "trainer.test_freq": 5, "trainer.val_before_train": False,
}
PAPER = {
    "alfworld_g2po_qwen2.5_1.5b.sh": {
        **COMMON, "data.max_prompt_length": 2048, "data.val_batch_size": 128,
        "g2po_env.val_tasks": 128, "g2po_env.max_steps": 50,
        "g2po_env.name": "alfworld:train", "g2po_env.val_name": "alfworld:valid_seen",
        "g2po_env.env_kwargs.validity": "format",
        "g2po_env.env_kwargs.anchor": "observation_admissible",
        "algorithm.g2po.mode": "mean_std_norm",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 32,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 32},
    "webshop_g2po_qwen2.5_1.5b.sh": {
        **COMMON, "data.max_prompt_length": 4096, "data.val_batch_size": 128,
        "g2po_env.val_tasks": 256, "g2po_env.max_steps": 15,
        "g2po_env.name": "webshop:train", "g2po_env.val_name": "webshop:test",
        "algorithm.g2po.mode": "mean_norm",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 16,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 16},
}
#: Their ppo_mini_batch_size, in step rows (their rollout.n is 1: env.rollout.n makes groups).
THEIR_MINI_BATCH_ROWS = {"alfworld_g2po_qwen2.5_1.5b.sh": 256, "webshop_g2po_qwen2.5_1.5b.sh": 64}


@pytest.mark.parametrize("script", sorted(PAPER))
def test_paper_scripts_compose_every_value_of_the_authors(paper_config, script):
    from verl.utils.config import validate_config

    cfg, _ = paper_config(script)
    wrong = {key: (OmegaConf.select(cfg, key, default="<missing>"), want)
             for key, want in PAPER[script].items()
             if OmegaConf.select(cfg, key, default="<missing>") != want}
    assert not wrong, wrong
    # 100 training steps: their total_epochs=100 over a 16-row dataset; ours 1600 tasks once
    steps = cfg.g2po_env.train_tasks // cfg.data.train_batch_size * cfg.trainer.total_epochs
    assert steps == 100 and cfg.trainer.get("total_training_steps") in (None, 100)
    # optimizer steps per training step: verl 0.9.1 splits the step rows into mini-batches of
    # ppo_mini_batch_size x rollout.n rows (trainer_base._update_actor), theirs of 256 / 64
    actor = cfg.actor_rollout_ref.actor
    assert actor.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n == \
        THEIR_MINI_BATCH_ROWS[script]
    validate_config(cfg, use_reference_policy=True, use_critic=False)  # verl accepts it


def test_smoke_script_composes_with_a_local_model(tmp_path, tiny_model_dir):
    cfg = print_config("smoke_tiny.sh", tmp_path, MODEL=str(tiny_model_dir))
    assert cfg.actor_rollout_ref.model.path == str(tiny_model_dir)
    assert cfg.trainer.total_training_steps == 2 and cfg.trainer.n_gpus_per_node == 1
    assert cfg.g2po_env.name == "textworld:coin_collector-level2"
    assert cfg.data.train_batch_size == 2 and cfg.actor_rollout_ref.rollout.n == 4
