"""Which registered estimator and parameters explain recorded advantages: the grid holds each
estimator's defaults and the run's values, and the fit finds the one that made the numbers."""

from __future__ import annotations

import numpy as np
import pytest

from g2po.analysis.credit_fit import GRID, Candidate, candidates, close, fit_credit
from g2po.estimators import compute_advantages, list_estimators
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.g2po.analysis.groups import random_walks

RULE = OutcomeRule()


def test_the_grid_covers_every_estimator_its_defaults_and_the_runs_values():
    tried = candidates(RULE, G2POParams(penalty=0.3))
    assert {c.estimator for c in tried} == set(list_estimators())
    g2po = [dict(c.params) for c in tried if c.estimator == "g2po"]
    assert len(g2po) == len(GRID["gamma"]) * len(GRID["w"]) * len(GRID["mode"]) * 3
    assert {"gamma": 0.95, "w": 1.0, "mode": "mean_std_norm", "penalty": 0.3} in g2po
    graphgpo = {dict(c.params)["gamma"] for c in tried if c.estimator == "graphgpo"}
    assert graphgpo == {0.1}  # its γ is another quantity: its own default only
    assert [dict(c.params) for c in tried if c.estimator == "rloo"] == [{}]
    assert Candidate("g2po", (("gamma", 0.9), ("mode", "mean_norm"))).describe() == \
        "g2po(gamma=0.9, mode=mean_norm)"


def test_close_tolerates_float32_and_nothing_else():
    c = np.array([1.0, -2.5, 0.0, 3.0])
    assert close(c.astype(np.float32).astype(np.float64), c).all()
    assert not close(c + 0.01, c).any()
    assert not close(np.array([np.nan, np.inf]), np.array([0.0, 1.0])).any()


def test_the_fit_finds_the_estimator_and_parameters_that_made_the_numbers():
    steps = random_walks(groups=3, rollouts=6, length=5, seed=7)
    made = {"g0": ("gigpo", {"omega": 0.5}), "g1": ("g2po", {"gamma": 0.99, "w": 0.8}),
            "g2": ("grpo", {})}
    recorded = np.full(len(steps), np.nan)
    for group, (name, params) in made.items():
        rows = (steps["group_id"] == group).to_numpy()
        recorded[rows] = compute_advantages(steps[rows], name, **params)["adv"].to_numpy()
    fitted = fit_credit(steps, recorded, rule=RULE, params=G2POParams()).set_index("group_id")
    assert fitted["explained"].all() and (fitted["fit_match"] == 1.0).all()
    assert fitted.loc["g0", "best_fit"].startswith("gigpo(gamma=0.95, omega=0.5")
    assert fitted.loc["g1", "best_fit"].startswith("g2po(gamma=0.99, w=0.8")
    assert fitted.loc["g2", "best_fit"] == "grpo(mode=mean_std_norm)"
    noise = np.random.default_rng(1).normal(size=len(steps))
    unexplained = fit_credit(steps, noise, rule=RULE, params=G2POParams(),
                             tried=candidates(RULE, G2POParams(), ["g2po", "grpo"]))
    assert not unexplained["explained"].any() and (unexplained["fit_match"] < 0.5).all()


def test_a_fit_with_no_candidate_that_runs_says_so():
    steps = random_walks(groups=1, rollouts=2, length=2)
    with pytest.raises(ValueError, match="no candidate"):
        fit_credit(steps, np.zeros(len(steps)), rule=RULE, params=G2POParams(),
                   tried=[Candidate("g2po", (("gamma", 7.0),))])
