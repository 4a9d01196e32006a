"""The group explorer's graph: the drawing the page's width (or, for a dense group, the state ×
state matrix one click away), with its pickers in one row below it — outcome filter,
highlighted trajectories, edge colour, node-value scale and, only for a dense group, the View
switch. The pickers are drawn below the graph but read first: the drawing needs their choices,
which are copied onto the page's picks."""

from __future__ import annotations

import streamlit as st

from app.context import AppContext
from app.explorer import clicks
from app.explorer.compute import PageTables, drawn
from app.explorer.state import EDGE_COLOR, GRAPH_KEY, OUTCOME, TRAJ, VALUE_SCALE, VIEW, Picks
from app.graph import EDGE_COLOR_MODES, VALUE_SCALES, DrawStyle, Highlight
from app.graph.matrix import matrix_figure
from app.graph_component import graph_component
from app.safe import fmt
from app.tables import OUTCOMES, node_highlight, trajectory_highlight
from g2po.analysis.assumptions import Assumption, reached
from g2po.analysis.group_view import ComputedGroup
from g2po.analysis.matrix import DENSE_EDGES, DENSE_STATES, MATRIX_VALUES, is_dense
from g2po.analysis.state_graph import StateGraph

__all__ = ["graph_area", "GRAPH_HEIGHT", "EDGE_COLOR_CHOICES", "VALUE_SCALE_CHOICES"]

#: Graph height: at 1280×720 the graph (the page's width) and its legend stay above the fold.
GRAPH_HEIGHT = 400
#: The pickers' short names (a narrow column cuts long ones); the legend says them in full.
EDGE_COLOR_CHOICES = {"td": "TD error", "adv": "mean A", "success_share": "success share"}
VALUE_SCALE_CHOICES = {"group": "group range", "reward": "0 to reward"}


def graph_area(ctx: AppContext, view: ComputedGroup, graph_id: str, tables: PageTables,
               picks: Picks, assumed: list[Assumption]) -> list[str]:
    """The graph and its pickers; returns the trajectories the outcome filter shows."""
    graph = view.graph
    drawing, picker_row = st.container(), st.container()
    with picker_row:
        shown_ids = _pickers(graph, tables, picks)
    style = DrawStyle(edge_color=picks.edge_color, value_scale=picks.value_scale)
    with drawing:
        if picks.view == "Matrix":
            _matrix(graph, picks.edge_color)
            return shown_ids
        paths = picks.trajectories or (shown_ids if picks.outcomes else [])
        data = drawn(graph, graph_id, _highlight(graph, paths, picks.node, picks.edge), style,
                     ctx.rule.success_reward, f"G2PO state graph: group {ctx.group_id}, "
                                              f"training step {ctx.train_step}",
                     tuple(a.note for a in reached(assumed, ("invalid", "adv"))))
        picks.graph_id = graph_id
        picks.edge_source = tuple(int(s) for s in graph.edges["source"])
        graph_component(data, height=GRAPH_HEIGHT, key=GRAPH_KEY, on_change=clicks.graph_clicked)
    st.caption(fmt("{} nodes ({} states + terminals) · {} edges · {:.0%} merged · hover for "
                   "details, click a node or an edge to list its steps, click a step row to "
                   "find it in the graph · columns by step depth, wrapped into bands read left "
                   "to right (Fit all shows the whole graph; All edges draws the pale ones "
                   "fully)", len(graph.nodes), graph.n_states, len(graph.edges),
                   view.stats["merge_rate"]))
    return shown_ids


def _pickers(graph: StateGraph, tables: PageTables, picks: Picks) -> list[str]:
    """The row of pickers; their values onto ``picks``. The View switch is there only for a
    dense group (:func:`g2po.analysis.matrix.is_dense`): a sparse one is always drawn."""
    dense = is_dense(graph)
    pick_outcome, pick_traj, pick_edge, pick_scale, *pick_view = st.columns(
        [1.9, 2.3, 1.7, 1.7] + ([1.4] if dense else []))
    picks.view = _view_switch(pick_view[0]) if dense else "Graph"
    picks.outcomes = list(pick_outcome.pills(
        "Outcome", OUTCOMES, selection_mode="multi", key=OUTCOME,
        help="Show the trajectories with these outcomes only") or [])
    summary = tables.summary
    shown_ids = [t for t, o in zip(summary["traj_id"], summary["outcome"], strict=True)
                 if not picks.outcomes or o in picks.outcomes]
    picks.trajectories = list(pick_traj.multiselect(
        "Highlight trajectories", tables.traj_ids, key=TRAJ,
        format_func=lambda t: tables.labels[t], placeholder="none"))
    picks.edge_color = pick_edge.selectbox(
        "Edge colour", list(EDGE_COLOR_MODES), key=EDGE_COLOR,
        format_func=EDGE_COLOR_CHOICES.get,
        help="TD error; the mean combined advantage A of the steps along each edge (on a "
             "highlighted trajectory's own edges, its own steps' A); or the share of "
             "successful trajectories through it.")
    picks.value_scale = pick_scale.selectbox(
        "V scale", list(VALUE_SCALES), key=VALUE_SCALE, format_func=VALUE_SCALE_CHOICES.get,
        help="Node colour V: from the group's lowest to its highest value, or from 0 to the "
             "success reward.")
    return shown_ids


def _view_switch(column) -> str:
    """A dense group's View switch: the drawing, or the state × state matrix."""
    view = column.segmented_control(
        "View", ["Graph", "Matrix"], default="Graph", key=VIEW,
        help=fmt("Above {} transitions or {} states the matrix reads better for which "
                 "transition carries the credit: every pair of states is one cell, none hidden "
                 "behind another. The graph shows the paths.", DENSE_EDGES, DENSE_STATES))
    return view or "Graph"


def _matrix(graph: StateGraph, edge_color: str) -> None:
    """The state × state matrix of the edge colour's quantity (TD error, else mean A)."""
    value = "adv" if edge_color == "adv" and "adv" in graph.edges.columns else "td_error"
    st.plotly_chart(matrix_figure(graph, value, min_height=GRAPH_HEIGHT + 80), key="g_matrix")
    st.caption(fmt("{} of each transition from a state (row) to a state or terminal (column), "
                   "count-weighted over its actions; grey: no transition; #1…: the critical "
                   "transitions. States in the order of their first step depth, named as in "
                   "the graph; hover a cell for both states' words.", MATRIX_VALUES[value]))


def _highlight(graph: StateGraph, paths: list[str], node: int | None,
               edge: int | None) -> Highlight:
    if paths:
        return trajectory_highlight(graph, paths, node, edge)
    if node is not None:
        return node_highlight(graph, node, edge)
    return Highlight(edge=edge)
