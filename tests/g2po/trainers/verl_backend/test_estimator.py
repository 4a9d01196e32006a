"""The library estimators in verl: through verl's own dispatch, equal to the g2po library."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

from g2po import compute_advantages
from g2po.analysis.diagnostics import batch_metrics
from g2po.estimators import estimate, list_estimators, step_columns
from g2po.synthetic import synthetic_steps
from g2po.trainers.verl_backend.estimator import (
    MissingStepFieldsError,
    provide_step_fields,
    register_library_estimators,
)
from g2po.trainers.verl_backend.rows import step_fields_from_rows
from g2po.trainers.verl_backend.settings import (
    OWN_KEYS,
    VERL_BUILTIN_ESTIMATORS,
    library_estimator,
    verl_estimator_name,
)
from tests.g2po.builders import TWO, trajectories, with_declared_columns
from tests.g2po.trainers.verl_backend.batches import (
    data_proto,
    extra_fields_of,
    keys_of,
    response_lengths,
    tags_of,
)

RESPONSE_LENGTH = 12


@pytest.fixture(scope="module")
def algorithm(default_config):
    """verl's ``algorithm`` section as the packaged configuration composes it."""
    return default_config.algorithm


@pytest.fixture(scope="module")
def steps() -> pd.DataFrame:
    """A realistic batch: groups of 4 rollouts, merging states, invalid actions, shuffled rows."""
    table = synthetic_steps(700, rollouts=4, max_len=12, states_per_task=6, invalid_rate=0.15,
                            key_chars=40, seed=3)
    table["group_id"] = table["group_id"].str.replace("task-", "uid", regex=False)
    # with a value in every step column an estimator declares, as an environment reporting it
    table = with_declared_columns(table)
    return table.sample(frac=1.0, random_state=0).reset_index(drop=True)


def batch(steps: pd.DataFrame):
    lengths = response_lengths(len(steps), RESPONSE_LENGTH, seed=1)
    fields = step_fields_from_rows(keys_of(steps), tags_of(steps, lengths),
                                   extra_fields_of(steps))
    # the agent loop's records carry no estimator-declared column yet: handed over as extras
    fields.extra.update({c: steps[c].to_numpy() for c in step_columns() if c in steps})
    return fields, data_proto(steps, lengths, RESPONSE_LENGTH)


def expected(steps: pd.DataFrame, data, name: str, **params) -> torch.Tensor:
    adv = compute_advantages(steps, name, **params)["adv"].to_numpy()
    mask = data.batch["response_mask"].to(torch.float32)
    return torch.as_tensor(adv, dtype=torch.float32).unsqueeze(-1) * mask


def with_params(algorithm, **changes):
    return OmegaConf.merge(algorithm, OmegaConf.create(changes))


def test_every_library_estimator_is_registered_and_verls_own_names_stay_verls():
    names = register_library_estimators()
    assert sorted(names.values()) == list_estimators()
    for name in list_estimators():
        fn = core_algos.get_adv_estimator_fn(verl_estimator_name(name))
        assert fn.library_estimator == name
        assert library_estimator(verl_estimator_name(name)) == name
    assert verl_estimator_name("grpo") == "g2po:grpo" and verl_estimator_name("rloo") == "g2po:rloo"
    assert core_algos.get_adv_estimator_fn("grpo") is core_algos.compute_grpo_outcome_advantage
    assert core_algos.get_adv_estimator_fn("rloo") is core_algos.compute_rloo_outcome_advantage


def test_verl_builtin_names_are_verls_registry():
    """The names that keep verl's meaning are exactly verl's own registrations."""
    ours = {k for k, fn in core_algos.ADV_ESTIMATOR_REGISTRY.items()
            if hasattr(fn, "library_estimator")}
    assert set(core_algos.ADV_ESTIMATOR_REGISTRY) - ours == VERL_BUILTIN_ESTIMATORS


@pytest.mark.parametrize("name", list_estimators())
def test_every_estimator_through_verl_equals_the_library(algorithm, steps, name):
    """One estimator library for every trainer: the rows through verl's compute_advantage under
    the verl name give exactly g2po.compute_advantages' numbers for the library name."""
    fields, data = batch(steps)
    with provide_step_fields(fields) as slot:
        out = compute_advantage(data, adv_estimator=verl_estimator_name(name), config=algorithm)
    section = OmegaConf.to_container(algorithm.get(name) or OmegaConf.create({}), resolve=True)
    params = {k: v for k, v in section.items() if k not in OWN_KEYS}
    want = expected(steps, data, name, **params)
    assert torch.equal(out.batch["advantages"], want)
    assert want.abs().sum() > 0
    assert slot.results[0].estimator == name


@pytest.mark.parametrize("name, params", [
    ("g2po", {}),
    ("g2po", {"w": 0.8, "mode": "mean_norm", "penalty": 0.2}),
    ("g2po", {"terminal": "reward", "gamma": 0.9}),
    ("gigpo", {}),
    ("gigpo", {"omega": 0.5, "mode": "mean_std_norm"}),
])
def test_verl_dispatch_matches_the_library(algorithm, steps, name, params):
    fields, data = batch(steps)
    config = with_params(algorithm, **{name: params})
    with provide_step_fields(fields) as slot:
        out = compute_advantage(data, adv_estimator=name, config=config)
    library_params = {**{k: v for k, v in OmegaConf.to_container(config[name], resolve=True)
                         .items() if k not in OWN_KEYS}}
    want = expected(steps, data, name, **library_params)
    assert torch.equal(out.batch["advantages"], want)
    assert torch.equal(out.batch["returns"], want)
    assert want.abs().sum() > 0
    assert len(slot.results) == 1 and slot.results[0].estimator == name


def test_v1_multi_trajectory_path_matches_the_library(algorithm, steps):
    """The v1 trainer calls compute_advantage_for_multi_trajectories with the batch keys; for
    our estimators it must not reduce the rows to each session's last one (as it does for
    GRPO)."""
    fields, data = batch(steps)
    with provide_step_fields(fields):
        out = compute_advantage_for_multi_trajectories(
            data, batch_keys=keys_of(steps), adv_estimator="g2po", gamma=1.0, lam=1.0,
            num_repeat=4, norm_adv_by_std_in_grpo=True, config=algorithm)
    assert torch.equal(out.batch["advantages"], expected(steps, data, "g2po"))


def test_state_key_strategy_is_applied(algorithm):
    steps = trajectories({"a": (10, [("Room A.", "x", True), ("room  a.", "y", True)]),
                          "b": (0, [("room a.", "x", True)])}, group="u1")
    fields, data = batch(steps)
    config = with_params(algorithm, g2po={"state_key": "normalized"})
    with provide_step_fields(fields) as slot:
        out = compute_advantage(data, adv_estimator="g2po", config=config)
    want = expected(steps, data, "g2po", state_key="normalized")
    assert torch.equal(out.batch["advantages"], want)
    assert not torch.equal(want, expected(steps, data, "g2po"))
    assert slot.results[0].metrics["g2po/merge_rate"] == pytest.approx(1 - 1 / 3)


def test_without_step_fields_fails_with_the_fix(algorithm, steps):
    _, data = batch(steps)
    with pytest.raises(MissingStepFieldsError, match="trainer.v1.trainer_mode=g2po"):
        compute_advantage(data, adv_estimator="g2po", config=algorithm)
    with pytest.raises(MissingStepFieldsError, match="missing_step_fields=episode_only"):
        compute_advantage(data, adv_estimator="gigpo", config=algorithm)


def test_episode_only_is_an_explicit_opt_in(algorithm, steps):
    _, data = batch(steps)
    config = with_params(algorithm, g2po={"missing_step_fields": "episode_only", "penalty": 0.3})
    out = compute_advantage(data, adv_estimator="g2po", config=config)
    # Every row is one single-step trajectory of its uid's group; no row counted invalid.
    rows = steps.assign(traj_id=np.arange(len(steps)).astype(str), t=0,
                        state_key=np.arange(len(steps)).astype(str), is_action_valid=True)
    want = expected(rows, data, "g2po_ep", penalty=0.3)
    assert torch.equal(out.batch["advantages"], want)


def test_padding_rows_get_zero_and_change_nothing(algorithm, steps):
    fields, data = batch(steps)
    with provide_step_fields(fields):
        plain = compute_advantage(data, adv_estimator="g2po", config=algorithm)
    padded = pd.concat([steps, steps.iloc[:3].assign(group_id="padabc", traj_id=["0", "1", "2"],
                                                     t=0)], ignore_index=True)
    lengths = response_lengths(len(padded), RESPONSE_LENGTH, seed=1)
    tags = tags_of(padded, lengths)
    for tag in tags[len(steps):]:
        tag["is_padding"] = True
    fields = step_fields_from_rows(keys_of(padded), tags, extra_fields_of(padded))
    data = data_proto(padded, lengths, RESPONSE_LENGTH)
    with provide_step_fields(fields):
        out = compute_advantage(data, adv_estimator="g2po", config=algorithm)
    assert torch.equal(out.batch["advantages"][len(steps):],
                       torch.zeros(3, RESPONSE_LENGTH))
    assert torch.equal(out.batch["advantages"][: len(steps)], plain.batch["advantages"])


def test_rows_out_of_step_with_the_fields_are_rejected(algorithm, steps):
    fields, data = batch(steps)
    order = np.random.default_rng(0).permutation(len(steps))
    with provide_step_fields(fields), pytest.raises(MissingStepFieldsError, match="reordered"):
        compute_advantage(data.select_idxs(order), adv_estimator="g2po", config=algorithm)
    with provide_step_fields(fields), pytest.raises(MissingStepFieldsError, match="rows"):
        compute_advantage(data.select_idxs(np.arange(5)), adv_estimator="g2po", config=algorithm)


def test_diagnostics_on_a_hand_worked_group():
    steps = trajectories(TWO)  # a: s0 s1 (R=10); b: s0 s2 s1 (R=0)
    columns, ix = estimate(steps, "g2po")
    metrics = batch_metrics(ix, columns)
    assert metrics["g2po/steps"] == 5 and metrics["g2po/groups"] == 1
    assert metrics["g2po/merge_rate"] == pytest.approx(1 - 3 / 5)
    assert metrics["g2po/singleton_node_share"] == pytest.approx(1 / 3)  # s2
    assert metrics["g2po/merged_step_share"] == pytest.approx(4 / 5)
    assert metrics["g2po/nodes_per_group"] == 3
    assert metrics["g2po/invalid_rate"] == 0
    assert metrics["g2po/td_error_abs_mean"] == pytest.approx(np.abs(columns["td_error"]).mean())
    for column, name in (("adv", "total"), ("adv_ep", "ep"), ("adv_nc", "nc"), ("adv_ec", "ec")):
        assert metrics[f"adv/{name}/mean"] == pytest.approx(columns[column].mean())
        assert metrics[f"adv/{name}/std"] == pytest.approx(columns[column].std())
        assert metrics[f"adv/{name}/max"] == pytest.approx(columns[column].max())
    gigpo_cols, gigpo_ix = estimate(steps, "gigpo")
    gigpo = batch_metrics(gigpo_ix, gigpo_cols)
    assert "adv/step/mean" in gigpo and "g2po/td_error_abs_mean" not in gigpo
