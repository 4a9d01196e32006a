"""The group's rows themselves: two checks, and the repair that lets the triage go on.

- ``duplicates``: rows repeated exactly, and one trajectory id used by two rollouts of a group
  (the same step index twice with different content). The estimators refuse both, so the
  triage separates them first (:func:`separate_repeats`: exact copies counted and left out,
  each reuse of an id taken as its own rollout) and says so on the group. Severity:
  0.3 + the rollouts sharing an id / rollouts + the repeated rows / steps (at most 1).
  Loaders drop exact copies of a log's rows themselves and name them in their report.
- ``incomplete``: rollouts marked ``incomplete`` (a loader skipped a malformed line of them:
  their turns, reward or outcome may be wrong). Read when the log has the column. Severity:
  0.8 · the share of rollouts incomplete.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import pairs

__all__ = ["DUPLICATES", "INCOMPLETE", "separate_repeats", "KEY"]

#: A step's identity: the same key twice is a repeated row.
KEY = ["train_step", "group_id", "traj_id", "t"]
_COPIES, _REUSED = "_copies", "_reused_id"


def separate_repeats(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with repeated steps made readable: an exact copy of an earlier row left out
    (the kept row's ``_copies`` counts them), a step key repeated with other content taken as
    the next rollout reusing the id (its ``traj_id`` gets ``#k``, the k-th use; every row of
    a reused id has ``_reused_id``). Frames without repeats come back as they are."""
    key = [c for c in KEY if c in frame.columns]
    if not frame.duplicated(key, keep=False).any():
        return frame
    content = [c for c in frame.columns if not c.startswith("_")]
    copy = frame.duplicated(content, keep="first").to_numpy()
    kept = frame[~copy]
    copies = np.zeros(len(kept), dtype=np.int64)
    if copy.any():
        first = frame.groupby(content, sort=False, dropna=False).ngroup().to_numpy()
        extra = np.bincount(first[copy], minlength=first.max() + 1)
        copies = extra[first[~copy]]
    kept = kept.assign(**{_COPIES: copies})
    use = kept.groupby(key, sort=False, dropna=False).cumcount().to_numpy()
    reused_traj = kept.assign(_use=use).groupby(
        [c for c in key if c != "t"], sort=False, dropna=False)["_use"].transform("max")
    traj = kept["traj_id"].astype(str).to_numpy(dtype=object)
    traj = np.where(use > 0, traj + "#" + use.astype(str), traj)
    return kept.assign(traj_id=traj, **{_REUSED: reused_traj.to_numpy() > 0}) \
        .reset_index(drop=True)


def _dup_measure(batch: Batch) -> dict[str, np.ndarray]:
    sig, steps = batch.sig, batch.steps
    ix, G = sig.ix, sig.ix.n_groups
    copies = np.zeros(G, dtype=np.int64)
    reused = np.zeros(G, dtype=np.int64)
    if _COPIES in steps.columns:
        copies = np.bincount(ix.group, weights=steps[_COPIES].to_numpy(np.float64),
                             minlength=G).astype(np.int64)
        on = steps[_REUSED].to_numpy(dtype=bool) & (ix.t == 0)
        reused = sig.per_group(on, "steps").astype(np.int64)
    return {"count": copies + reused, "duplicate_rows": copies, "reused_ids": reused}


def _dup_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    share = table["reused_ids"].to_numpy(float) / np.maximum(table["rollouts"].to_numpy(), 1) \
        + table["duplicate_rows"].to_numpy(float) / np.maximum(table["steps"].to_numpy(), 1)
    return where(fires_of(table, "duplicates"), np.minimum(1.0, 0.3 + share))


def _dup_words(copies: int, reused: int) -> str:
    said = []
    if reused:
        said.append(f"{reused} rollouts share a trajectory id")
    if copies:
        said.append(f"{copies} row(s) repeated exactly")
    return " and ".join(said)


def _dup_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    copies, reused = at_rows(table, rows, "duplicate_rows", "reused_ids")
    return ["repeated rows: " + _dup_words(int(c), int(r))
            for c, r in zip(copies, reused, strict=True)]


def _dup_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("steps repeated in the log (the same group, trajectory and step twice): exact "
            "copies count a step twice, and an id reused by two rollouts merges them into one "
            "trajectory; the table takes each reuse as its own rollout.")


def _dup_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "give every rollout its own trajectory id and write each step once."


def _dup_alarm(view: GroupView) -> Alarm | None:
    if not view.measured["count"]:
        return None
    steps = view.graph.steps
    words = _dup_words(int(view.measured["duplicate_rows"]), int(view.measured["reused_ids"]))
    return Alarm("duplicates", "Repeated rows", f"{words}. Fix: "
                 + _dup_fix(pd.DataFrame(), np.zeros(0, bool), "g2po"),
                 int(view.measured["count"]), pairs(steps))


DUPLICATES = register_check(Check(
    kind="duplicates", title="Repeated rows", measure=_dup_measure, severity=_dup_severity,
    reason=_dup_reason, run_text=_dup_run_text, fix=_dup_fix, alarm=_dup_alarm,
    columns={"duplicate_rows": "rows repeated", "reused_ids": "rollouts sharing an id"},
    order=4))


def _incomplete_measure(batch: Batch) -> dict[str, np.ndarray]:
    sig, steps = batch.sig, batch.steps
    G = sig.ix.n_groups
    if "incomplete" not in steps.columns:
        return {"count": np.zeros(G, dtype=np.int64)}
    flag = steps["incomplete"].fillna(False).to_numpy(dtype=bool)
    lost = np.bincount(sig.ix.traj, weights=flag, minlength=sig.ix.n_traj) > 0
    return {"count": sig.per_group(lost, "traj").astype(np.int64)}


def _incomplete_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    share = table["alarm_incomplete"].to_numpy(float) / \
        np.maximum(table["rollouts"].to_numpy(float), 1)
    return where(fires_of(table, "incomplete"), 0.8 * share)


def _incomplete_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    lost, n = at_rows(table, rows, "alarm_incomplete", "rollouts")
    return [f"{a} of {b} rollouts incomplete: a line of them was lost"
            for a, b in zip(lost, n, strict=True)]


def _incomplete_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("rollouts lost a malformed line when the log was read: their turns, reward or "
            "outcome may be wrong, and so the group's baseline.")


def _incomplete_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "the loader's report names file:line of each skipped line; repair or re-dump them."


def _incomplete_alarm(view: GroupView) -> Alarm | None:
    count = int(view.measured["count"])
    if not count:
        return None
    steps = view.graph.steps
    lost = steps[steps["incomplete"].fillna(False).astype(bool)] if "incomplete" in \
        steps.columns else steps.iloc[:0]
    return Alarm("incomplete", f"Incomplete: {count} rollout(s)",
                 f"{count} rollout(s) of this group lost a malformed line when the log was "
                 "read: their turns, reward or outcome may be wrong. "
                 + _incomplete_fix(pd.DataFrame(), np.zeros(0, bool), "g2po"), count,
                 pairs(lost))


INCOMPLETE = register_check(Check(
    kind="incomplete", title="Incomplete rollouts", measure=_incomplete_measure,
    severity=_incomplete_severity, reason=_incomplete_reason, run_text=_incomplete_run_text,
    fix=_incomplete_fix, alarm=_incomplete_alarm, reads=("incomplete",), order=5))
