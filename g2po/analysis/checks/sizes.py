"""Group sizes against the run's usual size.

- ``partial_group``: a group holding fewer rollouts than the run's usual group size (the size
  of at least half its groups): rollouts lost on the way (failed generations dropped, a group
  id split in two). Counted from the whole run (``whole``: the missing rollouts); severity:
  the missing share, 1 − n / usual (3 of 8: 0.625).
- ``singleton``: a group of one rollout has nothing to compare with: GRPO and G2PO's episode
  term give it 0 (severity 1). Where most groups are of one rollout (a group key per rollout,
  as in rLLM #605 and #924, makes every group one) the run's weighing leaves no group ranked
  by it and it is said once for the run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check

__all__ = ["PARTIAL", "SINGLETON", "usual_size"]


def usual_size(table: pd.DataFrame) -> int:
    """The run's usual group size: the size of at least half its groups (two or more); 0
    when no size is that common (groups of every size: nothing to hold a group against)."""
    sizes = table["rollouts"].to_numpy(dtype=np.int64)
    if not len(sizes):
        return 0
    values, counts = np.unique(sizes, return_counts=True)
    top = counts.max()
    if top < 2 or 2 * top < len(sizes):
        return 0
    return int(values[counts == top].max())


def _placeholder(batch: Batch) -> dict[str, np.ndarray]:
    return {"count": np.zeros(batch.sig.ix.n_groups, dtype=np.int64)}


def _missing(table: pd.DataFrame) -> dict[str, np.ndarray]:
    if "rollouts" not in table.columns:  # a table cut to a few columns: nothing to count
        return {"count": table["alarm_partial_group"].to_numpy(dtype=np.int64)}
    usual = usual_size(table)
    sizes = table["rollouts"].to_numpy(dtype=np.int64)
    return {"count": np.where(sizes < usual, usual - sizes, 0).astype(np.int64)}


def _partial_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    usual = max(usual_size(table), 1)
    return where(fires_of(table, "partial_group"),
                 table["alarm_partial_group"].to_numpy(float) / usual)


def _partial_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    usual = usual_size(table)
    (n,) = at_rows(table, rows, "rollouts")
    return [f"partial group: {a} of the run's usual {usual} rollouts" for a in n]


def _partial_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return (f"groups hold fewer rollouts than the run's usual {usual_size(table)}: rollouts "
            "were lost (generations dropped, a group id split in two), so these baselines "
            "rest on fewer samples than the rest.")


def _partial_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("find where rollouts are dropped or a group id is split (the trainer's filters, "
            "the loader's group_id mapping).")


def _partial_alarm(view: GroupView) -> Alarm | None:
    row = view.row  # the usual size is the run's: said where the caller has the group's row
    if row is None or not row.get("alarm_partial_group"):
        return None
    have, missing = int(row["rollouts"]), int(row["alarm_partial_group"])
    steps = view.graph.steps
    return Alarm("partial_group", f"Partial group: {have} of {have + missing}",
                 f"This group holds {have} rollouts where the run's usual group holds "
                 f"{have + missing}: its baselines rest on fewer samples. Fix: "
                 + _partial_fix(pd.DataFrame(), np.zeros(0, bool), "g2po"), missing,
                 steps[["traj_id", "t"]].reset_index(drop=True))


PARTIAL = register_check(Check(
    kind="partial_group", title="Partial group", measure=_placeholder,
    severity=_partial_severity, reason=_partial_reason, run_text=_partial_run_text,
    fix=_partial_fix, alarm=_partial_alarm, whole=_missing, order=2))


def _singleton_measure(batch: Batch) -> dict[str, np.ndarray]:
    rollouts = np.bincount(batch.sig.ix.traj_group, minlength=batch.sig.ix.n_groups)
    return {"count": (rollouts == 1).astype(np.int64)}


def _singleton_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "singleton"), 1.0)


def _singleton_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return ["a group of one rollout: nothing to compare" for _ in rows]


def _singleton_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    every = bool(fires.all())
    return (("every group holds a single rollout" if every else
             f"{int(fires.sum())} group(s) hold a single rollout")
            + ": nothing to compare within them, so GRPO and G2PO's episode term give their "
            "steps 0" + (". The group key is probably one per rollout (a trajectory id "
                         "where the task's id is meant)." if every else "."))


def _singleton_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("group the N rollouts of one task instance under one group id (verl's uid; the "
            "loader's group_id mapping).")


def _singleton_alarm(view: GroupView) -> Alarm | None:
    if not view.measured["count"]:
        return None
    steps = view.graph.steps
    return Alarm("singleton", "One rollout", "This group holds a single rollout: nothing to "
                 "compare, so GRPO and G2PO's episode term give its steps 0. Fix: "
                 + _singleton_fix(pd.DataFrame(), np.zeros(0, bool), "g2po"), 1,
                 steps[["traj_id", "t"]].reset_index(drop=True))


SINGLETON = register_check(Check(
    kind="singleton", title="One rollout", measure=_singleton_measure,
    severity=_singleton_severity,
    reason=_singleton_reason, run_text=_singleton_run_text, fix=_singleton_fix,
    alarm=_singleton_alarm, order=3))
