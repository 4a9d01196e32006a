"""Outcome-only peers: GRPO per trajectory, verl-agent's multi-turn GRPO per step row, RLOO."""

from __future__ import annotations

import numpy as np

from g2po.estimators.g2po import MODE_DOC, PENALTY_DOC, episode_advantage
from g2po.estimators.registry import register_estimator
from g2po.index import StepIndex
from g2po.segments import NormMode, segment_norm

__all__ = ["grpo", "grpo_steps", "rloo"]


@register_estimator(
    "grpo",
    title="GRPO",
    summary="one advantage per rollout: R normalised over the group's rollouts",
    params={"mode": MODE_DOC},
    episode="rollouts",
    original="verl compute_grpo_outcome_advantage, fed one row per trajectory",
)
def grpo(ix: StepIndex, mode: NormMode = "mean_std_norm") -> dict[str, np.ndarray]:
    """``adv`` (n_steps,): norm(R_i over the group's trajectories), broadcast to the steps.

    verl's ``compute_grpo_outcome_advantage`` fed one row per trajectory gives the same, except
    for a group of one trajectory: verl gives R/(1+eps) (``mean_norm``: R), this estimator 0, as
    every singleton set of the spec."""
    per_traj = segment_norm(ix.traj_reward, ix.traj_group, ix.n_groups, mode)
    return {"adv": per_traj[ix.traj]}


@register_estimator(
    "grpo_steps",
    title="multi-turn GRPO",
    summary="R − p·invalid normalised over the group's step rows (a rollout weighs by its "
            "length): the GRPO baseline the G2PO and GiGPO papers report",
    params={"mode": MODE_DOC, "penalty": PENALTY_DOC},
    episode="step rows",
    original="verl-agent's multi-turn GRPO (one row per step)",
)
def grpo_steps(ix: StepIndex, mode: NormMode = "mean_std_norm",
               penalty: float = 0.1) -> dict[str, np.ndarray]:
    """``adv`` (n_steps,): multi-turn GRPO as verl-agent trains it, one row per step, score
    R_i - penalty * invalid normalised over all step rows of the group (a long trajectory weighs
    more); a group of one step row uses mean 0, std 1. Equal to G2PO's episode term."""
    return {"adv": episode_advantage(ix, penalty, mode)}


@register_estimator(
    "rloo",
    title="RLOO",
    summary="R minus the mean reward of the group's other rollouts",
    episode="others",
    original="verl compute_rloo_outcome_advantage, fed one row per trajectory",
)
def rloo(ix: StepIndex) -> dict[str, np.ndarray]:
    """``adv`` (n_steps,): R_i minus the mean reward of the group's other trajectories; a lone
    trajectory has no baseline and gets 0 (verl's ``compute_rloo_outcome_advantage`` gives R)."""
    count = np.bincount(ix.traj_group, minlength=ix.n_groups)
    total = np.bincount(ix.traj_group, weights=ix.traj_reward, minlength=ix.n_groups)
    k = count[ix.traj_group]
    others = (total[ix.traj_group] - ix.traj_reward) / np.maximum(k - 1, 1)
    per_traj = np.where(k > 1, ix.traj_reward - others, 0.0)
    return {"adv": per_traj[ix.traj]}
