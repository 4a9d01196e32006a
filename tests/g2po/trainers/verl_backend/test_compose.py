"""The configuration composes on verl's own and passes verl's own checks."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from g2po.trainers.verl_backend import VerlConfigError, compose_config
from g2po.trainers.verl_backend.compose import CONFIG_DIR

#: Our own namespaces: keys verl does not have, on purpose.
OURS = ("algorithm.g2po", "algorithm.gigpo", "algorithm.hgpo", "g2po_env", "g2po_log",
        "trainer.v1.g2po", "ray_kwargs.ray_init.runtime_env.env_vars")


def leaf_keys(node: dict, prefix: str = ""):
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from leaf_keys(value, path + ".")
        else:
            yield path


@pytest.fixture(scope="module")
def verl_base():
    with initialize_config_module("verl.trainer.config", version_base=None):
        return compose(config_name="ppo_trainer")


def test_packaged_config_composes_with_the_papers_settings(default_config):
    cfg = default_config
    assert cfg.algorithm.adv_estimator == "g2po"
    assert cfg.algorithm.g2po.gamma == 0.95 and cfg.algorithm.g2po.penalty == 0.1
    assert cfg.algorithm.g2po.success_reward == cfg.g2po_env.success_reward == 10.0
    assert cfg.trainer.v1.trainer_mode == "g2po" and cfg.trainer.use_v1
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "g2po_env"
    assert cfg.actor_rollout_ref.rollout.n == 8
    actor = cfg.actor_rollout_ref.actor
    assert actor.optim.lr == 1e-6 and actor.use_kl_loss and actor.kl_loss_coef == 0.01
    assert actor.kl_loss_type == "low_var_kl" and not cfg.algorithm.use_kl_in_reward
    assert cfg.actor_rollout_ref.model.path == "Qwen/Qwen2.5-1.5B-Instruct"
    assert cfg.g2po_env.history_length == 2
    # verl's own keys G2PO does not touch keep verl's defaults.
    assert cfg.actor_rollout_ref.actor.clip_ratio == 0.2


def test_every_verl_key_we_set_exists_in_verls_schema(verl_base):
    ours = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "g2po.yaml"))
    base = OmegaConf.to_container(verl_base, resolve=False)

    def present(key: str) -> bool:
        node = base
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    keys = [k for k in leaf_keys(ours) if not k.startswith(OURS)]
    assert len(keys) > 30
    assert [k for k in keys if not present(k)] == []


def test_verls_own_validation_and_dataclasses_accept_it(default_config):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.workers.config import FSDPActorConfig, RolloutConfig

    cfg = OmegaConf.create(OmegaConf.to_container(default_config))
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg),
                    use_critic=need_critic(cfg))
    assert need_reference_policy(cfg) and not need_critic(cfg)
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    assert isinstance(rollout, RolloutConfig) and rollout.agent.default_agent_loop == "g2po_env"
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    assert isinstance(actor, FSDPActorConfig) and actor.kl_loss_coef == 0.01


def test_overrides_pass_through_untouched():
    cfg = compose_config(["algorithm.g2po.w=0.8", "trainer.n_gpus_per_node=8",
                          "g2po_env.name=alfworld:train", "+trainer.my_note=hello",
                          "actor_rollout_ref.rollout.n=4"])
    assert cfg.algorithm.g2po.w == 0.8 and cfg.trainer.n_gpus_per_node == 8
    assert cfg.g2po_env.name == "alfworld:train" and cfg.trainer.my_note == "hello"
    assert cfg.actor_rollout_ref.rollout.n == 4


def test_hgpo_takes_its_history_length_from_the_prompt_history():
    """As verl-agent's HGPO trainer reads env.history_length."""
    assert compose_config([]).algorithm.hgpo.history_length == 2
    from g2po.trainers.verl_backend import checked_config
    from g2po.trainers.verl_backend.settings import estimator_settings

    cfg = checked_config(["algorithm.adv_estimator=hgpo", "g2po_env.history_length=4"])
    assert cfg.algorithm.hgpo.history_length == 4
    settings = estimator_settings("hgpo", OmegaConf.to_container(cfg.algorithm, resolve=True))
    assert settings.kwargs()["history_length"] == 4 and settings.kwargs()["base_group"] is False


def test_an_unknown_key_is_reported_with_its_name():
    with pytest.raises(VerlConfigError, match=r"algorithm\.g2po\.wx"):
        compose_config(["algorithm.g2po.wx=1"])
    with pytest.raises(VerlConfigError, match="composing"):
        compose_config(["algorithm.g2po.w"])


def test_a_settings_file_lands_between_defaults_and_overrides(tmp_path):
    path = tmp_path / "my_run.yaml"
    path.write_text("algorithm:\n  g2po:\n    w: 0.8\ng2po_env:\n  max_steps: 15\n")
    cfg = compose_config(["g2po_env.max_steps=7"], path)
    assert cfg.algorithm.g2po.w == 0.8  # from the file
    assert cfg.g2po_env.max_steps == 7  # the command line wins
    assert cfg.algorithm.adv_estimator == "g2po"  # G2PO's defaults underneath
    assert cfg.actor_rollout_ref.actor.strategy == "fsdp"  # verl's underneath those


def test_a_primary_file_composes_as_written(tmp_path):
    path = tmp_path / "primary.yaml"
    path.write_text(
        "hydra:\n  searchpath:\n    - pkg://g2po.trainers.verl_backend.config\n"
        "    - pkg://verl.trainer.config\n"
        "defaults:\n  - ppo_trainer\n  - g2po\n  - _self_\n"
        "algorithm:\n  adv_estimator: gigpo\n")
    cfg = compose_config([], path)
    assert cfg.algorithm.adv_estimator == "gigpo" and cfg.g2po_env.max_steps == 50


@pytest.mark.parametrize("name, text, message", [
    ("missing.yaml", None, "no such YAML"),
    ("list.yaml", "- 1\n- 2\n", "mapping"),
    ("broken.yaml", "a: [1,\n", "cannot read"),
    ("g2po.yaml", "a: 1\n", "rename"),
])
def test_bad_files_are_named(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(VerlConfigError, match=message):
        compose_config([], path)
