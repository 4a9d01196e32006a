"""Group explorer: one group's state graph beside its critical transitions and credit alarms,
with per-step values, TD errors and the three G2PO advantages below.

Linked views: clicking a step row selects its node and edge in the graph; clicking a node or an
edge in the graph (or a critical transition, or an alarm) filters the step tables to the steps
concerned; several trajectories can be highlighted; trajectories can be filtered by outcome.
The whole view (trajectories, node, edge, what the steps are filtered to, colours) is kept in
the URL (:mod:`app.url_state`) and in one state object (:mod:`app.explorer.state`). Every
number comes from the group's computed view, built once per graph
(:func:`g2po.analysis.group_view.group_from_graph`: graph, success, critical transitions,
alarms, the recorded advantage audited); a number resting on a value the log lacked (validity
assumed) is marked where shown. The page's parts are in :mod:`app.explorer`.
"""

from __future__ import annotations

import streamlit as st

from app.context import AppContext
from app.explorer import beside, header, state
from app.explorer.compute import computed_group, page_tables
from app.explorer.graph_area import graph_area
from app.explorer.tabs import tabs
from app.ui import group_page
from app.url_state import write_url
from g2po.analysis.assumptions import assumptions

__all__ = ["render"]


def render(ctx: AppContext) -> None:
    if not group_page(ctx, "Group explorer"):
        return
    computed = computed_group(ctx)
    if computed is None:
        return
    view, graph_id = computed
    tables = page_tables(view, graph_id)
    graph = view.graph
    picks = state.load()
    state.begin(picks, (ctx.active.key, ctx.train_step, ctx.group_id), view.structure,
                tables.traj_ids, set(graph.nodes.index.astype(int)), len(graph.edges),
                {a.kind for a in view.alarms})
    assumed = assumptions(ctx.active.log.report.assumed, ctx.params.penalty)
    header.headline(view)
    header.outcome_warning(ctx, view)
    header.recorded_line(view, graph_id, picks)
    shown_ids = graph_area(ctx, view, graph_id, tables, picks, assumed)
    crit_col, alarm_col = st.columns([3, 2])
    with crit_col:
        beside.critical(view, picks, tables.limits, assumed)
    with alarm_col:
        beside.alarm_list(view, assumed)
    write_url(**state.url_values(picks))
    tabs(ctx, view, tables, picks, shown_ids, assumed)
    state.save(picks)
