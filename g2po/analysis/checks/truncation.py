"""Truncation treated as failure: trajectories cut at the step limit, valued as failures.

That is a defect where the limit is shorter than the task needs, not where a policy that has
not learned the task wandered until the limit (limit 8, a task won in 2 steps): the cut
rollouts failed. The evidence is the task's shortest win over the whole run, L*, against the
limit: severity ½ · (share of rollouts cut) · blame, blame = clip(2·L*/limit − 1, 0, 1) (0 when
the task is won in half the limit or less, 1 when wins need the whole limit), ½ where the task
was never won (the limit may be the cause). The explorer's alarm names the transitions the cut
steps took, largest |TD error| first (often the group's critical transitions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, task_shortest_win, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.words import REWARD_UNITS, pairs

__all__ = ["CHECK", "blame"]


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    return {"count": batch.sig.per_group(batch.sig.truncated, "traj").astype(np.int64)}


def blame(table: pd.DataFrame) -> np.ndarray:
    """(n_rows,) how far the step limit (the group's longest rollout) is the cause of its cuts:
    see the module's docstring."""
    limit = np.maximum(table["longest"].to_numpy(dtype=np.float64), 1)
    best = task_shortest_win(table)
    return np.where(np.isnan(best), 0.5, np.clip(2 * best / limit - 1, 0, 1))


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "truncation"),
                 0.5 * table["truncated_share"].to_numpy(float) * blame(table))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    best = task_shortest_win(table)[np.asarray(rows, dtype=np.int64)]
    cut, n, limit = at_rows(table, rows, "alarm_truncation", "rollouts", "longest")
    out = []
    for a, b, c, shortest in zip(cut, n, limit, best, strict=True):
        said = f"{a} of {b} rollouts cut at the step limit ({c})"
        if np.isnan(shortest):
            said += "; no rollout of this task won: the limit may be too short"
        elif 2 * shortest <= c:
            said += f"; the task is won in {shortest:g}: they wandered, the limit is not why"
        else:
            said += f"; the task's shortest win takes {shortest:g}"
        out.append(said)
    return out


def _wandered(table: pd.DataFrame, fires: np.ndarray) -> bool:
    return bool(fires.any() and (blame(table)[fires] == 0).mean() >= 0.5)


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if _wandered(table, fires):
        best = task_shortest_win(table)[fires]
        limit = table["longest"].to_numpy()[fires]
        return (f"rollouts cut at the step limit (mostly {int(np.median(limit))}) on tasks "
                f"the run wins in far fewer steps (median shortest win {np.nanmedian(best):g}):"
                " the policy wandered until the limit; the cut rollouts are failures, and "
                "the limit is not what failed them.")
    return ("episodes are cut at the step limit and valued as failures. Likely cause: a step "
            "limit shorter than the task needs.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if _wandered(table, fires):
        return "nothing for the limit; the groups where many rollouts still wander show it."
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
    wins = sig.traj_length[sig.success]
    if len(wins) and 2 * wins.min() <= sig.traj_length.max():
        detail += (f" A rollout here won in {int(wins.min())} steps: the cut ones wandered, "
                   "and the limit is not what failed them.")
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
