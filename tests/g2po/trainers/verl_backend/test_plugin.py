"""verl finds our registrations: entry point, external-modules variable, registries."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points


def test_the_verl_plugins_entry_point_names_the_plugin():
    found = {ep.name: ep.value for ep in entry_points(group="verl.plugins")}
    assert found.get("g2po") == "g2po.trainers.verl_backend.plugin"


def test_workers_import_the_plugin_through_verls_variable(default_config):
    from verl.utils.import_utils import import_external_libs

    env = default_config.ray_kwargs.ray_init.runtime_env.env_vars
    modules = env.VERL_USE_EXTERNAL_MODULES.split(",")
    import_external_libs(modules)  # what verl/__init__ does with the variable
    assert importlib.import_module(modules[0]).__name__ == "g2po.trainers.verl_backend.plugin"


def test_importing_the_plugin_registers_all_three():
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.trainer.ppo.v1 import get_trainer_cls
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    import g2po.trainers.verl_backend.plugin  # noqa: F401
    from g2po.trainers.verl_backend.agent_loop import G2POEnvAgentLoop
    from g2po.trainers.verl_backend.trainer import G2POTrainer

    assert get_adv_estimator_fn("g2po").library_estimator == "g2po"
    assert get_adv_estimator_fn("gigpo").library_estimator == "gigpo"
    assert get_adv_estimator_fn("g2po:grpo").library_estimator == "grpo"
    assert get_trainer_cls("g2po") is G2POTrainer and issubclass(G2POTrainer, PPOTrainerSync)
    target = _agent_loop_registry["g2po_env"]["_target_"]
    assert target == f"{G2POEnvAgentLoop.__module__}.{G2POEnvAgentLoop.__qualname__}"
