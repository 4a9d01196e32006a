"""What is unusual for this run: each group against its peers (the groups of the nearest
training steps with the same outcome), on what the triage measures
(:func:`g2po.analysis.unusual.score_groups`, called here on the whole run's table: one
implementation, the one ``scripts/bench_recorded.py`` measures), so a defect no check names
still rises.

``unusual`` fires where a group's largest robust z-score reaches
:data:`~g2po.analysis.unusual.THRESHOLD`: its count is the measures past it, its evidence
those measures with the peers' usual value. Severity: 1 − THRESHOLD / score (a group twice as
far out as the threshold: 0.5). The branching, distinct paths and start states come from each
batch's step rows (:func:`g2po.analysis.unusual.path_features`), the comparison from the whole
run (:attr:`Check.whole`): the group explorer says it where it is given the group's row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.unusual import (
    MEASURES,
    THRESHOLD,
    path_features,
    run_findings,
    score_groups,
    unusual_severity,
)

__all__ = ["CHECK"]

_FIX = {m.name: m.fix for m in MEASURES}


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    ix = sig.ix
    found = path_features(ix.group, ix.traj, ix.node, sig.action, ix.t, ix.next_row,
                          ix.n_groups)
    return {"count": np.zeros(ix.n_groups, dtype=np.int64), **found}


def _whole(table: pd.DataFrame) -> dict[str, np.ndarray]:
    scored = score_groups(table)
    z = scored[[f"z_{m.name}" for m in MEASURES]].to_numpy(dtype=np.float64)
    fires = scored["severity"].to_numpy() > 0
    return {"count": np.where(fires, (np.abs(z) >= THRESHOLD).sum(axis=1), 0),
            "unusual_score": scored["unusual"].to_numpy(dtype=np.float64),
            "unusual_measure": np.where(fires, scored["measure"].to_numpy(dtype=object), ""),
            "unusual_evidence": scored["reason"].to_numpy(dtype=object)}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "unusual"),
                 unusual_severity(table["unusual_score"].to_numpy(dtype=np.float64)))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    (said,) = at_rows(table, rows, "unusual_evidence")
    return [f"unusual for this run: {s}" for s in said]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    found = run_findings(pd.DataFrame({
        "severity": np.where(fires, 1.0, 0.0),
        "measure": table["unusual_measure"].to_numpy(dtype=object)}))
    return (found[0] if found else "no group stands out from its peers") + \
        ": what sets them apart from the groups of the nearest training steps with the same " \
        "outcome; where many stand out on one measure, the run changed on it."


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    measures = pd.Series(table["unusual_measure"].to_numpy(dtype=object)[fires]).value_counts()
    return _FIX.get(str(measures.index[0]), "open the group") + "." if len(measures) else \
        "nothing."


def _alarm(view: GroupView) -> Alarm | None:
    row = view.row
    if row is None or not row.get("alarm_unusual"):
        return None  # needs the run's other groups: said where the caller has the row
    steps = view.graph.steps
    measure = str(row.get("unusual_measure") or "")
    return Alarm("unusual", "Unusual for this run",
                 f"Unlike its peers (the groups of the nearest training steps with the same "
                 f"outcome): {row.get('unusual_evidence')}. Fix: "
                 f"{_FIX.get(measure, 'open the group')}.", int(row["alarm_unusual"]),
                 steps[["traj_id", "t"]].sort_values(["traj_id", "t"])
                 .reset_index(drop=True))


CHECK = register_check(Check(
    kind="unusual", title="Unusual for this run", measure=_measure, severity=_severity,
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm, whole=_whole,
    columns={"start_states": "start states", "branching": "branching",
             "distinct_paths": "distinct paths per rollout",
             "unusual_score": "unusual: largest |z|", "unusual_measure": "unusual: measure",
             "unusual_evidence": "unusual: against its peers"}, order=95))
