"""The G2PO sections of the configuration: typed, checked, every problem named."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from g2po.estimators import estimator_params
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.trainers.verl_backend import VerlConfigError, compose_config
from g2po.trainers.verl_backend.settings import (
    config_problems,
    env_settings,
    estimator_settings,
)


def problems(*overrides: str) -> list[str]:
    return config_problems(compose_config(list(overrides)))


def test_the_packaged_configuration_has_no_problem(default_config):
    assert config_problems(default_config) == []


def test_estimator_settings_are_the_librarys_parameters(default_config):
    g2po = estimator_settings("g2po", default_config.algorithm)
    assert g2po.kwargs() == {"gamma": 0.95, "w": 1.0, "mode": "mean_std_norm", "penalty": 0.1,
                             "terminal": "binary", "success_reward": 10.0,
                             "success_threshold": None}
    assert set(g2po.kwargs()) == set(estimator_params("g2po"))
    assert g2po.state_key == "exact" and g2po.missing_step_fields == "error"
    # the house's values, whole: G2PO's parameters and the run's outcome rule
    assert g2po.params == G2POParams() and g2po.rule == OutcomeRule() and g2po.own == {}
    gigpo = estimator_settings("gigpo", default_config.algorithm)
    assert gigpo.kwargs() == {"gamma": 0.95, "omega": 1.0, "mode": "mean_norm", "penalty": 0.1}
    assert gigpo.own == {"omega": 1.0, "mode": "mean_norm"}  # GiGPO's own normalisation
    # An absent section takes the library defaults (G2POParams' where they mean G2PO's).
    assert estimator_settings("gigpo", OmegaConf.create({})).kwargs() == {"gamma": 0.95,
                                                                         "penalty": 0.1}


def test_a_non_default_rule_and_parameters_are_read_whole():
    section = OmegaConf.create({"g2po": {"gamma": 0.9, "w": 0.8, "terminal": "reward",
                                         "success_threshold": 5.0, "truncate_at": 4,
                                         "state_key": "normalized"}})
    settings = estimator_settings("g2po", section, success_reward=1.0)
    assert settings.params == G2POParams(gamma=0.9, w=0.8, state_key="normalized")
    assert settings.rule == OutcomeRule(success_reward=1.0, success_threshold=5.0,
                                        terminal="reward", truncate_at=4)
    assert "truncate_at" not in settings.kwargs() and settings.kwargs()["terminal"] == "reward"
    with pytest.raises(VerlConfigError, match="truncate_at must be None or a whole number"):
        estimator_settings("g2po", OmegaConf.create({"g2po": {"truncate_at": 0}}))


def test_estimator_values_are_judged_by_the_estimator():
    with pytest.raises(VerlConfigError, match=r"algorithm\.g2po: gamma must be in \(0, 1\]"):
        estimator_settings("g2po", OmegaConf.create({"g2po": {"gamma": 0.0}}))
    with pytest.raises(VerlConfigError, match="terminal"):
        estimator_settings("g2po", OmegaConf.create({"g2po": {"terminal": "sometimes"}}))
    with pytest.raises(VerlConfigError, match=r"algorithm\.gigpo\.w: not a parameter.*omega"):
        estimator_settings("gigpo", OmegaConf.create({"gigpo": {"w": 1.0}}))
    with pytest.raises(VerlConfigError, match="state_key"):
        estimator_settings("g2po", OmegaConf.create({"g2po": {"state_key": "fuzzy"}}))


@pytest.mark.parametrize("overrides, message", [
    (["trainer.v1.trainer_mode=sync"], "set trainer.v1.trainer_mode=g2po"),
    (["algorithm.adv_estimator=gigpo", "trainer.v1.trainer_mode=sync"],
     "adv_estimator=gigpo needs the per-step fields"),
    (["algorithm.use_kl_in_reward=true"], "use_kl_in_reward"),
    (["algorithm.g2po.success_reward=1.0"], "success terminal would never be reached"),
    (["algorithm.g2po.mode=zscore"], "mode must be one of"),
    (["algorithm.g2po.missing_step_fields=guess"], "missing_step_fields must be one of"),
    (["g2po_env.name=chess:easy"], "g2po_env.name: 'chess:easy' is not an environment spec"),
    (["g2po_env.max_steps=0"], "max_steps must be a positive integer"),
    (["g2po_env.history_length=-1"], "history_length"),
    (["+g2po_env.max_stepz=3"], "g2po_env.max_stepz: unknown key"),
    (["actor_rollout_ref.rollout.n=1"], "rollout.n must be >= 2"),
    (["trainer.use_v1=false"], "use_v1 must be true"),
    (["actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent"],
     "default_agent_loop is 'single_turn_agent'"),
    (["g2po_log.run_dir=null"], "g2po_log.run_dir must name a directory"),
    (["data.validation_shuffle=true"], "set it false so every validation plays the same panel"),
    (["data.train_batch_size=4"], "ppo_mini_batch_size (16) exceeds data.train_batch_size (4)"),
])
def test_each_problem_names_its_key_and_the_fix(overrides, message):
    found = problems(*overrides)
    assert any(message in p for p in found), found


def test_every_problem_is_listed_at_once():
    found = problems("trainer.v1.trainer_mode=sync", "g2po_env.max_steps=0",
                     "actor_rollout_ref.rollout.n=1")
    assert len(found) == 3


def test_episode_only_opt_in_allows_another_trainer_mode():
    assert problems("trainer.v1.trainer_mode=sync",
                    "algorithm.g2po.missing_step_fields=episode_only") == []


def test_a_verl_estimator_needs_no_g2po_sections():
    assert problems("algorithm.adv_estimator=grpo", "trainer.v1.trainer_mode=sync",
                    "actor_rollout_ref.rollout.n=1",
                    "actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent",
                    "data.train_files=/data/train.parquet",
                    "data.val_files=/data/val.parquet") == []


def test_env_settings_default_the_validation_spec(default_config):
    env = env_settings(default_config)
    assert env.name == env.val_name == "textworld:coin_collector-level5"
    assert (env.max_steps, env.history_length, env.success_reward) == (50, 2, 10.0)
    other = env_settings(compose_config(["g2po_env.name=alfworld:train",
                                         "g2po_env.val_name=alfworld:valid_unseen"]))
    assert (other.name, other.val_name) == ("alfworld:train", "alfworld:valid_unseen")
