"""Length weighting: where a group's rollouts differ in length, a statistic over its step rows
weights each rollout by its length. G2PO's episode term and ``grpo_steps`` normalise over step
rows by design (the authors' code does; docs/estimators.md), but a statistic meant per rollout
(the success rate, the mean reward, a reward–length correlation) computed over the rows reads
another number (NeMo RL labs-molt #65: a −0.94 reward–length correlation that was this).
Information, said once for the run with the size of the gap; never ranked. Fires where the
share of step rows that belong to wins and the share of rollouts that won differ by
:data:`LENGTH_GAP` or more.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check

__all__ = ["CHECK", "LENGTH_GAP"]

#: A gap (in success-rate points) between step rows and rollouts that is worth saying.
LENGTH_GAP = 0.2


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    ix, G = sig.ix, sig.ix.n_groups
    n_steps = np.bincount(ix.group, minlength=G)
    rollouts = np.bincount(ix.traj_group, minlength=G)
    row_rate = sig.per_group(sig.success[ix.traj], "steps") / np.maximum(n_steps, 1)
    rate = sig.per_group(sig.success, "traj") / np.maximum(rollouts, 1)
    return {"count": (np.abs(row_rate - rate) >= LENGTH_GAP).astype(np.int64),
            "row_success_rate": row_rate}


def _never(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return np.zeros(len(table))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    by_rows, by_rollouts = at_rows(table, rows, "row_success_rate", "success_rate")
    return [f"step rows weight rollouts by length: {a:.0%} of rows are wins, {b:.0%} of "
            "rollouts won" for a, b in zip(by_rows, by_rollouts, strict=True)]


def _rates(table: pd.DataFrame) -> tuple[float, float]:
    steps = table["steps"].to_numpy(float)
    rollouts = table["rollouts"].to_numpy(float)
    rows = float((table["row_success_rate"].to_numpy(float) * steps).sum() / max(steps.sum(), 1))
    per = float((table["success_rate"].to_numpy(float) * rollouts).sum()
                / max(rollouts.sum(), 1))
    return rows, per


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    rows, per = _rates(table)
    return (f"step rows weight rollouts by their length: over this run's step rows {rows:.0%} "
            f"belong to wins, over its rollouts {per:.0%} won. G2PO's episode term and "
            "grpo_steps normalise over step rows by design (as the authors' code does); a "
            "statistic meant per rollout (success rate, mean reward, a reward–length "
            "correlation) computed over these rows reads the first number.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("compute per-rollout statistics over one row per rollout (the trajectory table), "
            "not over step rows.")


def _alarm(view: GroupView) -> Alarm | None:
    return None  # a statistic's property, not the group's credit: said for the run


CHECK = register_check(Check(
    kind="length_weighting", title="Length-weighted rows", measure=_measure, severity=_never,
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm,
    columns={"row_success_rate": "wins among step rows"}, defect=False, order=97))
