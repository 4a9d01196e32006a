"""Truncation treated as failure: trajectories cut at the step limit, valued as failures.
Severity: half the share of rollouts cut. The explorer's alarm names the transitions the cut
steps took, largest |TD error| first (often the group's critical transitions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.words import REWARD_UNITS, pairs

__all__ = ["CHECK"]


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    return {"count": batch.sig.per_group(batch.sig.truncated, "traj").astype(np.int64)}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "truncation"), 0.5 * table["truncated_share"].to_numpy(float))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return [f"{table['alarm_truncation'].iat[i]} of {table['rollouts'].iat[i]} rollouts cut at "
            "the step limit" for i in rows]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("episodes are cut at the step limit and valued as failures. Likely cause: a step "
            "limit shorter than the task needs.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("say how the log marks the limit (the sidebar's outcome rule, or --truncate-at "
            "N), or raise the limit. Where the limit is the task's own budget (running out of "
            "steps is failing the task), the cut episodes are failures and nothing needs "
            "fixing.")


def _edge_rows(graph: StateGraph, rows: pd.DataFrame) -> list[int]:
    """The rows of ``graph.edges`` that ``rows`` (steps of the graph) took, largest |TD
    error| first."""
    if rows.empty:
        return []
    taken = rows[["node", "action", "next_node"]].drop_duplicates()
    edges = graph.edges.reset_index().rename(columns={"index": "_row"})
    hit = edges.merge(taken.rename(columns={"node": "source", "next_node": "target"}),
                      on=["source", "action", "target"])
    order = np.lexsort((hit["_row"].to_numpy(), -hit["td_error"].abs().to_numpy()))
    return [int(r) for r in hit["_row"].to_numpy()[order]]


def _alarm(view: GroupView) -> Alarm | None:
    count = int(view.measured["count"])
    if not count:
        return None
    graph, sig = view.graph, view.sig
    ix = sig.ix
    last = graph.steps[sig.truncated[ix.traj] & (ix.next_row < 0)]
    edge_rows = _edge_rows(graph, last)
    detail = (f"{count} trajectory(ies) were cut at the step limit; the estimator values them "
              f"as failures (terminal value {'R_i' if view.rule.terminal == 'reward' else '0'})"
              ", so their last step is blamed for running out of steps.")
    top = graph.edges.loc[edge_rows[0]] if edge_rows else None
    if top is not None and abs(float(top["td_error"])) > 1e-12:
        td = graph.edges["td_error"].abs().to_numpy()
        rank = int((td > abs(float(top["td_error"])) + 1e-12).sum()) + 1
        where_ = "the largest of the group" if rank == 1 else \
            f"number {rank} of the group's {len(td)} transitions"
        detail += (f" The largest |TD error| of their last transitions is "
                   f"{float(top['td_error']):+.4g} {REWARD_UNITS} (node {int(top['source'])} → "
                   f"{int(top['target'])}), {where_} by |TD error|: where it shows among the "
                   "critical transitions, it says the episode ran out of steps, not that the "
                   "step was bad.")
    return Alarm("truncation", f"Truncation treated as failure: {count} trajectory(ies)",
                 detail, count, pairs(last), edges=tuple(edge_rows))


CHECK = register_check(Check(
    kind="truncation", title="Truncation", measure=_measure, severity=_severity,
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm, order=70))
