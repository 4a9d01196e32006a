"""No merging: almost no two steps share a state (merge rate below :data:`NO_MERGE_RATE`, 10
steps or more): the state key probably includes the history or a step counter, so the graph is
a set of chains and A^NC has no reference sets. Severity 0.5.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import pairs
from g2po.index import merge_rate

__all__ = ["NO_MERGING", "NO_MERGE_RATE"]

#: Merge rates below this count as "no merging".
NO_MERGE_RATE = 0.05

def _no_merging_measure(batch: Batch) -> dict[str, np.ndarray]:
    ix = batch.sig.ix
    n_steps = np.bincount(ix.group, minlength=ix.n_groups)
    n_states = np.bincount(ix.node_group, minlength=ix.n_groups)
    rate = merge_rate(n_states, n_steps)
    return {"count": np.where((n_steps >= 10) & (rate < NO_MERGE_RATE), n_states, 0)}


def _no_merging_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "no_merging"), 0.5)


def _no_merging_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return [f"no merging: merge rate {table['merge_rate'].iat[i]:.0%}" for i in rows]


def _no_merging_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("almost no two steps share a state key, so G2PO's node terms are empty. Likely "
            "cause: the key holds the history or a step counter.")


def _no_merging_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "the normalized or a regex state key (--state-key normalized | regex:…)."


def _no_merging_alarm(view: GroupView) -> Alarm | None:
    if not view.measured["count"]:
        return None
    steps = view.graph.steps
    n_steps, n_states = len(steps), view.graph.n_states
    rate = 1.0 - n_states / n_steps if n_steps else 0.0
    return Alarm(
        "no_merging", f"No merging: merge rate {rate:.0%}",
        f"{n_states} state nodes for {n_steps} steps: almost no two steps share a state key, "
        "so A^NC has no reference sets. The key probably includes the history or a step "
        "counter; try another state-key strategy (normalized, regex).",
        n_states, pairs(steps))


NO_MERGING = register_check(Check(
    kind="no_merging", title="No merging", measure=_no_merging_measure,
    severity=_no_merging_severity, reason=_no_merging_reason, run_text=_no_merging_run_text,
    fix=_no_merging_fix, alarm=_no_merging_alarm, order=80))
