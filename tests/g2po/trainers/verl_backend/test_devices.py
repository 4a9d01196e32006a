"""What ``trainer.device=cpu`` checks and sets before verl starts (no Ray here)."""

from __future__ import annotations

import os

from g2po.trainers.verl_backend import checked_config, overrides_from_flags
from g2po.trainers.verl_backend.devices import (
    CPU_ENV,
    apply_cpu_mode,
    cpu_problems,
    ray_cpus_needed,
)


def _cpu(*extra):
    return checked_config(overrides_from_flags({"device": "cpu"}) + list(extra))


def test_what_the_cpu_mode_cannot_run_is_refused_by_key():
    problems = cpu_problems(_cpu("actor_rollout_ref.actor.strategy=fsdp",
                                 "actor_rollout_ref.rollout.name=vllm",
                                 "ray_kwargs.ray_init.num_cpus=3"))
    text = "\n".join(problems)
    assert len(problems) == 4  # actor and ref strategy, rollout, Ray CPUs
    assert "actor_rollout_ref.ref.strategy=fsdp cannot run" in text
    assert "actor_rollout_ref.rollout.name=vllm cannot run" in text and "set " in text
    assert "num_cpus=3 is fewer than the" in text
    assert cpu_problems(_cpu(f"ray_kwargs.ray_init.num_cpus={ray_cpus_needed(_cpu())}")) == []


def test_ray_cpus_count_the_actors_that_hold_one():
    one = ray_cpus_needed(_cpu())
    # 3 per FSDP worker, TransferQueue controller + storage unit, hf server, one free.
    assert one == 3 + 1 + 1 + 1 + 1
    assert ray_cpus_needed(_cpu("trainer.n_gpus_per_node=2")) == one + 3 + 1


def test_apply_sets_the_environment_for_the_driver_and_the_workers(monkeypatch):
    for key in CPU_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    config = _cpu()
    apply_cpu_mode(config)
    assert {k: os.environ[k] for k in CPU_ENV} == CPU_ENV
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert {k: env_vars[k] for k in CPU_ENV} == CPU_ENV
    assert env_vars["VERL_USE_EXTERNAL_MODULES"] == "g2po.trainers.verl_backend.plugin"
    ray_init = config.ray_kwargs.ray_init
    assert (ray_init.num_cpus, ray_init.num_gpus, ray_init.include_dashboard) == \
        (ray_cpus_needed(config), 1, False)
