"""Solved is not broken: three checks on groups whose rollouts agree.

- ``converged`` (progress, never ranked): every rollout the same winning path, as short as the
  shortest win of its task seen anywhere in the run. Said once for the run, with its share per
  training step, and, where G2PO still gives the identical steps non-zero advantages from the
  discount alone (its edge term standardises TD errors that differ only by depth), what that
  does to the first step of the optimal path.
- ``collapsed`` (a defect): every rollout the same sequence onto a losing path, or onto a
  winning one longer than the task's shortest win (a wandering path). Severity: the share of
  failures, plus for wins the share of the path that is detour, (L − L*) / L.
- ``all_success`` (progress): every rollout won, along different paths; GRPO gets nothing from
  the group, G2PO's edge term ranks the paths by length (γ).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import (
    at_rows,
    per_step_shares,
    spread,
    task_shortest_win,
    where,
)
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import adv_unit, pairs

__all__ = ["COLLAPSED", "CONVERGED", "ALL_SUCCESS", "converged_rows"]


def _won(batch: Batch) -> np.ndarray:
    sig = batch.sig
    rollouts = np.bincount(sig.ix.traj_group, minlength=sig.ix.n_groups)
    wins = sig.per_group(sig.success, "traj")
    return (wins == rollouts) & (rollouts > 0)


def _rollouts(batch: Batch) -> np.ndarray:
    return np.bincount(batch.sig.ix.traj_group, minlength=batch.sig.ix.n_groups)


def _identical(table: pd.DataFrame) -> np.ndarray:
    return table["alarm_collapsed"].to_numpy() > 0


def converged_rows(table: pd.DataFrame) -> np.ndarray:
    """(n_rows,) bool: identical winning rollouts as short as the task's shortest win."""
    won = table["success_rate"].to_numpy(float) == 1
    length = table["longest"].to_numpy(dtype=np.float64)
    return _identical(table) & won & (length <= task_shortest_win(table))


# -- collapsed ---------------------------------------------------------------------------------

def _collapsed_measure(batch: Batch) -> dict[str, np.ndarray]:
    return {"count": np.where(batch.sig.collapsed, _rollouts(batch), 0)}


def _detour(table: pd.DataFrame) -> np.ndarray:
    """(n_rows,) the share of an identical winning path that is detour: (L − L*) / L."""
    length = table["longest"].to_numpy(dtype=np.float64)
    best = task_shortest_win(table)
    return np.clip((length - np.nan_to_num(best, nan=length)) / np.maximum(length, 1), 0, 1)


def _collapsed_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    success = table["success_rate"].to_numpy(float)
    return where(_identical(table), (1 - success) + success * _detour(table))


def _collapsed_fires(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return _collapsed_severity(table, estimator) > 0


def _collapsed_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    best = task_shortest_win(table)[np.asarray(rows, dtype=np.int64)]
    cols = at_rows(table, rows, "rollouts", "success_rate", "longest", "adv_min", "adv_max")
    out = []
    for (n, rate, length, lo, hi), shortest in zip(zip(*cols, strict=True), best, strict=True):
        if rate < 1:
            text = f"collapsed: {n} identical rollouts onto a losing path"
        else:
            text = (f"collapsed: {n} identical wins by a {length}-step path; the task's "
                    f"shortest win takes {shortest:g}")
        if estimator == "g2po" and hi > lo:
            text += f" (G2PO's {spread(lo, hi)} is the discount's artifact)"
        out.append(text)
    return out


def _collapsed_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    losing = int((fires & (table["success_rate"].to_numpy(float) < 1)).sum())
    return (f"every rollout of a group is the same sequence ({losing} onto a losing path, "
            f"{int(fires.sum()) - losing} onto a win longer than the task's shortest): the "
            "policy stopped exploring these tasks before solving them well.")


def _collapsed_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("more exploration (a higher sampling temperature, an entropy bonus), or a smaller "
            "learning rate; look at one group to see the path it repeats.")


def _collapsed_alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.collapsed[0] or sig.success.all():
        return None
    adv, n_traj = sig.g2po["adv"], sig.ix.n_traj
    detail = f"All {n_traj} rollouts are the same sequence of states and actions onto a " \
             "losing path: there is nothing to compare, so whatever advantage an estimator " \
             "gives here is an artifact"
    if np.abs(adv).max() > 1e-6:
        detail += f" (G2PO's A from {adv.min():+.2f} to {adv.max():+.2f}, " \
                  f"{adv_unit(view.params.mode)}, comes from the discount in the edge term: " \
                  "identical steps ranked by depth alone)"
    return Alarm("collapsed", f"Collapsed: {n_traj} identical rollouts",
                 detail + ". The policy has collapsed on this task.", n_traj, pairs(steps))


COLLAPSED = register_check(Check(
    kind="collapsed", title="Collapsed", measure=_collapsed_measure,
    severity=_collapsed_severity, reason=_collapsed_reason, run_text=_collapsed_run_text,
    fix=_collapsed_fix, alarm=_collapsed_alarm, fires=_collapsed_fires, order=9))


# -- converged ---------------------------------------------------------------------------------

def _converged_measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    ix = sig.ix
    first = ix.t == 0
    at_first = np.bincount(ix.group, weights=np.where(first, sig.g2po["adv"], 0.0),
                           minlength=ix.n_groups)
    n_first = np.bincount(ix.group, weights=first.astype(np.float64), minlength=ix.n_groups)
    return {"count": np.where(sig.collapsed & _won(batch), _rollouts(batch), 0),
            "adv_first": at_first / np.maximum(n_first, 1)}


def _nothing(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return np.zeros(len(table))


def _converged_fires(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return converged_rows(table)


def _converged_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    n, length = at_rows(table, rows, "rollouts", "longest")
    return [f"converged: {a} identical wins by the shortest path seen ({b} steps)"
            for a, b in zip(n, length, strict=True)]


def _converged_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    text = ("every rollout the same win by the shortest path the run has seen for the task: "
            "progress, not a defect")
    steps = per_step_shares(table, fires)
    text += f" ({steps})." if steps else "."
    lo, hi = table["adv_min"].to_numpy()[fires], table["adv_max"].to_numpy()[fires]
    if estimator == "g2po" and fires.any() and (hi - lo).max() > 1e-6:
        first = float(table["adv_first"].to_numpy()[fires].mean())
        text += (f" G2PO still gives their identical steps advantages from {lo.min():+.2f} to "
                 f"{hi.max():+.2f} from the discount alone (its edge term standardises TD "
                 "errors that differ only by depth): the first step of the optimal path gets "
                 f"A = {first:+.2f} on average, so every time such a group is sampled the "
                 f"policy is pushed {'away from' if first < 0 else 'towards'} the step that "
                 "starts the win.")
    return text


def _converged_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if estimator == "g2po":
        return ("nothing for the groups themselves; against the discount's artifact, mode = "
                "mean_norm keeps it at the size of the TD differences, or drop solved tasks "
                "from the pool.")
    return "nothing: solved tasks; drop them from the pool to spend rollouts elsewhere."


def _converged_alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.collapsed[0] or not sig.success.all():
        return None
    adv, n_traj = sig.g2po["adv"], sig.ix.n_traj
    detail = (f"All {n_traj} rollouts are the same winning path of "
              f"{int(sig.traj_length[0])} steps: converged (progress, if no shorter win of "
              "this task exists; the Groups page compares with the whole run).")
    if np.abs(adv).max() > 1e-6:
        first = float(adv[sig.ix.t == 0].mean())
        detail += (f" G2PO's A from {adv.min():+.2f} to {adv.max():+.2f} "
                   f"({adv_unit(view.params.mode)}) comes from the discount alone: the first "
                   f"step gets {first:+.2f}.")
    return Alarm("converged", f"Converged: {n_traj} identical wins", detail, n_traj,
                 pairs(steps))


CONVERGED = register_check(Check(
    kind="converged", title="Converged", measure=_converged_measure, severity=_nothing,
    reason=_converged_reason, run_text=_converged_run_text, fix=_converged_fix,
    alarm=_converged_alarm, columns={"adv_first": "A at the first step"}, defect=False,
    fires=_converged_fires, order=90))


# -- all succeeded, along different paths ------------------------------------------------------

def _all_success_measure(batch: Batch) -> dict[str, np.ndarray]:
    return {"count": np.where(_won(batch), _rollouts(batch), 0)}


def _all_success_fires(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return (table["alarm_all_success"].to_numpy() > 0) & ~_identical(table)


def _all_success_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    n, lo, hi = at_rows(table, rows, "rollouts", "adv_min", "adv_max")
    return [f"all {a} succeeded (solved): G2PO ranks the paths by length, {spread(b, c)}"
            for a, b, c in zip(n, lo, hi, strict=True)]


def _all_success_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    text = ("every rollout succeeded, along different paths: progress. GRPO gets no signal "
            "from these groups; G2PO's edge term still ranks the paths by length (through γ)")
    steps = per_step_shares(table, fires)
    return text + (f" ({steps})." if steps else ".")


def _all_success_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "nothing: solved tasks; harder tasks teach more once most groups are solved."


def _all_success_alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.success.all() or sig.collapsed[0] or not sig.ix.n_traj:
        return None
    adv, n_traj = sig.g2po["adv"], sig.ix.n_traj
    return Alarm(
        "all_success", f"All {n_traj} rollouts succeeded",
        "Solved (progress). No outcome to compare: GRPO gives every step 0; G2PO's edge term "
        f"still ranks the steps (A from {adv.min():+.2f} to {adv.max():+.2f}, "
        f"{adv_unit(view.params.mode)}), by how soon each reaches the goal (γ).",
        n_traj, pairs(steps))


ALL_SUCCESS = register_check(Check(
    kind="all_success", title="All succeeded", measure=_all_success_measure,
    severity=_nothing, reason=_all_success_reason, run_text=_all_success_run_text,
    fix=_all_success_fix, alarm=_all_success_alarm, defect=False, fires=_all_success_fires,
    order=91))
