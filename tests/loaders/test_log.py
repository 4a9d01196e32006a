"""What a run's manifest says about how it was trained: the outcome rule and G2PO's parameters,
whole, read back from the trainers' records and from the manifests of earlier versions."""

from __future__ import annotations

import pytest

from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.synthetic import synthetic_steps
from loaders import RunWriter, open_run
from loaders.log import manifest_params, manifest_rule

GRADED = OutcomeRule(success_reward=1.0, success_threshold=0.5, terminal="reward",
                     truncate_at=30)


def test_the_recorded_rule_and_parameters_come_back_whole():
    params = G2POParams(gamma=0.9, w=0.8, mode="mean_norm", penalty=0.0,
                        state_key="normalized")
    manifest = {"outcome": GRADED.as_dict(), "params": params.as_dict(),
                # what an earlier reader looked at first must not win over the record
                "success_reward": 10.0, "config": {"gamma": 0.5}}
    assert manifest_rule(manifest) == GRADED
    assert manifest_params(manifest) == params


def test_a_local_run_of_an_earlier_version():
    """TrainConfig kept flat gamma / invalid_penalty / state_key / success_reward, and G2PO's
    w in estimator_params."""
    manifest = {"estimator": "g2po", "config": {
        "gamma": 0.9, "invalid_penalty": 0.2, "state_key": "normalized",
        "success_reward": 1.0, "estimator_params": {"w": 0.8}}}
    assert manifest_rule(manifest) == OutcomeRule(success_reward=1.0)
    assert manifest_params(manifest) == G2POParams(gamma=0.9, w=0.8, penalty=0.2,
                                                   state_key="normalized")


def test_a_verl_run_of_an_earlier_version_keeps_its_terminal():
    """The verl backend recorded the estimator's arguments: a `terminal: reward` run reopened
    as `binary` before the rule was read whole."""
    manifest = {"estimator": "g2po", "state_key": "exact", "success_reward": 1.0,
                "estimator_params": {"gamma": 0.95, "w": 1.0, "mode": "mean_std_norm",
                                     "penalty": 0.1, "terminal": "reward",
                                     "success_reward": 1.0, "success_threshold": 0.5}}
    assert manifest_rule(manifest) == OutcomeRule(success_reward=1.0, success_threshold=0.5,
                                                  terminal="reward")
    assert manifest_params(manifest) == G2POParams()
    # GiGPO's own normalisation is not G2PO's mode
    gigpo = {"estimator": "gigpo", "estimator_params": {"gamma": 0.9, "mode": "mean_norm"}}
    assert manifest_params(gigpo) == G2POParams(gamma=0.9)


@pytest.mark.parametrize("manifest", [
    {}, {"env": "demo"}, {"outcome": {"terminal": "sometimes"}},
    {"outcome": {"success_reward": "ten"}}, {"params": {"gamma": 2.0}}, [1, 2]])
def test_a_manifest_that_states_no_valid_rule_gives_none(manifest):
    if isinstance(manifest, dict) and "params" in manifest:
        assert manifest_params(manifest) is None
    else:
        assert manifest_rule(manifest) is None


def test_a_run_opens_with_the_rule_it_recorded(tmp_path):
    RunWriter(tmp_path / "run", {"outcome": GRADED.as_dict()}).write_step(
        1, synthetic_steps(60, seed=3))
    log = open_run(tmp_path / "run")
    assert log.rule() == GRADED and log.rule_origin() == "the log's manifest"
