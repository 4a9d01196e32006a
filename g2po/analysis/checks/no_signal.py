"""No training signal: every advantage of the group is ~0 under the estimator the user trains
with (G2PO's graph terms still rank the steps of an all-success group, GRPO's outcome term
does not), so the group teaches the policy nothing. A group every rollout of which succeeded
is the policy's progress (``all_success``, ``converged``), not this defect: severity 1 − the
success rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, estimator_name, where
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


def _fires(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return table[zero_column(estimator)].to_numpy(dtype=bool)


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(_fires(table, estimator), 1.0 - table["success_rate"].to_numpy(float))


def validity_words(invalid_rate: float) -> str:
    """", no invalid action" where the log says so; where the log holds no validity (the rate
    is NaN), that it is unknown."""
    if np.isnan(invalid_rate):
        return ", validity unknown (the log has none)"
    return ", no invalid action" if invalid_rate == 0 else ""


def _why(std: float, n: int, mean: float, invalid: float) -> str:
    if std > 0:
        return "no step's score differs from its reference"
    return f"all {n} rollouts got reward {mean:g}" + validity_words(float(invalid))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    cols = at_rows(table, rows, "reward_std", "rollouts", "reward_mean", "invalid_rate")
    return [f"no signal under {estimator_name(estimator)}: {_why(*v)}"
            for v in zip(*cols, strict=True)]


def _counts(table: pd.DataFrame, fires: np.ndarray) -> tuple[int, int]:
    success = table["success_rate"].to_numpy(float)[fires]
    return int((success == 1).sum()), int((success == 0).sum())


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    solved, failed = _counts(table, fires)
    name = estimator_name(estimator)
    said = (f"{name} gives every step of these groups an advantage of ~0 ({failed} where "
            f"every rollout failed, {solved} where every rollout succeeded: those are "
            "progress, said below)")
    if not np.nanmax(table["success_rate"].to_numpy(float), initial=0.0) > 0:
        return said + ". Likely cause: a success reward the rewards never reach."
    return said + (". Likely cause: tasks the policy cannot solve yet; rollouts do reach the "
                   "success reward in other groups, so it is not the outcome rule.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if not np.nanmax(table["success_rate"].to_numpy(float), initial=0.0) > 0:
        return "the outcome rule's success reward (--success-reward, the sidebar's rule)."
    return "a task pool with tasks the policy can sometimes solve, or more rollouts per task."


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
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm, fires=_fires, order=10))
