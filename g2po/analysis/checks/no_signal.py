"""No training signal: every advantage of the group is ~0 under an estimator (said per
estimator: G2PO's graph terms still rank the steps of an all-success group, GRPO's outcome term
does not), so the group teaches the policy nothing. Severity 1 for the estimator the user
trains with.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import estimator_name, where
from g2po.analysis.checks.registry import ESTIMATORS, Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import adv_unit, names, pairs

__all__ = ["CHECK", "zero_column"]


def zero_column(estimator: str) -> str:
    """The table's flag of ``estimator``'s all-~0 groups."""
    return "no_signal" if estimator == "g2po" else "no_signal_grpo"


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    any_zero = np.logical_or.reduce(list(sig.zero.values()))
    n_steps = np.bincount(sig.ix.group, minlength=sig.ix.n_groups)
    return {"count": np.where(any_zero, n_steps, 0)}


def _zero(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return table[zero_column(estimator)].to_numpy(dtype=bool)


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(_zero(table, estimator), 1.0)


def validity_words(invalid_rate: float) -> str:
    """", no invalid action" where the log says so."""
    return ", no invalid action" if invalid_rate == 0 else ""


def _why(table: pd.DataFrame, i: int) -> str:
    if table["reward_std"].iat[i] > 0:
        return "no step's score differs from its reference"
    return (f"all {table['rollouts'].iat[i]} rollouts got reward {table['reward_mean'].iat[i]:g}"
            + validity_words(float(table["invalid_rate"].iat[i])))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return [f"no signal under {estimator_name(estimator)}: {_why(table, i)}" for i in rows]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    success = table["success_rate"].to_numpy(float)
    if not np.nanmax(success, initial=0.0) > 0:
        return ("groups give no training signal. Likely cause: a success reward the rewards "
                "never reach.")
    solved, failed = int((success[fires] == 1).sum()), int((success[fires] == 0).sum())
    cause = ("tasks the policy has solved (a run that learned them, or tasks too easy)"
             if solved >= failed else "tasks the policy cannot solve yet")
    return (f"groups give no training signal ({solved} where every rollout succeeded, {failed} "
            f"where every rollout failed). Likely cause: {cause}; rollouts do reach the "
            "success reward in other groups, so it is not the outcome rule.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if not np.nanmax(table["success_rate"].to_numpy(float), initial=0.0) > 0:
        return "the outcome rule's success reward (--success-reward)."
    return "a task pool of harder (or easier) tasks, or more rollouts per task."


def _alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not view.measured["count"]:
        return None
    none = [ESTIMATORS[k] for k, z in sig.zero.items() if z[0]]
    some = [k for k, z in sig.zero.items() if not z[0]]
    ix, cols = sig.ix, sig.g2po
    invalid = ~steps["is_action_valid"].to_numpy(dtype=bool)
    same = np.ptp(ix.traj_reward) == 0 if ix.n_traj else True
    why = (f"all {ix.n_traj} rollouts got reward {ix.traj_reward[0]:g}"
           + ("" if invalid.any() else " and no action was invalid")) if same else \
        "no step's score differs from its reference"
    detail = f"{names(none)} give{'s' if len(none) == 1 else ''} every step an " \
             f"advantage of ~0: {why}, so this group teaches the policy nothing" + \
             (" under " + names(none) if some else "") + "."
    if "g2po" in some:
        adv = cols["adv"]
        detail += (f" G2PO still ranks its steps through the graph terms (mean |A| "
                   f"{np.abs(adv).mean():.3g}: A^EC from the TD errors "
                   f"{np.abs(cols['adv_ec']).mean():.3g}, A^NC within merged states "
                   f"{np.abs(cols['adv_nc']).mean():.3g}, A^EP "
                   f"{np.abs(cols['adv_ep']).mean():.3g}; {adv_unit(view.params.mode)}).")
    return Alarm("no_signal", f"No training signal: {names(none)}", detail, len(steps),
                 pairs(steps))


CHECK = register_check(Check(
    kind="no_signal", title="No training signal", measure=_measure, severity=_severity,
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm, order=11))
