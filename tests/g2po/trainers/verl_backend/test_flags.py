"""The shared `g2po train` flags as hydra overrides of the verl configuration."""

from __future__ import annotations

import pytest

from g2po.trainers.verl_backend import VerlConfigError, checked_config, overrides_from_flags
from g2po.trainers.verl_backend.flags import PLAIN_CHAT_TEMPLATE, hydra_value
from tests.g2po.trainers.verl_backend.conftest import ENV, TINY


def test_flags_become_overrides_that_validate(tmp_path):
    overrides = overrides_from_flags({
        "env": "textworld", "estimator": "gigpo", "total_steps": 20, "seed": 3, "lr": 1e-5,
        "tasks_per_step": 4, "rollouts_per_task": 6, "max_steps": 15, "device": "auto",
        "out": str(tmp_path / "my run"), "threads": None})
    cfg = checked_config(overrides)
    assert cfg.g2po_env.name == "textworld:coin_collector-level5"  # a bare family name
    assert cfg.algorithm.adv_estimator == "gigpo" and cfg.trainer.total_training_steps == 20
    assert cfg.g2po_env.seed == 3 and cfg.data.seed == 3
    assert cfg.actor_rollout_ref.actor.optim.lr == 1e-5
    assert cfg.data.train_batch_size == 4 and cfg.actor_rollout_ref.actor.ppo_mini_batch_size == 4
    assert cfg.actor_rollout_ref.rollout.n == 6 and cfg.g2po_env.max_steps == 15
    assert cfg.g2po_log.run_dir == str(tmp_path / "my run")
    assert cfg.trainer.default_local_dir == str(tmp_path / "my run" / "checkpoints")


def test_the_users_own_overrides_win_when_placed_after():
    cfg = checked_config(overrides_from_flags({"max_steps": 15}) + ["g2po_env.max_steps=7"])
    assert cfg.g2po_env.max_steps == 7


def test_tiny_model_gets_its_folder_and_a_plain_chat_template(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tiny_model_dir.parent.parent))  # built there already
    overrides = overrides_from_flags({"model": TINY, "env": ENV})
    cfg = checked_config(overrides)
    assert cfg.actor_rollout_ref.model.path == str(tiny_model_dir)
    assert cfg.actor_rollout_ref.model.custom_chat_template == PLAIN_CHAT_TEMPLATE
    with pytest.raises(VerlConfigError, match="pass --env"):
        overrides_from_flags({"model": "tiny"})


def test_flags_without_a_verl_meaning_are_refused():
    with pytest.raises(VerlConfigError, match="CUDA_VISIBLE_DEVICES") as err:
        overrides_from_flags({"device": "cuda:1", "threads": 2})
    assert len(err.value.problems) == 2
    assert overrides_from_flags({"device": "cuda"}) == []
    with pytest.raises(VerlConfigError, match="not a g2po estimator.*algorithm.adv_estimator"):
        overrides_from_flags({"estimator": "gae"})


def test_estimator_flag_names_the_library_estimator():
    """--estimator speaks the library's names; where verl has its own of the name, the flag
    picks ours (g2po:NAME) and a raw override keeps verl's."""
    cfg = checked_config(overrides_from_flags({"estimator": "grpo"}))
    assert cfg.algorithm.adv_estimator == "g2po:grpo"
    assert checked_config(overrides_from_flags({"estimator": "g2po_ep"})).algorithm.adv_estimator \
        == "g2po_ep"
    with pytest.raises(VerlConfigError, match="g2po:grpo"):
        checked_config(["algorithm.adv_estimator=g2po:gae"])


def test_device_cpu_is_verls_cpu_mode():
    from g2po.trainers.verl_backend.devices import CPU_OVERRIDES, cpu_problems

    overrides = overrides_from_flags({"device": "cpu"})
    assert overrides[:len(CPU_OVERRIDES)] == CPU_OVERRIDES
    cfg = checked_config(overrides)
    assert cfg.trainer.device == "cpu" and cfg.actor_rollout_ref.rollout.name == "hf"
    assert cfg.actor_rollout_ref.ref.strategy == "fsdp2"
    assert cpu_problems(cfg) == []


@pytest.mark.parametrize("value, text", [
    ("alfworld:valid_unseen", "alfworld:valid_unseen"), (0.8, "0.8"), (True, "true"),
    ("a b", "'a b'"), ("it's", '"it\'s"'), ("{% x %}", "'{% x %}'"),
])
def test_values_are_quoted_for_hydra(value, text):
    assert hydra_value(value) == text
