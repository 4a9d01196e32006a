import json

import pytest

from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.trainers.config import (
    ConfigError,
    TrainConfig,
    apply_overrides,
    config_fields,
    field_docs,
    load_config,
    resolve_env,
)


def test_defaults_follow_the_paper():
    c = TrainConfig()
    assert (c.kl_coef, c.kl_type, c.params.penalty, c.params.gamma, c.rollouts_per_task) == \
        (0.01, "low_var_kl", 0.1, 0.95, 8)
    assert c.params == G2POParams() and c.outcome == OutcomeRule()
    assert c.lr is None and c.history_length == 2 and c.backend == "local"


def test_every_field_has_a_doc():
    docs = field_docs()
    assert set(docs) == set(config_fields())
    assert all(len(d) > 10 for d in docs.values())


def test_file_then_overrides_in_order(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("estimator: gigpo\nlr: 0.002\nestimator_params: {mode: mean_norm}\n"
                    "params: {gamma: 0.9}\n")
    c = load_config(path, ["lr=5e-3", "estimator_params.omega=0.8", "progress=false",
                           "params.penalty=0.2"],
                    base={"seed": 7, "estimator": "grpo", "params": {"w": 0.5}})
    assert c.estimator == "gigpo"  # the file beats the base
    assert c.lr == 0.005 and c.seed == 7 and c.progress is False
    # gigpo's own normalisation and omega stay its own; the file's params update the base's
    assert c.estimator_params == {"mode": "mean_norm", "omega": 0.8}
    assert (c.params.gamma, c.params.w, c.params.penalty) == (0.9, 0.5, 0.2)


def test_json_file(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"total_steps": 3, "env": "textworld"}))
    c = load_config(path)
    assert c.total_steps == 3 and c.env == "textworld:coin_collector-level5"


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ConfigError, match=r"unknown configuration key 'lrr' \(did you mean lr"):
        load_config(overrides=["lrr=1"])


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: [1,\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(bad)
    listed = tmp_path / "list.yaml"
    listed.write_text("- lr\n")
    with pytest.raises(ConfigError, match="list.yaml: a configuration file holds a mapping"):
        load_config(listed)
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "missing.yaml")
    typo = tmp_path / "typo.yaml"
    typo.write_text("totl_steps: 3\n")
    with pytest.raises(ConfigError, match=r"typo.yaml: unknown configuration key 'totl_steps'"):
        load_config(typo)


def test_types_are_checked():
    with pytest.raises(ConfigError, match="total_steps must be of type int, got 'many'"):
        load_config(overrides=["total_steps=many"])
    with pytest.raises(ConfigError, match="total_steps must be of type int"):
        load_config(overrides=["total_steps=2.5"])
    with pytest.raises(ConfigError, match="progress must be of type bool"):
        load_config(overrides=["progress=sometimes"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        apply_overrides({}, ["lr"])
    with pytest.raises(ConfigError, match="seed is not a mapping"):
        apply_overrides({}, ["seed.x=1"])
    assert load_config(overrides=["lr=none"]).lr is None


def test_every_invalid_value_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        TrainConfig(tasks_per_step=0, temperature=0, loss_agg_mode="mean", backend="ray",
                    clip_ratio_c=1.0, task_pool=2, lr=-1.0)
    text = str(err.value)
    for needle in ("tasks_per_step must be > 0", "temperature must be > 0",
                   "loss_agg_mode must be one of token-mean", "backend must be one of local",
                   "clip_ratio_c must be > 1", "lr must be >= 0"):
        assert needle in text
    with pytest.raises(ConfigError, match=r"tasks_per_step \(4\) cannot exceed task_pool \(2\)"):
        TrainConfig(task_pool=2)


def test_resolve_env():
    assert resolve_env("textworld") == "textworld:coin_collector-level5"
    assert resolve_env("textworld:cooking-recipe1") == "textworld:cooking-recipe1"
    assert resolve_env("alfworld") == "alfworld"  # other families keep their own rule


def test_to_dict_round_trips():
    c = TrainConfig(estimator="gigpo", estimator_params={"omega": 0.5}, lr=1e-3,
                    params=G2POParams(gamma=0.9, state_key="normalized"),
                    outcome=OutcomeRule(success_reward=1.0, terminal="reward", truncate_at=5))
    assert load_config(base=c.to_dict()) == c
    assert c.to_dict()["outcome"] == {"success_reward": 1.0, "success_threshold": None,
                                      "terminal": "reward", "truncate_at": 5}


def test_the_house_values_are_set_part_by_part():
    c = load_config(overrides=["params.gamma=0.9", "params.state_key=normalized",
                               "outcome.terminal=reward", "outcome.success_threshold=5"])
    assert c.params == G2POParams(gamma=0.9, state_key="normalized")
    assert c.outcome == OutcomeRule(terminal="reward", success_threshold=5.0)
    # the estimator gets what it takes of them, with G2PO's meaning, plus its own
    assert c.estimator_kwargs() == {"gamma": 0.9, "w": 1.0, "mode": "mean_std_norm",
                                    "penalty": 0.1, "success_reward": 10.0,
                                    "success_threshold": 5.0, "terminal": "reward"}
    gigpo = load_config(overrides=["estimator=gigpo", "params.gamma=0.8", "params.w=3",
                                   "estimator_params.omega=0.5"])
    assert gigpo.estimator_kwargs() == {"gamma": 0.8, "penalty": 0.1, "omega": 0.5}
    assert load_config(overrides=["estimator=grpo", "params.gamma=0.8"]).estimator_kwargs() \
        == {}


def test_the_names_of_earlier_versions_still_work():
    """gamma=, invalid_penalty=, state_key=, success_reward= and estimator_params.w= (the
    README's spelling) land in params and outcome; a stored run of an earlier version loads
    the same way."""
    c = load_config(overrides=["gamma=0.9", "invalid_penalty=0.0", "state_key=normalized",
                               "success_reward=1", "estimator_params.w=0.8",
                               "estimator_params.terminal=reward"])
    assert c.params == G2POParams(gamma=0.9, w=0.8, penalty=0.0, state_key="normalized")
    assert c.outcome == OutcomeRule(success_reward=1.0, terminal="reward")
    assert c.estimator_params == {}
    stored = {"estimator": "g2po", "gamma": 0.9, "invalid_penalty": 0.0,
              "state_key": "normalized", "success_reward": 1.0,
              "estimator_params": {"w": 0.8, "terminal": "reward"}}
    assert load_config(base=stored) == c
    assert TrainConfig(estimator_params={"w": 0.8}).params.w == 0.8


def test_a_value_set_twice_or_in_the_wrong_place_is_refused_with_its_spelling():
    with pytest.raises(ConfigError, match=r"estimator_params.w=0.8 and params.w=0.9 disagree: "
                                          r"set it once, as params.w"):
        load_config(overrides=["params.w=0.9", "estimator_params.w=0.8"])
    with pytest.raises(ConfigError, match=r"unknown configuration key 'w' \(did you mean "
                                          r"params.w\?\)"):
        load_config(overrides=["w=0.8"])
    with pytest.raises(ConfigError, match=r"did you mean outcome.terminal"):
        load_config(overrides=["terminal=reward"])
    with pytest.raises(ConfigError, match=r"params: unknown G2PO parameter\(s\) gama"):
        load_config(overrides=["params.gama=0.9"])
    with pytest.raises(ConfigError, match=r"outcome: terminal must be one of binary, reward"):
        load_config(overrides=["outcome.terminal=sometimes"])
    with pytest.raises(ConfigError, match=r"params: gamma must be in \(0, 1\]"):
        load_config(overrides=["gamma=0"])
    with pytest.raises(ConfigError, match=r"unknown estimator 'nope'"):
        load_config(overrides=["estimator=nope"])
