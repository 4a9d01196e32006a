"""What ``trainer.device=cpu`` checks and sets before verl starts (no Ray here)."""

from __future__ import annotations

import os

from g2po.trainers.verl_backend import checked_config, overrides_from_flags
from g2po.trainers.verl_backend.devices import (
    CPU_ENV,
    CPU_ROLLOUTS,
    VLLM_CPU_ENV,
    apply_cpu_mode,
    cpu_problems,
    ray_cpus_needed,
)


def _cpu(*extra):
    return checked_config(overrides_from_flags({"device": "cpu"}) + list(extra))


def test_what_the_cpu_mode_cannot_run_is_refused_by_key():
    problems = cpu_problems(_cpu("actor_rollout_ref.actor.strategy=fsdp",
                                 "actor_rollout_ref.rollout.name=sglang",
                                 "actor_rollout_ref.rollout.free_cache_engine=true",
                                 "ray_kwargs.ray_init.num_cpus=3"))
    text = "\n".join(problems)
    assert len(problems) == 5  # actor and ref strategy, rollout, sleep, Ray CPUs
    assert "actor_rollout_ref.ref.strategy=fsdp cannot run" in text
    assert "actor_rollout_ref.rollout.name=sglang cannot run" in text and "vllm:" in text
    assert "free_cache_engine=True cannot run" in text and "sleep mode" in text
    assert "set actor_rollout_ref.rollout.free_cache_engine=false" in text
    assert "num_cpus=3 is fewer than the" in text
    assert cpu_problems(_cpu(f"ray_kwargs.ray_init.num_cpus={ray_cpus_needed(_cpu())}")) == []


def test_both_rollouts_run_without_sleep_mode():
    for rollout in CPU_ROLLOUTS:
        config = checked_config(overrides_from_flags({"device": "cpu", "rollout": rollout}))
        assert config.actor_rollout_ref.rollout.name == rollout
        assert not config.actor_rollout_ref.rollout.enable_sleep_mode
        assert config.actor_rollout_ref.rollout.enforce_eager
        # float32 throughout, as the hf server (verl: bf16)
        assert config.actor_rollout_ref.rollout.dtype == "float32"
        for role in ("actor", "ref"):
            fsdp = config.actor_rollout_ref[role].fsdp_config
            assert fsdp.mixed_precision.param_dtype == "fp32"
        assert cpu_problems(config) == []
    problems = cpu_problems(_cpu("actor_rollout_ref.rollout.name=vllm",
                                 "actor_rollout_ref.rollout.enable_sleep_mode=true"))
    assert problems == ["actor_rollout_ref.rollout.enable_sleep_mode=True cannot run with "
                        "trainer.device=cpu (vLLM's sleep mode needs a GPU): set "
                        "actor_rollout_ref.rollout.enable_sleep_mode=false, as --device cpu "
                        "does"]


def test_ray_cpus_count_the_actors_that_hold_one():
    one = ray_cpus_needed(_cpu())
    # 3 per FSDP worker, TransferQueue controller + storage unit, hf server, one free.
    assert one == 3 + 1 + 1 + 1 + 1
    assert ray_cpus_needed(_cpu("trainer.n_gpus_per_node=2")) == one + 3 + 1
    # vLLM's servers hold none (Ray's default for actors); the free one places them.
    assert ray_cpus_needed(_cpu("actor_rollout_ref.rollout.name=vllm")) == one - 1


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
    assert not set(VLLM_CPU_ENV) & set(env_vars)  # the hf rollout needs no vLLM settings


def test_apply_gives_vllm_its_kv_cache_size_unless_set(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for key in (*CPU_ENV, *VLLM_CPU_ENV):
        monkeypatch.delenv(key, raising=False)
    config = _cpu("actor_rollout_ref.rollout.name=vllm")
    apply_cpu_mode(config)
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == env_vars["VLLM_CPU_KVCACHE_SPACE"] == "1"
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    config = _cpu("actor_rollout_ref.rollout.name=vllm")
    apply_cpu_mode(config)
    assert config.ray_kwargs.ray_init.runtime_env.env_vars["VLLM_CPU_KVCACHE_SPACE"] == "3"
