"""What the group explorer computes, once per graph: the group's computed view
(:func:`g2po.analysis.group_view.group_from_graph` on the sidebar's cached graph), the tables
no pick changes, the drawing's data, and a what-if edit. Kept with ``st.cache_resource``
(shared, never mutated) and named by the graph's id, which names its log, group, parameters and
rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from app import data
from app.context import AppContext
from app.graph import DrawStyle, Highlight, network_data
from app.tables import scale_limits, step_table, trajectory_order, trajectory_summary
from app.triage_table import cached_row
from app.ui import chosen_graph, show_error
from g2po.analysis.group_view import (
    ComputedGroup,
    RecordedCredit,
    audit_graph,
    group_from_graph,
)
from g2po.analysis.recorded import StatedCredit, stated_credit
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.whatif import WhatIf, merge_nodes, split_node
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams

__all__ = ["PageTables", "computed_group", "page_tables", "drawn", "edited",
           "trained_credit", "recorded_fitted"]


@dataclass(frozen=True)
class PageTables:
    """What the page shows of one computed view that no pick changes: the trajectories in
    order, their summary and labels, each quantity's colour-scale limits, and the full step
    table (with the recorded advantage where the log has one); ``graph_id`` names the graph
    they are of."""

    graph_id: str
    traj_ids: list[str]
    summary: pd.DataFrame
    labels: dict[str, str]
    limits: dict[str, float]
    steps: pd.DataFrame


def trained_credit(ctx: AppContext) -> StatedCredit | None:
    """What the active run states it trained with (its manifest's estimator, exact arguments
    and state key: :func:`g2po.analysis.recorded.stated_credit`), which a recorded advantage
    is audited against as the Groups table audits it; None where it states none (G2PO)."""
    return stated_credit(ctx.active.log.manifest) if ctx.active is not None else None


@st.cache_resource(show_spinner=False, max_entries=64)
def _computed(_graph: StateGraph, graph_id: str, params: G2POParams, rule: OutcomeRule,
              _credit: StatedCredit | None, credit_key: str, _row: dict | None,
              row_key: str) -> ComputedGroup:
    return group_from_graph(_graph, rule=rule, params=params, fit=False, credit=_credit,
                            row=_row)


def computed_group(ctx: AppContext) -> tuple[ComputedGroup, str] | None:
    """The sidebar's group computed once (its graph from the app's graph cache), and the
    graph's id; None after saying why it cannot be. A recorded advantage is audited without
    the search for the estimator that explains it (:func:`recorded_fitted`, on demand: it
    runs the estimators a few hundred times)."""
    graph = chosen_graph(ctx)
    if graph is None:
        return None
    opened = ctx.active
    graph_id = data.graph_id(opened.key, ctx.train_step, ctx.group_id, ctx.params, ctx.rule)
    credit = trained_credit(ctx)
    row = cached_row(ctx, opened, ctx.rule, ctx.train_step, ctx.group_id)
    try:
        return _computed(graph, graph_id, ctx.params, ctx.rule, credit, repr(credit), row,
                         repr(row)), graph_id
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot compute group {ctx.group_id}", err)
        return None


def _traj_labels(summary: pd.DataFrame) -> dict[str, str]:
    return {str(r.traj_id): f"{r.rollout} · {r.outcome} · reward {r.reward:g} · "
                            f"{r.length} steps" for r in summary.itertuples()}


@st.cache_resource(show_spinner=False, max_entries=64)
def _tables(_view: ComputedGroup, graph_id: str) -> PageTables:
    graph = _view.graph
    summary = trajectory_summary(graph)
    return PageTables(graph_id=graph_id, traj_ids=trajectory_order(graph), summary=summary,
                      labels=_traj_labels(summary), limits=scale_limits(graph),
                      steps=step_table(graph, recorded=_view.recorded))


def page_tables(view: ComputedGroup, graph_id: str) -> PageTables:
    """The view's :class:`PageTables`, computed once per graph. Not mutated."""
    return _tables(view, graph_id)


@st.cache_resource(show_spinner=False, max_entries=64)
def _drawn(_graph: StateGraph, graph_id: str, highlight: Highlight, style: DrawStyle,
           success_reward: float, title: str, assumed: tuple[str, ...]) -> dict:
    return network_data(_graph, highlight, success_reward=success_reward, title=title,
                        graph_id=graph_id, style=style, assumed=assumed)


def drawn(graph: StateGraph, graph_id: str, highlight: Highlight, style: DrawStyle,
          success_reward: float, title: str, assumed: tuple[str, ...] = ()) -> dict:
    """The graph component's data; a change of colours is another drawing of the same graph.
    ``assumed``: the notes of the assumptions the drawing's numbers rest on (its legend says
    them)."""
    out = _drawn(graph, graph_id, highlight, style, success_reward, title, assumed)
    return {**out, "graph_id": graph_id}


@st.cache_resource(show_spinner=False, max_entries=16)
def _edited(_view: ComputedGroup, graph_id: str, edit: tuple, min_change: float) -> WhatIf:
    graph, rule, params = _view.graph, _view.rule, _view.params
    if edit[0] == "merge":
        return merge_nodes(graph, edit[1], edit[2], rule=rule, params=params,
                           min_change=min_change)
    return split_node(graph, edit[1], rule=rule, params=params, min_change=min_change)


def edited(view: ComputedGroup, graph_id: str, edit: tuple, min_change: float) -> WhatIf:
    """The group with ``edit`` applied (``("merge", a, b)``: nodes a and b made one;
    ``("split", node)``: a node split by where its steps lead next), recomputed and compared
    with the view (:func:`g2po.analysis.whatif.merge_nodes`,
    :func:`~g2po.analysis.whatif.split_node`); ValueError for an edit the graph does not
    allow."""
    return _edited(view, graph_id, tuple(edit), float(min_change))


@st.cache_resource(show_spinner=False, max_entries=16)
def _fitted(_view: ComputedGroup, graph_id: str, credit_key: str) -> RecordedCredit | None:
    return audit_graph(_view.graph, rule=_view.rule, params=_view.params,
                       credit=_view.credit)


def recorded_fitted(view: ComputedGroup, graph_id: str) -> RecordedCredit | None:
    """The view's recorded advantage audited with the search for the estimator and parameters
    that explain it, against what the run states it trained with (``view.credit``), once per
    graph."""
    return _fitted(view, graph_id, repr(view.credit))
