"""Mixed starts: the rollouts of one group do not share an initial state (or carry different
tasks). A group is N rollouts of one task from one initial state; a group key that mixes
prompts (prime-rl #600) or turns of different prompts (agent-lightning #489) compares
rollouts of different tasks, so every group-relative baseline is wrong. Names the starts and
their counts. Severity: min(1, 2 · the share of rollouts away from the most common start),
so an even split of two tasks is 1; half that where every rollout has a start of its own
(three or more), which is rather something unique in every key (a request id, a clock).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import pairs, short_text

__all__ = ["CHECK", "SHOWN_STARTS"]

#: Starts named in the evidence; the rest are "n more".
SHOWN_STARTS = 3


def _phrase(texts: list[str], counts: np.ndarray, what: str) -> str:
    """"2 starts: 'A' (4×), 'B' (4×)", each text from the last word boundary of the start they
    share (what tells them apart), shortened."""
    common = os.path.commonprefix(texts)
    cut = max(common.rfind(c) for c in " \n\t") + 1 if len(common) > 8 else 0
    shown = ", ".join(f"'{'…' if cut else ''}{short_text(t[cut:], 30)}' ({int(n)}×)"
                      for t, n in zip(texts[:SHOWN_STARTS], counts[:SHOWN_STARTS], strict=True))
    more = len(texts) - SHOWN_STARTS
    return f"{len(texts)} {what}: {shown}" + (f", {more} more" if more > 0 else "")


def _by_group(group: np.ndarray, code: np.ndarray, G: int):
    """Distinct (group, code) pairs: per group the number of distinct codes, and the pairs
    (group, code, rollouts) sorted by group, most rollouts first."""
    pair, first, count = np.unique(group * np.int64(max(int(code.max()) + 1, 1)) + code,
                                   return_index=True, return_counts=True)
    g = group[first]
    order = np.lexsort((-count, g))
    return np.bincount(g, minlength=G), g[order], first[order], count[order]


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    ix, G = sig.ix, sig.ix.n_groups
    rows = np.flatnonzero(ix.t == 0)  # one per trajectory
    n_starts, g, first, count = _by_group(ix.group[rows], ix.node[rows], G)
    evidence = np.full(G, "", dtype=object)
    minority = np.zeros(G)
    rollouts = np.bincount(ix.traj_group, minlength=G)
    top = np.zeros(G)
    np.maximum.at(top, g, count)
    mixed = n_starts > 1
    n_tasks = np.zeros(G, dtype=np.int64)
    if "task" in batch.steps.columns:
        task = batch.steps["task"].to_numpy(dtype=object)[rows]
        known = ~pd.isna(task)
        code = pd.factorize(task[known])[0].astype(np.int64)
        if len(code):
            n_tasks, tg, tfirst, tcount = _by_group(ix.group[rows][known], code, G)
            for k in np.flatnonzero(n_tasks > 1):
                at = tg == k
                texts = [str(t) for t in task[known][tfirst[at]]]
                evidence[k] = _phrase(texts, tcount[at], "tasks")
                minority[k] = 1 - tcount[at].max() / max(rollouts[k], 1)
    for k in np.flatnonzero(mixed & (n_tasks <= 1)):
        at = g == k
        texts = batch.text("state_key", rows[first[at]])
        evidence[k] = _phrase(texts, count[at], "starts")
        minority[k] = 1 - top[k] / max(rollouts[k], 1)
    fires = mixed | (n_tasks > 1)
    return {"count": np.where(fires, np.maximum(n_starts, n_tasks), 0).astype(np.int64),
            "start_evidence": evidence, "start_minority": minority}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    # every rollout its own start (three or more): rather something unique in every key (an
    # id, a clock) than tasks mixed; half the weight, so no merging's words come first
    own = (table["alarm_mixed_start"].to_numpy() == table["rollouts"].to_numpy()) & \
        (table["rollouts"].to_numpy() >= 3)
    return where(fires_of(table, "mixed_start"),
                 np.minimum(1.0, 2 * table["start_minority"].to_numpy(float)) *
                 np.where(own, 0.5, 1.0))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    (evidence,) = at_rows(table, rows, "start_evidence")
    return [f"rollouts do not share a start: {e}" for e in evidence]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("the rollouts of a group start from different states (or carry different tasks): "
            "the group key mixes tasks, so each group's baseline compares rollouts of "
            "different tasks.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("group by the task instance (verl's uid per prompt; the loader's group_id "
            "mapping), one group per initial state.")


def _alarm(view: GroupView) -> Alarm | None:
    count = int(view.measured["count"])
    if not count:
        return None
    steps = view.graph.steps
    return Alarm("mixed_start", f"Mixed starts: {count}",
                 f"The rollouts of this group do not share an initial state: "
                 f"{view.measured['start_evidence']}. A group is N rollouts of one task from "
                 "one state; here its baseline compares different tasks. Fix: "
                 f"{_fix(pd.DataFrame(), np.zeros(0, bool), 'g2po')}",
                 count, pairs(steps[steps["t"] == 0]))


CHECK = register_check(Check(
    kind="mixed_start", title="Mixed starts", measure=_measure, severity=_severity,
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm,
    columns={"start_evidence": "starts", "start_minority": "rollouts off the main start"},
    order=1))
