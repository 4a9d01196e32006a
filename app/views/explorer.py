"""Group explorer: one group's state graph beside its critical transitions and credit alarms,
with per-step values, TD errors and the three G2PO advantages below.

Linked views: clicking a step row selects its node and edge in the graph; clicking a node or an
edge in the graph (or a critical transition, or an alarm) filters the step tables to the steps
concerned; several trajectories can be highlighted; trajectories can be filtered by outcome.
The whole view (trajectories, node, edge, what the steps are filtered to, colours) is kept in
the URL (:mod:`app.url_state`), and a choice stays made until another replaces it: a change of
γ, w or the penalty keeps the trajectories, node and edge (the graph's structure is the same),
only another group clears them. Every number comes from :mod:`g2po` (graph, outcomes, alarms,
labels); a number resting on a value the log lacked (validity assumed) is marked where shown.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from app import data
from app.context import AppContext
from app.graph import EDGE_COLOR_MODES, VALUE_SCALES, DrawStyle, Highlight, network_data
from app.graph.matrix import matrix_figure
from app.graph_component import graph_component
from app.navigation import open_state_history
from app.rules import apply_fix
from app.safe import escape_html, fmt, truncate
from app.tables import (
    OUTCOMES,
    critical_table,
    node_choices,
    node_highlight,
    node_occurrences,
    outgoing_transitions,
    scale_limits,
    step_table,
    style_diverging,
    trajectory_highlight,
    trajectory_order,
    trajectory_summary,
)
from app.ui import chosen_graph, group_page, md, picked_row
from app.url_state import seed_from_url, write_url
from g2po.analysis.alarms import SHOWN, Alarm, credit_alarms
from g2po.analysis.assumptions import Assumption, assumptions, reached
from g2po.analysis.critical import critical_transitions as critical_edges
from g2po.analysis.diagnostics import merge_stats
from g2po.analysis.labels import format_number, key_diff, lead_with_difference
from g2po.analysis.matrix import DENSE_EDGES, DENSE_STATES, MATRIX_VALUES, is_dense
from g2po.analysis.state_graph import StateGraph
from g2po.outcomes import OutcomeCheck, OutcomeRule, success_rule
from g2po.params import G2POParams

__all__ = ["render", "node_from_click", "edge_from_click", "filter_from_url", "filter_to_url",
           "GRAPH_HEIGHT", "MAX_ROLLOUT_TABLES", "TABS", "EDGE_COLOR_CHOICES",
           "VALUE_SCALE_CHOICES"]

#: Graph height: at 1280×720 the graph (the page's width) and its legend stay above the fold.
GRAPH_HEIGHT = 400
#: Steps per page of the step table.
PAGE_ROWS = 50
#: Above this many rollouts the per-rollout tab shows the first ones only.
MAX_ROLLOUT_TABLES = 16
TABS = ("Steps", "One table per rollout", "Node", "Step text")
GRAPH_KEY = "g_graph"
GRAPH_ID = "_g2po_graph_id"
PICKS_FOR = "_g2po_picks_for"
#: What the step tables are filtered to: None, ("node", id), ("edge", row), ("alarm", kind);
#: in the URL as ``filter=node:3``, ``edge:10`` or ``alarm:aliased``.
FILTER = "g_filter"
#: The picks kept for one group (trajectories, outcomes) and one graph structure (node, edge).
PICKS_STRUCTURE = "_g2po_picks_structure"
#: Bumped by every choice made elsewhere than in the critical-transitions table (resp. the
#: step table): that table is then drawn afresh, its tick gone with the choice it showed.
CRITICAL_VERSION, STEPS_VERSION = "_g2po_critical_version", "_g2po_steps_version"
#: The pickers' short names (a narrow column cuts long ones); the legend says them in full.
EDGE_COLOR_CHOICES = {"td": "TD error", "adv": "mean A", "success_share": "success share"}
VALUE_SCALE_CHOICES = {"group": "group range", "reward": "0 to reward"}
STEP_ROWS = "_g2po_step_rows"
#: The selected node and edge (row of ``StateGraph.edges``): plain session state, not a
#: widget's, so they survive while the Node tab (with its picker) is closed.
SEL_NODE, SEL_EDGE = "g_sel_node", "g_sel_edge"
GRAPH_OBJ = "_g2po_graph_shown"


def render(ctx: AppContext) -> None:
    if not group_page(ctx, "Group explorer"):
        return
    opened = ctx.active
    graph = chosen_graph(ctx)
    if graph is None:
        return
    current = data.graph_id(opened.key, ctx.train_step, ctx.group_id, ctx.params, ctx.rule)
    raw = data.load_group(opened.log, opened.key, ctx.train_step, ctx.group_id)
    tables = _tables(graph, raw, current, ctx.rule)
    outcome = tables["outcome"]
    stats = tables["stats"]
    _headline(outcome, stats, ctx.rule)
    _outcome_warning(ctx, outcome)
    traj_ids = tables["traj_ids"]
    _keep_or_drop_picks((opened.key, ctx.train_step, ctx.group_id), tables["structure"])
    alarms = _alarms(graph, current, ctx)
    _seed_view(graph, traj_ids, {a.kind for a in alarms})
    st.session_state[GRAPH_OBJ] = graph
    summary = tables["summary"]
    labels = tables["labels"]
    assumed = assumptions(opened.log.report.assumed, ctx.params.penalty)

    # the graph first, the page's width; its pickers in one row below it (drawn there, read
    # here: the graph needs their choices)
    graph_area, picker_row = st.container(), st.container()
    with picker_row:
        dense = is_dense(graph)
        pick_outcome, pick_traj, pick_edge, pick_scale, *pick_view = st.columns(
            [1.9, 2.3, 1.7, 1.7] + ([1.4] if dense else []))
        view = _view_choice(pick_view[0]) if dense else "Graph"
        outcomes = pick_outcome.pills("Outcome", OUTCOMES, selection_mode="multi",
                                      key="g_outcome",
                                      help="Show the trajectories with these outcomes only")
        shown_ids = [t for t, o in zip(summary["traj_id"], summary["outcome"], strict=True)
                     if not outcomes or o in outcomes]
        st.session_state["g_traj"] = [t for t in st.session_state.get("g_traj") or []
                                      if t in traj_ids]
        chosen = pick_traj.multiselect("Highlight trajectories", traj_ids, key="g_traj",
                                       format_func=lambda t: labels[t], placeholder="none")
        edge_color = pick_edge.selectbox(
            "Edge colour", list(EDGE_COLOR_MODES), key="g_edge_color",
            format_func=EDGE_COLOR_CHOICES.get,
            help="TD error; the mean combined advantage A of the steps along each edge (on a "
                 "highlighted trajectory's own edges, its own steps' A); or the share of "
                 "successful trajectories through it.")
        value_scale = pick_scale.selectbox(
            "V scale", list(VALUE_SCALES), key="g_value_scale",
            format_func=VALUE_SCALE_CHOICES.get,
            help="Node colour V: from the group's lowest to its highest value, or from 0 to "
                 "the success reward.")
        style = DrawStyle(edge_color=edge_color, value_scale=value_scale)
        node, edge = st.session_state.get(SEL_NODE), st.session_state.get(SEL_EDGE)
    with graph_area:
        if view == "Matrix":
            _matrix(graph, edge_color)
        else:
            paths = chosen or (shown_ids if outcomes else [])
            highlight = _highlight(graph, paths, node, edge)
            drawn = _drawn(graph, current, highlight, style, ctx.rule.success_reward,
                           f"G2PO state graph: group {ctx.group_id}, training step "
                           f"{ctx.train_step}",
                           tuple(a.note for a in reached(assumed, ("invalid", "adv"))))
            st.session_state[GRAPH_ID] = current
            graph_component(drawn, height=GRAPH_HEIGHT, key=GRAPH_KEY,
                            on_change=_graph_clicked)
    if view != "Matrix":
        st.caption(fmt("{} nodes ({} states + terminals) · {} edges · {:.0%} merged · hover "
                       "for details, click a node or an edge to list its steps, click a step "
                       "row to find it in the graph · columns by step depth, wrapped into bands "
                       "read left to right (Fit all shows the whole graph; All edges draws "
                       "the pale ones fully)", len(graph.nodes), graph.n_states,
                       len(graph.edges), stats["merge_rate"]))
    limits = tables["limits"]
    crit_col, alarm_col = st.columns([3, 2])
    with crit_col:
        _critical(graph, style, limits, assumed)
    with alarm_col:
        _alarm_list(ctx, alarms, graph, style, assumed)

    write_url(traj=list(chosen), node=node, edge=edge, outcome=list(outcomes or []),
              filter=filter_to_url(st.session_state.get(FILTER)),
              edge_color=None if edge_color == "td" else edge_color,
              value_scale=None if value_scale == "group" else value_scale)

    # Lazy tabs: only the open one is computed and sent, so the graph draws sooner.
    tabs = st.tabs(list(TABS), key="g_tab", on_change="rerun")
    tab = dict(zip(TABS, tabs, strict=True))
    with tab["Steps"]:
        if tab["Steps"].open is not False:
            _steps_tab(graph, tables["steps"], alarms, shown_ids, limits, assumed)
    with tab["One table per rollout"]:
        if tab["One table per rollout"].open:
            st.markdown("**Trajectories**")
            shown = summary[summary["traj_id"].isin(shown_ids)].drop(
                columns=["traj_id"]).rename(columns={"adv_sum": "ΣA"})
            marks = _assumption_marks(shown.columns, assumed)
            st.dataframe(style_diverging(shown, ["ΣA"]), hide_index=True,
                         height=min(38 + 35 * len(shown), 300), column_config=marks)
            ids = shown_ids
            if len(ids) > MAX_ROLLOUT_TABLES:
                st.caption(fmt("{} rollouts: showing the first {}; the Steps tab has them "
                               "all.", len(ids), MAX_ROLLOUT_TABLES))
            for t in ids[:MAX_ROLLOUT_TABLES]:
                md("**{}**", labels[t])
                one = step_table(graph, t)
                st.dataframe(style_diverging(one, limits), hide_index=True,
                             column_config=_assumption_marks(one.columns, assumed))
    with tab["Node"]:
        if tab["Node"].open:
            _node_tab(ctx, graph, node, limits, assumed)
    with tab["Step text"]:
        if tab["Step text"].open:
            _step_text(graph, chosen[0] if chosen else (shown_ids or traj_ids)[0], labels)


# -- the compact view ------------------------------------------------------------------------

def _view_choice(column) -> str:
    """The drawing, or (a dense group's, one click away) the state × state matrix."""
    view = column.segmented_control(
        "View", ["Graph", "Matrix"], default="Graph", key="g_view",
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


# -- clicks and selections ----------------------------------------------------------------

def node_from_click(clicked: dict | None, graph_id: str | None) -> int | None:
    """The node a click on the drawn graph chose, if it was a click on the graph now shown."""
    if isinstance(clicked, dict) and clicked.get("graph_id") == graph_id and \
            isinstance(clicked.get("node"), int):
        return int(clicked["node"])
    return None


def edge_from_click(clicked: dict | None, graph_id: str | None) -> int | None:
    """The edge (its row in ``StateGraph.edges``) a click on the drawn graph chose."""
    if isinstance(clicked, dict) and clicked.get("graph_id") == graph_id:
        edge = clicked.get("edge")
        if isinstance(edge, str) and edge.startswith("e") and edge[1:].isdigit():
            return int(edge[1:])
    return None


def filter_to_url(flt: tuple | None) -> str | None:
    """What the step tables are filtered to, as the URL keeps it (``node:3``, ``edge:10``,
    ``alarm:aliased``); None when unfiltered."""
    if not flt:
        return None
    return f"{flt[0]}:{flt[1]}"


def filter_from_url(text: str, nodes: set[int], n_edges: int, alarm_kinds: set[str]
                    ) -> tuple | None:
    """The URL's ``filter`` back as a filter of this graph (None when it names a node, an
    edge or an alarm the graph does not have)."""
    kind, _, value = str(text).partition(":")
    if kind in ("node", "edge") and value.lstrip("-").isdigit():
        number = int(value)
        if (kind == "node" and number in nodes) or (kind == "edge" and 0 <= number < n_edges):
            return (kind, number)
    if kind == "alarm" and value in alarm_kinds:
        return ("alarm", value)
    return None


def _bump(*keys: str) -> None:
    """A choice was made: the tables named (by their version key) are drawn afresh, without
    the tick of the choice they showed before."""
    for key in keys:
        st.session_state[key] = st.session_state.get(key, 0) + 1


def _keep_or_drop_picks(group: tuple, structure: str) -> None:
    """Picks stay while they mean the same: trajectories and outcomes while the group is the
    same (a parameter change recomputes the numbers, not the rollouts); the node, the edge
    and a node or edge filter while the graph's structure is too (another state key or
    success rule may number nodes and edges otherwise)."""
    if st.session_state.get(PICKS_FOR) != group:
        st.session_state[PICKS_FOR] = group
        st.session_state[PICKS_STRUCTURE] = structure
        for key in ("g_traj", SEL_NODE, "g_node2", SEL_EDGE, FILTER):
            st.session_state[key] = [] if key == "g_traj" else None
        _bump(CRITICAL_VERSION, STEPS_VERSION)
    elif st.session_state.get(PICKS_STRUCTURE) != structure:
        st.session_state[PICKS_STRUCTURE] = structure
        for key in (SEL_NODE, "g_node2", SEL_EDGE):
            st.session_state[key] = None
        flt = st.session_state.get(FILTER)
        if flt and flt[0] in ("node", "edge"):
            st.session_state[FILTER] = None
        _bump(CRITICAL_VERSION, STEPS_VERSION)


def _graph_clicked() -> None:
    """A click on a node selects it and filters the steps to its occurrences; a click on an
    edge does the same for the steps along it."""
    clicked, gid = st.session_state.get(GRAPH_KEY), st.session_state.get(GRAPH_ID)
    node, edge = node_from_click(clicked, gid), edge_from_click(clicked, gid)
    if node is not None:
        st.session_state[SEL_NODE], st.session_state[SEL_EDGE] = node, None
        st.session_state[FILTER] = ("node", node)
    elif edge is not None:
        graph = st.session_state.get(GRAPH_OBJ)
        source = int(graph.edges["source"].iloc[edge]) if graph is not None and \
            edge < len(graph.edges) else None
        st.session_state[SEL_NODE], st.session_state[SEL_EDGE] = source, edge
        st.session_state[FILTER] = ("edge", edge)
    if node is not None or edge is not None:
        st.session_state["g_tab"] = "Steps"
        _bump(CRITICAL_VERSION, STEPS_VERSION)


def _steps_key() -> str:
    return f"g_steps_table:{st.session_state.get(STEPS_VERSION, 0)}"


def _critical_key() -> str:
    return f"g_critical:{st.session_state.get(CRITICAL_VERSION, 0)}"


def _row_clicked() -> None:
    """A click on a step row selects its node and its edge in the graph (and unticks the
    critical transition chosen before: the selection is now this step's)."""
    event = st.session_state.get(_steps_key())
    rows = st.session_state.get(STEP_ROWS) or []
    graph = st.session_state.get(GRAPH_OBJ)
    picked = picked_row(event, len(rows))
    if picked is None or graph is None:
        return
    step = graph.steps.iloc[rows[picked]]
    st.session_state[SEL_NODE] = int(step["node"])
    st.session_state[SEL_EDGE] = _edge_row(graph, step)
    _bump(CRITICAL_VERSION)


def _edge_row(graph: StateGraph, step: pd.Series) -> int | None:
    edges = graph.edges
    hit = np.flatnonzero((edges["source"].to_numpy() == int(step["node"])) &
                         (edges["target"].to_numpy() == int(step["next_node"])) &
                         (edges["action"].astype(str).to_numpy() == str(step["action"])))
    return int(hit[0]) if len(hit) else None


def _seed_view(graph: StateGraph, traj_ids: list[str], alarm_kinds: set[str]) -> None:
    """The URL's trajectories, node, edge, steps filter and colours, once per session (a URL
    with a node and no filter, as older links have, filters the steps to that node)."""
    nodes = set(graph.nodes.index.astype(int))
    seed_from_url("g_traj", "traj", lambda s: [t for t in s.split(",") if t in traj_ids])
    if seed_from_url(SEL_NODE, "node", int, nodes):
        st.session_state[FILTER] = ("node", int(st.session_state[SEL_NODE]))
    seed_from_url(SEL_EDGE, "edge", int, set(range(len(graph.edges))))

    def parse(text: str) -> tuple:
        flt = filter_from_url(text, nodes, len(graph.edges), alarm_kinds)
        if flt is None:
            raise ValueError(f"not a filter of this graph: {text!r}")
        return flt

    seed_from_url(FILTER, "filter", parse)
    seed_from_url("g_outcome", "outcome", lambda s: [o for o in s.split(",") if o in OUTCOMES])
    seed_from_url("g_edge_color", "edge_color", str, EDGE_COLOR_MODES)
    seed_from_url("g_value_scale", "value_scale", str, VALUE_SCALES)


def _highlight(graph: StateGraph, paths: list[str], node: int | None,
               edge: int | None) -> Highlight:
    if paths:
        return trajectory_highlight(graph, paths, node, edge)
    if node is not None:
        return node_highlight(graph, node, edge)
    return Highlight(edge=edge)


@st.cache_resource(show_spinner=False, max_entries=64)
def _tables_cached(_graph: StateGraph, _raw: pd.DataFrame, graph_id: str,
                   rule: OutcomeRule) -> dict:
    summary = trajectory_summary(_graph)
    return {"outcome": rule.check(_raw),
            "traj_ids": trajectory_order(_graph), "summary": summary,
            "labels": _traj_labels(summary), "limits": scale_limits(_graph),
            "steps": step_table(_graph), "stats": merge_stats(_graph),
            "structure": _structure(_graph)}


def _structure(graph: StateGraph) -> str:
    """A digest of what node and edge ids mean (each node's kind and key, each edge's ends
    and action): equal for two graphs of one group under other γ, w or penalty."""
    digest = hashlib.sha256()
    nodes, edges = graph.nodes, graph.edges
    for part in (nodes.index.astype(str), nodes["kind"].astype(str),
                 nodes["state_key"].astype(str), edges["source"].astype(str),
                 edges["target"].astype(str), edges["action"].astype(str)):
        digest.update("\x1f".join(part.tolist()).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def _tables(graph: StateGraph, raw: pd.DataFrame, graph_id: str, rule: OutcomeRule) -> dict:
    """What the page shows of one graph that no pick changes: computed once per graph
    (``graph_id`` names its parameters and rule). Not mutated."""
    return _tables_cached(graph, raw, graph_id, rule)


@st.cache_resource(show_spinner=False, max_entries=64)
def _drawn_cached(_graph: StateGraph, graph_id: str, highlight: Highlight, style: DrawStyle,
                  success_reward: float, title: str, assumed: tuple[str, ...]) -> dict:
    return network_data(_graph, highlight, success_reward=success_reward, title=title,
                        graph_id=graph_id, style=style, assumed=assumed)


def _drawn(graph: StateGraph, graph_id: str, highlight: Highlight, style: DrawStyle,
           success_reward: float, title: str, assumed: tuple[str, ...] = ()) -> dict:
    """The component's data; a change of colours is another drawing of the same graph.
    ``assumed``: the notes of the assumptions the drawing's numbers rest on (its legend says
    them)."""
    out = _drawn_cached(graph, graph_id, highlight, style, success_reward, title, assumed)
    return {**out, "graph_id": graph_id}


@st.cache_resource(show_spinner=False, max_entries=64)
def _alarms_cached(_graph: StateGraph, graph_id: str, params: G2POParams,
                   rule: OutcomeRule) -> list[Alarm]:
    return credit_alarms(_graph, rule=rule, params=params)


def _alarms(graph: StateGraph, graph_id: str, ctx: AppContext) -> list[Alarm]:
    return _alarms_cached(graph, graph_id, ctx.params, ctx.rule)


# -- headline, outcome check -------------------------------------------------------------

def _headline(outcome: OutcomeCheck, stats: dict, rule: OutcomeRule) -> None:
    # success by the run's rule, as on every page (a `won` that disagrees is a warning below)
    rate = outcome.n_success / outcome.n_traj if outcome.n_traj else 0.0
    source = success_rule(rule.success_reward, rule.success_threshold)
    truncated = fmt(" · **{}** truncated", outcome.n_truncated) if outcome.n_truncated else ""
    md("**{}** rollouts · success rate **{:.0%}** ({}){} · **{}** steps · **{}** state nodes · "
       "merge rate **{:.0%}**", outcome.n_traj, rate, source, truncated, stats["steps"],
       stats["state_nodes"], stats["merge_rate"])


def _outcome_warning(ctx: AppContext, outcome: OutcomeCheck) -> None:
    """When the success rule does not match the log: say so and offer the fixes."""
    if not outcome.problems:
        return
    with st.container(border=True):
        md("⚠ {}", " ".join(outcome.problems))
        cols = st.columns(max(len(outcome.fixes), 1) + 1)
        for i, fix in enumerate(outcome.fixes):
            cols[i].button(fmt("{}", fix.label), key=f"g_fix_{i}", on_click=apply_fix,
                           help=fmt("{}", fix.label),
                           args=(ctx.active.key, fix))
        cols[-1].caption("The run's outcome rule is also in the sidebar's G2PO parameters "
                         "(kept per run; every page counts success by it).")


# -- beside the graph: critical transitions and alarms --------------------------------------

#: Column widths of the critical-transitions table: its numbers fit a narrow column, the
#: action (text, last) takes what is left.
_CRITICAL_WIDTHS = {"#": 26, "from": 42, "to": 36, "TD error": 60, "mean A": 56}


def _critical(graph: StateGraph, style: DrawStyle, limits: dict[str, float],
              assumed: list[Assumption]) -> None:
    crit = critical_edges(graph, style.critical)
    st.markdown("**Critical transitions** (largest \\|TD error\\|)")
    if crit.empty:
        st.caption("No transition has a non-zero TD error.")
        return
    table = critical_table(crit).drop(columns=["count"])
    st.session_state["_g2po_critical_rows"] = table.index.tolist()
    marked = _marked(table.columns, assumed)
    config = {c: st.column_config.Column(
        width=_CRITICAL_WIDTHS.get(c), label=f"{c} {ASSUMED_MARK}" if c in marked else None)
        for c in table.columns if c in _CRITICAL_WIDTHS or c in marked}
    st.dataframe(style_diverging(table, limits), hide_index=True, key=_critical_key(),
                 on_select=_critical_clicked, selection_mode="single-row",
                 height=min(38 + 35 * len(table), 215), column_config=config)
    _assumption_caption(table.columns, assumed)


def _critical_clicked() -> None:
    event = st.session_state.get(_critical_key())
    rows = st.session_state.get("_g2po_critical_rows") or []
    picked = picked_row(event, len(rows))
    graph = st.session_state.get(GRAPH_OBJ)
    if picked is not None and graph is not None:
        edge = int(rows[picked])
        st.session_state[SEL_EDGE] = edge
        st.session_state[SEL_NODE] = int(graph.edges["source"].iloc[edge])
        st.session_state[FILTER] = ("edge", edge)
        st.session_state["g_tab"] = "Steps"
        _bump(STEPS_VERSION)


def _alarm_list(ctx: AppContext, alarms: list[Alarm], graph: StateGraph,
                style: DrawStyle, assumed: list[Assumption]) -> None:
    """Each alarm a button listing its steps; a ranked alarm's top nodes (then "n more") and
    the critical transitions the truncation alarm explains, each a click that selects it."""
    st.markdown("**Credit alarms**")
    if not alarms:
        st.caption("None for this group.")
        return
    critical = critical_edges(graph, style.critical)
    rank_of = dict(zip(critical.index.astype(int), critical["rank"].astype(int), strict=True))
    for alarm in alarms:
        st.button(fmt("{}", alarm.title), key=f"g_alarm_{alarm.kind}",
                  help=fmt("{}", alarm.detail),
                  on_click=_set_filter, args=(("alarm", alarm.kind),), width="stretch")
        if alarm.ranking is not None and not alarm.ranking.empty:
            for row in alarm.ranking.head(SHOWN).itertuples():
                label = fmt("node {}: from {} states, {:.0%} after invalid actions", row.node,
                            row.in_sources, row.invalid_arrival_share) if alarm.kind == "hub" \
                    else fmt("node {}: the merge moves {:.3g} reward units of value "
                             "(Σ |v − V|)", row.node, row.credit_moved)
                st.button(label, key=f"g_alrank_{alarm.kind}_{row.node}",
                          type="tertiary", on_click=_select_node, args=(int(row.node),))
            if len(alarm.ranking) > SHOWN:
                st.caption(fmt("{} more (the button above lists every step)",
                               len(alarm.ranking) - SHOWN))
        for edge in alarm.edges:
            if edge in rank_of:
                st.button(fmt("explains critical transition #{} (TD error {:+.3g})",
                              rank_of[edge], graph.edges["td_error"].iloc[edge]),
                          key=f"g_alcrit_{alarm.kind}_{edge}", type="tertiary",
                          on_click=_select_edge, args=(edge,))
    # the alarms read validity (penalty-only signal) and the advantages (collapsed groups)
    _assumption_caption(("valid", "A"), assumed, what="the alarms rest on it")


def _select_node(node: int) -> None:
    st.session_state[SEL_NODE], st.session_state[SEL_EDGE] = node, None
    st.session_state[FILTER] = ("node", node)
    st.session_state["g_tab"] = "Steps"


def _select_edge(edge: int) -> None:
    graph = st.session_state.get(GRAPH_OBJ)
    if graph is None or edge >= len(graph.edges):
        return
    st.session_state[SEL_EDGE] = edge
    st.session_state[SEL_NODE] = int(graph.edges["source"].iloc[edge])
    st.session_state[FILTER] = ("edge", edge)
    st.session_state["g_tab"] = "Steps"


def _set_filter(value) -> None:
    st.session_state[FILTER] = value
    st.session_state["g_tab"] = "Steps"
    _bump(CRITICAL_VERSION, STEPS_VERSION)


#: The step-table column behind each column name the page's tables use.
_SHOWN_AS = {"valid": "is_action_valid", "invalid": "invalid", "A": "adv", "A^EP": "adv_ep",
             "A^NC": "adv_nc", "A^EC": "adv_ec", "mean A": "adv", "mean A^EP": "adv_ep",
             "mean A^NC": "adv_nc", "mean A^EC": "adv_ec", "ΣA": "adv",
             "x = V(next) − p·invalid": "penalised_next_value"}
#: The mark beside a number that rests on an assumption (the caption under the table says it).
ASSUMED_MARK = "*"


def _marked(columns, assumed: list[Assumption]) -> list[str]:
    """The shown columns whose numbers rest on one of the assumptions."""
    reach = set().union(*(a.columns for a in assumed)) if assumed else set()
    return [str(c) for c in columns if _SHOWN_AS.get(str(c)) in reach]


def _assumption_marks(columns, assumed: list[Assumption], note: bool = True) -> dict:
    """Column configs renaming each column whose numbers rest on an assumption to
    ``name *``; with ``note``, the caption saying what was assumed, written here."""
    marked = _marked(columns, assumed)
    if note:
        _assumption_caption(columns, assumed)
    return {c: st.column_config.Column(label=f"{c} {ASSUMED_MARK}") for c in marked}


def _assumption_caption(columns, assumed: list[Assumption],
                        what: str = "the columns marked * rest on it") -> None:
    """One caption per assumption that reaches the shown columns: what the loader assumed
    (``what``: trusted text saying which numbers rest on it)."""
    shown = {_SHOWN_AS.get(str(c)) for c in columns}
    for a in assumed:
        if a.columns & shown:
            st.caption(fmt("{} assumed: {} ({})", ASSUMED_MARK, a.note, what))


# -- the tabs ------------------------------------------------------------------------------

def _filtered_rows(graph: StateGraph, alarms: list[Alarm], shown_ids: list[str]
                   ) -> tuple[np.ndarray, str | None, Alarm | None]:
    """Positions in ``graph.steps`` of the steps the tables show, and what filters them."""
    steps = graph.steps
    keep = steps["traj_id"].astype(str).isin(shown_ids).to_numpy().copy()
    flt = st.session_state.get(FILTER)
    what, alarm = None, None
    if flt and flt[0] == "node" and flt[1] in graph.nodes.index:
        keep &= steps["node"].to_numpy() == flt[1]
        what = f"the {int(keep.sum())} step(s) at node {flt[1]}"
    elif flt and flt[0] == "edge" and 0 <= flt[1] < len(graph.edges):
        e = graph.edges.iloc[flt[1]]
        keep &= (steps["node"].to_numpy() == e["source"]) & \
            (steps["next_node"].to_numpy() == e["target"]) & \
            (steps["action"].astype(str).to_numpy() == str(e["action"]))
        what = (f"the {int(keep.sum())} step(s) along edge {int(e['source'])} → "
                f"{int(e['target'])} ({truncate(e['action'], 40)})")
    elif flt and flt[0] == "alarm":
        alarm = next((a for a in alarms if a.kind == flt[1]), None)
        if alarm is not None:
            pairs = set(zip(alarm.steps["traj_id"].astype(str), alarm.steps["t"].astype(int),
                            strict=True))
            keep &= np.fromiter(((t, int(s)) in pairs for t, s in
                                 zip(steps["traj_id"].astype(str), steps["t"], strict=True)),
                                dtype=bool, count=len(steps))
            what = f"the {int(keep.sum())} step(s) of “{alarm.title}”"
    return np.flatnonzero(keep), what, alarm


def _steps_tab(graph: StateGraph, full: pd.DataFrame, alarms: list[Alarm],
               shown_ids: list[str], limits: dict[str, float],
               assumed: list[Assumption]) -> None:
    rows, what, alarm = _filtered_rows(graph, alarms, shown_ids)
    if what:
        info, clear = st.columns([5, 1])
        with info:
            md("Showing {}. {}", what, alarm.detail if alarm else "")
        clear.button("Show all steps", key="g_clear_filter", on_click=_set_filter,
                     args=(None,))
    table = full[full.index.isin(rows)]
    if len(table) > PAGE_ROWS:  # styling costs per cell: long tables come in pages
        pages = (len(table) + PAGE_ROWS - 1) // PAGE_ROWS
        if st.session_state.get("g_steps_page", 1) > pages:
            st.session_state["g_steps_page"] = 1
        page = st.number_input(fmt("Page (of {}, {} steps each)", pages, PAGE_ROWS), 1, pages,
                               key="g_steps_page")
        table = table.iloc[(page - 1) * PAGE_ROWS: page * PAGE_ROWS]
    st.session_state[STEP_ROWS] = table.index.tolist()
    marks = _assumption_marks(table.columns, assumed)
    st.dataframe(style_diverging(table, limits), hide_index=True, key=_steps_key(),
                 on_select=_row_clicked, selection_mode="single-row", height=360,
                 column_config=marks)


def _node_tab(ctx: AppContext, graph: StateGraph, node: int | None,
              limits: dict[str, float], assumed: list[Assumption]) -> None:
    nodes = node_choices(graph)
    st.session_state["g_node"] = node if node in nodes else None
    pick, other = st.columns(2)
    node = pick.selectbox("Select a node", list(nodes), key="g_node", placeholder="none",
                          format_func=nodes.get, on_change=_node_picked)
    if st.session_state.get("g_node2") not in nodes:
        st.session_state["g_node2"] = None
    second = other.selectbox("Compare its key with node", list(nodes), key="g_node2",
                             placeholder="none", format_func=nodes.get)
    if node is None:
        st.caption("Click a node in the graph, or pick one here, to list its occurrences and "
                   "outgoing transitions.")
        return
    row = graph.nodes.loc[node]
    md("**Node {}** ({}) · visits {} · V {} · value variance {} · key: {}", node, row["kind"],
       int(row["visits"]), format_number(row["value"], 4), format_number(row["value_var"], 4),
       row["label"])
    _state_over_training_link(ctx, graph, node)
    if row["kind"] == "state":
        st.code(str(row["state_key"]), language=None, wrap_lines=True)
    if second is not None and second != node:
        _key_diff(graph, node, second)
    st.markdown("**Occurrences** (the node-centric reference set: one row per transition)")
    occurrences = node_occurrences(graph, node, ctx.params.penalty)
    marks = _assumption_marks(occurrences.columns, assumed)
    st.dataframe(style_diverging(occurrences, limits), hide_index=True, column_config=marks)
    st.markdown("**Outgoing transitions**")
    outgoing = outgoing_transitions(graph, node)
    marks = _assumption_marks(outgoing.columns, assumed)
    st.dataframe(style_diverging(outgoing, limits), hide_index=True, column_config=marks)


def _node_picked() -> None:
    """Picking a node in the Node tab selects it (and filters the steps to it)."""
    node = st.session_state.get("g_node")
    st.session_state[SEL_NODE], st.session_state[SEL_EDGE] = node, None
    st.session_state[FILTER] = None if node is None else ("node", int(node))
    _bump(CRITICAL_VERSION, STEPS_VERSION)


def _state_over_training_link(ctx: AppContext, graph: StateGraph, node: int) -> None:
    """A button opening the "state over training" page on this node's state key (a state node
    of a log with training steps; terminals have no history)."""
    row = graph.nodes.loc[node]
    if row["kind"] != "state" or ctx.active is None or not ctx.active.log.has_train_steps:
        return
    if st.button("This state over training", key=f"state_over_training:{node}",
                 help="Visits, value and advantages of this state at every training step "
                      "where its task occurs."):
        open_state_history(ctx, str(row["canonical_key"]))


def _key_diff(graph: StateGraph, a: int, b: int) -> None:
    """The character diff of two nodes' state keys: why they did not merge."""
    key_a, key_b = str(graph.nodes.loc[a, "state_key"]), str(graph.nodes.loc[b, "state_key"])
    parts = []
    for op, text in key_diff(key_a, key_b):
        safe = escape_html(text)
        if op == "delete":
            parts.append(f'<del style="background:#f8c4c4;color:#000">{safe}</del>')
        elif op == "insert":
            parts.append(f'<ins style="background:#c4f0c4;color:#000">{safe}</ins>')
        else:
            parts.append(safe)
    st.markdown(fmt("**Key diff, node {} → node {}** (struck out: only in {}; underlined: "
                    "only in {})", int(a), int(b), int(a), int(b)))
    st.html('<pre style="white-space:pre-wrap;font-size:0.85em">' + "".join(parts) + "</pre>")


def _traj_labels(summary: pd.DataFrame) -> dict[str, str]:
    return {str(r.traj_id): f"{r.rollout} · {r.outcome} · reward {r.reward:g} · "
                            f"{r.length} steps" for r in summary.itertuples()}


def _step_text(graph: StateGraph, traj_id: str, labels: dict[str, str]) -> None:
    md("**{}**", labels.get(traj_id, lead_with_difference([traj_id], limit=40)[0][0]))
    steps = graph.steps[graph.steps["traj_id"].astype(str).to_numpy() == traj_id].sort_values(
        "t")
    ts = steps["t"].tolist()
    t = st.selectbox("Step of the trajectory", ts, key=f"g_step_text:{traj_id}")
    row = steps[steps["t"] == t].iloc[0]
    text_col = "observation" if "observation" in steps.columns else "state_key"
    st.markdown("**Observation**")
    st.code(str(row[text_col]), language=None, wrap_lines=True)
    st.markdown("**Action**")
    st.code(str(row["action"]), language=None, wrap_lines=True)
    if "response" in steps.columns and isinstance(row["response"], str):
        st.markdown("**Model response**")
        st.code(row["response"], language=None, wrap_lines=True)
    if "prompt" in steps.columns and isinstance(row["prompt"], str):  # a verl dump's input
        with st.expander(fmt("The whole prompt ({:,} characters)", len(row["prompt"]))):
            st.code(row["prompt"], language=None, wrap_lines=True)
