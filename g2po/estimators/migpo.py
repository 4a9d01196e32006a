"""MiGPO (Milestone-Guided Policy Optimization, ZJU-REAL/BEACON): GiGPO's episode term plus a
milestone term, each step's milestone reward normalised over the group's steps that have as many
milestones behind them.

The environment flags the steps whose action achieved a milestone (the step column
``milestone_achieved``). Within a trajectory, a step d steps before the next milestone (at or
after it) gets the reward 10·γ^d, a step after the last milestone 0; the invalid-action
penalty is subtracted from each step's own reward. A step's *segment* is the number of
milestones its trajectory achieved before it; the milestone term normalises the rewards over
the steps of the group in the same segment.

Original: ZJU-REAL/BEACON ``migpo/core_migpo.py`` — ``compute_migpo_advantage`` with the step
rewards of ``compute_migpo_step_rewards_dynamic`` and the groups of
``build_segment_groups_dynamic`` — called by its ``verl/trainer/ppo/ray_trainer.py``, which
reads the flags from the environment's ``info`` (WebShop's milestone detector), subtracts the
penalty from the step rewards (``apply_invalid_action_penalty``) and then computes the
advantage. ``docs/estimators.md`` lists every choice made here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.estimators.g2po import EPISODE_PART, MODE_DOC, PENALTY_DOC, episode_advantage
from g2po.estimators.registry import register_estimator
from g2po.estimators.spec import Part, StepColumn
from g2po.index import MAX_ABS_REWARD, StepIndex
from g2po.segments import NormMode, check_mode, powers, segment_norm

__all__ = ["migpo", "milestone_segments", "MILESTONE_COLUMN"]

#: The step column of the milestone flags (the original's batch key).
MILESTONE_COLUMN = "milestone_achieved"


def milestone_segments(ix: StepIndex, achieved: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each step's segment and its distance to the milestone that closes it.

    Parameters
    ----------
    ix : the step table's codes.
    achieved : (n_steps,) bool, True on the steps whose action achieved a milestone.

    Returns
    -------
    segment : (n_steps,) int64, the milestones achieved at earlier steps of the step's
        trajectory.
    distance : (n_steps,) int64, steps from this one to the first milestone at or after it in
        its trajectory (0 on a milestone), -1 where none is left.

    Computed in the canonical order (trajectory by trajectory, each in step order), so no
    count crosses a trajectory's boundary and the row order of the table changes nothing.
    """
    order = ix.order
    n = len(order)
    flag = np.asarray(achieved, dtype=bool)[order].astype(np.int64)
    pos = np.arange(n, dtype=np.int64)
    # in this order a trajectory's steps 0 … T-1 are consecutive: its first and last position
    start, end = pos - ix.t[order], pos + ix.remaining[order]
    before = np.cumsum(flag) - flag
    segment = before - before[start]
    upcoming = np.minimum.accumulate(np.where(flag > 0, pos, n)[::-1])[::-1]  # next milestone
    distance = np.where(upcoming <= end, upcoming - pos, -1)
    out_segment = np.empty(n, dtype=np.int64)
    out_distance = np.empty(n, dtype=np.int64)
    out_segment[order] = segment
    out_distance[order] = distance
    return out_segment, out_distance


def _check(gamma: float, milestone_reward: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"estimator 'migpo': parameter 'gamma' must be in [0, 1], got {gamma}")
    if not abs(milestone_reward) <= MAX_ABS_REWARD:
        raise ValueError(f"estimator 'migpo': parameter 'milestone_reward' must be at most "
                         f"{MAX_ABS_REWARD:g} in magnitude, got {milestone_reward}")


@register_estimator(
    "migpo",
    title="MiGPO",
    summary="A^EP + ω·A^M: the episode term plus the milestone reward 10·γ^(steps to the next "
            "milestone), normalised over the group's steps with as many milestones behind them",
    params={"gamma": "decay γ of the milestone rewards: a step d steps before its segment's "
                     "milestone gets milestone_reward·γ^d (BEACON's scripts: 0.95)",
            "omega": "weight ω of the milestone term (the original's step_advantage_w)",
            "mode": MODE_DOC,
            "penalty": PENALTY_DOC + ", from each step's milestone reward and from the episode "
                                     "score",
            "milestone_reward": "reward of the milestone step itself (the original's fixed "
                                "10, GiGPO's scale)"},
    columns=(StepColumn(MILESTONE_COLUMN, "bool",
                        "True on the step whose action achieved a milestone (BEACON's "
                        "environments report it per step: WebShop's milestone_achieved, "
                        "SciWorld's subgoal_completed)"),),
    parts=(EPISODE_PART,
           Part("adv_step", "A^M", "milestone term", "omega", explain="peers",
                of="its milestone reward is", peers="segment",
                among="with as many milestones behind them")),
    original="ZJU-REAL/BEACON migpo/core_migpo.py (compute_migpo_advantage, dynamic milestones)",
)
def migpo(
    ix: StepIndex,
    gamma: float = 0.99,
    omega: float = 1.0,
    mode: NormMode = "mean_norm",
    penalty: float = 0.1,
    milestone_reward: float = 10.0,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,): ``adv`` = adv_ep + omega * adv_step, ``adv_ep`` (G2PO's episode
    term, in ``mode``), ``adv_step`` (the milestone reward normalised over the group's steps of
    the same segment; a step alone in its segment gets 0), ``return`` the penalised milestone
    reward milestone_reward·γ^d − penalty·invalid (γ^d as 0 after the last milestone), and the
    int64 ``segment`` (milestones achieved before the step) and ``to_milestone`` (d, −1 where
    no milestone is left)."""
    check_mode(mode)
    _check(gamma, milestone_reward)
    segment, distance = milestone_segments(ix, ix.columns[MILESTONE_COLUMN])
    decay = powers(gamma, np.maximum(distance, 0))
    returns = np.where(distance >= 0, milestone_reward * decay, 0.0) - penalty * ix.invalid
    # the sets are (group, milestones behind); their numbering changes no number, as every
    # sum runs in the canonical order
    width = np.int64(int(segment.max()) + 1 if ix.n_steps else 1)
    sets, keys = pd.factorize(ix.group * width + segment)
    adv_step = segment_norm(returns, sets.astype(np.int64), len(keys), mode, order=ix.order)
    adv_ep = episode_advantage(ix, penalty, mode)
    return {"adv": adv_ep + omega * adv_step, "adv_ep": adv_ep, "adv_step": adv_step,
            "return": returns, "segment": segment, "to_milestone": distance}
