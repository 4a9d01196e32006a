"""Groups whose rollouts agree: two checks.

- ``collapsed``: every rollout the same sequence of states and actions: nothing to compare,
  so whatever advantage an estimator gives there (G2PO's edge term from discounting) is an
  artifact. Severity 1.
- ``all_success``: every rollout succeeded: GRPO gives no signal, G2PO's edge term still ranks
  the steps (by depth, through γ). Severity 0.6 under G2PO.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import fires_of, spread, where
from g2po.analysis.checks.no_signal import zero_column
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import adv_unit, pairs

__all__ = ["COLLAPSED", "ALL_SUCCESS"]


def _rollouts(batch: Batch) -> np.ndarray:
    return np.bincount(batch.sig.ix.traj_group, minlength=batch.sig.ix.n_groups)


# -- collapsed ---------------------------------------------------------------------------------

def _collapsed_measure(batch: Batch) -> dict[str, np.ndarray]:
    return {"count": np.where(batch.sig.collapsed, _rollouts(batch), 0)}


def _collapsed_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "collapsed"), 1.0)


def _collapsed_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    out = []
    for i in rows:
        text = f"collapsed: {table['rollouts'].iat[i]} identical rollouts"
        if estimator == "g2po" and table["adv_max"].iat[i] > table["adv_min"].iat[i]:
            text += f" (G2PO's {spread(table, i)} is the discount's artifact)"
        out.append(text)
    return out


def _collapsed_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "every rollout of a group is the same: the policy has collapsed."


def _collapsed_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "more exploration (a higher sampling temperature, an entropy bonus)."


def _collapsed_alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.collapsed[0]:
        return None
    adv, n_traj = sig.g2po["adv"], sig.ix.n_traj
    detail = f"All {n_traj} rollouts are the same sequence of states and actions: there " \
             "is nothing to compare, so whatever advantage an estimator gives here is an " \
             "artifact"
    if np.abs(adv).max() > 1e-6:
        detail += f" (G2PO's A from {adv.min():+.2f} to {adv.max():+.2f}, " \
                  f"{adv_unit(view.params.mode)}, comes from the discount in the edge term: " \
                  "identical steps ranked by depth alone)"
    return Alarm("collapsed", f"Collapsed: {n_traj} identical rollouts",
                 detail + ". The policy has collapsed on this task.", n_traj, pairs(steps))


COLLAPSED = register_check(Check(
    kind="collapsed", title="Collapsed", measure=_collapsed_measure,
    severity=_collapsed_severity, reason=_collapsed_reason, run_text=_collapsed_run_text,
    fix=_collapsed_fix, alarm=_collapsed_alarm, order=10))


# -- all succeeded -----------------------------------------------------------------------------

def _all_success_measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    rollouts = _rollouts(batch)
    wins = sig.per_group(sig.success, "traj")
    return {"count": np.where((wins == rollouts) & (rollouts > 0), rollouts, 0)}


def _all_success_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    zero = table[zero_column(estimator)].to_numpy(dtype=bool)
    return where(fires_of(table, "all_success") & ~zero & (estimator == "g2po"), 0.6)


def _all_success_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return [f"all {table['rollouts'].iat[i]} succeeded: G2PO ranks steps by depth alone, "
            f"{spread(table, i)}" for i in rows]


def _all_success_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "every rollout succeeds: the tasks are too easy to teach anything."


def _all_success_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "harder tasks."


def _all_success_alarm(view: GroupView) -> Alarm | None:
    if not view.measured["count"]:
        return None
    sig, steps = view.sig, view.graph.steps
    adv, n_traj = sig.g2po["adv"], sig.ix.n_traj
    return Alarm(
        "all_success", f"All {n_traj} rollouts succeeded",
        "No outcome to compare: GRPO gives every step 0; G2PO's edge term still ranks the "
        f"steps (A from {adv.min():+.2f} to {adv.max():+.2f}, {adv_unit(view.params.mode)}), "
        "by how soon each reaches the goal (γ).", n_traj, pairs(steps))


ALL_SUCCESS = register_check(Check(
    kind="all_success", title="All succeeded", measure=_all_success_measure,
    severity=_all_success_severity, reason=_all_success_reason,
    run_text=_all_success_run_text, fix=_all_success_fix, alarm=_all_success_alarm,
    order=40))
