"""Penalty-only signal: every rollout got the same (failing) reward, so the only spread G2PO
sees is the invalid-action penalty; under ``mean_std_norm`` normalisation turns it into
unit-size advantages (invalid steps strongly negative, every valid step positive, whatever it
did). Severity: the share of the group's steps that are valid — each of them gets credit it
did not earn (0.9 at most, below a group with no signal at all).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, spread, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import REWARD_UNITS, adv_unit, pairs

__all__ = ["CHECK"]


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig, penalty = batch.sig, batch.params.penalty
    ix, G = sig.ix, sig.ix.n_groups
    n_steps = np.bincount(ix.group, minlength=G)
    rollouts = np.bincount(ix.traj_group, minlength=G)
    wins = sig.per_group(sig.success, "traj")
    r_lo, r_hi = np.full(G, np.inf), np.full(G, -np.inf)
    np.minimum.at(r_lo, ix.traj_group, ix.traj_reward)
    np.maximum.at(r_hi, ix.traj_group, ix.traj_reward)
    n_invalid = np.bincount(ix.group, weights=ix.invalid, minlength=G)
    amplified = (penalty > 0) & (n_steps > 1) & (r_lo == r_hi) & (wins == 0) & \
        (n_invalid > 0) & (n_invalid < n_steps) & (rollouts > 0)
    return {"count": np.where(amplified, n_invalid, 0).astype(np.int64)}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    valid = 1.0 - table["alarm_penalty_amplification"].to_numpy(float) / \
        np.maximum(table["steps"].to_numpy(float), 1)
    # GRPO's trajectory advantage takes no penalty: the group then has no signal at all
    return where(fires_of(table, "penalty_amplification") & (estimator == "g2po"), 0.9 * valid)


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    lo, hi, bad, n = at_rows(table, rows, "adv_min", "adv_max",
                             "alarm_penalty_amplification", "steps")
    return [f"penalty is the only signal: {spread(a, b)} ({c} invalid of {d} steps)"
            for a, b, c, d in zip(lo, hi, bad, n, strict=True)]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    said = ("every rollout gets the same reward, so the invalid-action penalty is the only "
            "signal G2PO's episode and node terms see; normalisation makes it unit-sized.")
    if not np.nanmax(table["success_rate"].to_numpy(float), initial=0.0) > 0:
        said += (" No rollout of the run succeeds: likely a success reward the rewards never "
                 "reach.")
    return said


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("check the success reward (are any rewards ever reached?), or use mode = "
            "mean_norm / a smaller penalty (-p mode=mean_norm, -p penalty=…).")


def _alarm(view: GroupView) -> Alarm | None:
    if not view.measured["count"]:
        return None
    steps, sig, params = view.graph.steps, view.sig, view.params
    invalid = ~steps["is_action_valid"].to_numpy(dtype=bool)
    rewards = steps["episode_reward"].to_numpy(dtype=np.float64)
    adv_ep = sig.g2po["adv_ep"]
    success = view.rule.success(sig.ix.traj_reward)
    outcome_word = "succeed" if success.all() else "fail" if not success.any() else \
        "get the same reward"
    return Alarm(
        "penalty_amplification", f"Penalty-only signal: {int(invalid.sum())} invalid step(s)",
        f"All rollouts {outcome_word} (reward {rewards[0]:g}): the only spread left is the "
        f"invalid-action penalty p = {params.penalty:g} {REWARD_UNITS}"
        + (", and mean_std_norm scales it to unit size. " if params.mode == "mean_std_norm"
           else ". ") +
        f"Invalid steps get A^EP ≈ {adv_ep[invalid].mean():.2f}, every valid step "
        f"≈ {adv_ep[~invalid].mean():+.2f} ({adv_unit(params.mode)}), whatever it did. "
        "Consider mode = mean_norm or a smaller penalty.",
        int(invalid.sum()), pairs(steps[invalid]))


CHECK = register_check(Check(
    kind="penalty_amplification", title="Penalty-only signal", measure=_measure,
    severity=_severity, reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm, order=30))
