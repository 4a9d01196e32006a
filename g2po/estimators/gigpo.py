"""GiGPO (Feng et al. 2025) as verl-agent computes it: discounted step returns normalised within
anchor-state groups, plus the episode term.

Original: verl-agent ``gigpo/core_gigpo.py`` (``compute_gigpo_outcome_advantage``), fed by its
``verl/trainer/ppo/ray_trainer.py``, which discounts the environment rewards first
(``compute_step_discounted_returns``) and only then subtracts the invalid-action penalty from each
step's return and from the episode score (``apply_invalid_action_penalty``).
"""

from __future__ import annotations

import numpy as np

from g2po.estimators.g2po import EPISODE_PART, MODE_DOC, PENALTY_DOC, episode_advantage
from g2po.estimators.registry import register_estimator
from g2po.estimators.spec import Part
from g2po.index import StepIndex
from g2po.segments import NormMode, discounted_suffix_sum, powers, segment_norm
from g2po.values import check_gamma

__all__ = ["gigpo", "discounted_returns", "step_returns", "RETURN_DOCS"]

#: The parameters of GiGPO's step returns, as GiGPO and HGPO take them.
RETURN_DOCS = {
    "gamma": "discount γ of the step returns G = r + γ·G'",
    "penalty": PENALTY_DOC + ", from each step's own return after the discounting",
    "step_rewards": "false: the environment reward is R on the last step; true: the logged "
                    "step_reward column",
}


def discounted_returns(ix: StepIndex, rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_{i,t} = r_{i,t} + gamma * G_{i,t+1} inside each trajectory, (n_steps,) float64.

    Computed per trajectory (:func:`g2po.segments.discounted_suffix_sum`): no term ever crosses
    a trajectory's boundary."""
    return discounted_suffix_sum(rewards, ix.order, ix.remaining, gamma)


def step_returns(ix: StepIndex, gamma: float, penalty: float, *, step_rewards: bool = False,
                 penalty_in_return: bool = False, name: str = "gigpo") -> np.ndarray:
    """GiGPO's penalised step return G' (n_steps,) float64, as verl-agent's trainers feed it
    to GiGPO and HGPO: the environment reward r (R_i on a trajectory's last step, 0 before
    it; with ``step_rewards`` the table's ``step_reward`` column) discounted per trajectory,
    **then** ``penalty`` * invalid subtracted from each step's own return. With
    ``penalty_in_return`` the penalty enters the discounted sum instead (r - penalty·invalid),
    so an invalid action also lowers every earlier step's return. ``name`` is the estimator
    named in errors."""
    check_gamma(gamma)
    if step_rewards:
        if ix.step_reward is None:
            raise ValueError(f"estimator {name!r}: step_rewards=True needs a 'step_reward' "
                             "column without missing values")
        reward = ix.step_reward
    else:
        reward = np.where(ix.next_row < 0, ix.reward, 0.0)
    if penalty_in_return:
        return discounted_returns(ix, reward - penalty * ix.invalid, gamma)
    if step_rewards:
        return discounted_returns(ix, reward, gamma) - penalty * ix.invalid
    # G_{i,t} = gamma^(T_i-1-t) * R_i: one lookup per row instead of a scan
    return powers(gamma, ix.remaining) * ix.reward - penalty * ix.invalid


@register_estimator(
    "gigpo",
    title="GiGPO",
    summary="A^EP + ω·A^S: the episode term plus the discounted return normalised over the "
            "steps of the same anchor state",
    params={**RETURN_DOCS, "mode": MODE_DOC, "omega": "weight ω of the step term",
            "penalty_in_return": "true: the penalty enters the discounted sum instead, so an "
                                 "invalid action also lowers every earlier step's return"},
    parts=(EPISODE_PART,
           Part("adv_step", "A^S", "step term", "omega", explain="peers",
                of="its discounted return is")),
    original="verl-agent gigpo/core_gigpo.py (compute_gigpo_outcome_advantage)",
)
def gigpo(
    ix: StepIndex,
    gamma: float = 0.95,
    omega: float = 1.0,
    mode: NormMode = "mean_norm",
    penalty: float = 0.1,
    penalty_in_return: bool = False,
    step_rewards: bool = False,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,): ``adv`` = adv_ep + omega * adv_step, ``adv_ep`` (G2PO's episode term),
    ``adv_step`` (norm of the penalised return over the anchor-state group, singletons 0),
    ``return`` the penalised step return G'.

    The environment reward r is R_i on a trajectory's last step and 0 before it (with
    ``step_rewards``, the table's ``step_reward`` column, as verl-agent's per-step ``rewards``), so
    G_{i,t} = gamma^(T_i-1-t) * R_i and G' = G - penalty * invalid (verl-agent's order). With
    ``penalty_in_return`` the penalty enters the discounted sum instead (r - penalty·invalid), so
    an invalid action also lowers every earlier step's return."""
    returns = step_returns(ix, gamma, penalty, step_rewards=step_rewards,
                           penalty_in_return=penalty_in_return, name="gigpo")
    adv_step = segment_norm(returns, ix.node, ix.n_nodes, mode, order=ix.order)
    adv_ep = episode_advantage(ix, penalty, mode)
    return {"adv": adv_ep + omega * adv_step, "adv_ep": adv_ep, "adv_step": adv_step,
            "return": returns}
