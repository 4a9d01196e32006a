"""The group explorer's Node tab: the selected node's value, key, occurrences (the node-centric
reference set) and outgoing transitions; the character diff of its key against a second node's
(why did they not merge?); and what if the states merged differently — the two nodes made one,
or the node split by where its steps lead next (:func:`g2po.analysis.whatif.merge_nodes`,
:func:`~g2po.analysis.whatif.split_node`) — with the recomputed values, TD errors and
advantages against the current ones. Two whole state keys side by side are the What-if
merging page's.
"""

from __future__ import annotations

import streamlit as st

from app.context import AppContext
from app.explorer import clicks
from app.explorer.compute import PageTables, edited
from app.explorer.marks import assumption_marks
from app.explorer.state import EDIT_MIN, NODE, NODE2, Picks, set_widgets, widget
from app.navigation import open_state_history, page_link
from app.safe import escape_html, fmt
from app.tables import (
    changed_steps,
    flip_style,
    node_choices,
    node_occurrences,
    outgoing_transitions,
    style_diverging,
)
from app.ui import md, show_short_error
from g2po.analysis.assumptions import Assumption
from g2po.analysis.group_view import ComputedGroup
from g2po.analysis.labels import format_number, key_diff
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.whatif import DEFAULT_MIN_CHANGE, WhatIf, node_changes_text

__all__ = ["node_tab", "edit_choices"]


def node_tab(ctx: AppContext, view: ComputedGroup, tables: PageTables, picks: Picks,
             assumed: list[Assumption]) -> None:
    graph = view.graph
    nodes = node_choices(graph)
    set_widgets(**{NODE: picks.node if picks.node in nodes else None})
    if widget(NODE2) not in nodes:
        set_widgets(**{NODE2: None})
    pick, other = st.columns(2)
    node = pick.selectbox("Select a node", list(nodes), key=NODE, placeholder="none",
                          format_func=nodes.get, on_change=clicks.node_picked)
    second = other.selectbox("Compare with node (key diff, merge)", list(nodes), key=NODE2,
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
    st.dataframe(style_diverging(occurrences, tables.limits), hide_index=True,
                 column_config=assumption_marks(occurrences.columns, assumed))
    st.markdown("**Outgoing transitions**")
    outgoing = outgoing_transitions(graph, node)
    st.dataframe(style_diverging(outgoing, tables.limits), hide_index=True,
                 column_config=assumption_marks(outgoing.columns, assumed))
    _what_if(ctx, view, tables, picks, node, second)


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


def edit_choices(graph: StateGraph, node: int, second: int | None
                 ) -> tuple[tuple | None, tuple | None]:
    """The what-if edits the Node tab offers on ``node`` (and ``second``): a merge of two
    different state nodes, and a split of a state node whose steps lead to two places or
    more (None where not offered)."""
    states = set(graph.nodes.index[graph.nodes["kind"] == "state"].astype(int))
    merge = ("merge", int(node), int(second)) if node in states and second in states and \
        second != node else None
    steps = graph.steps
    targets = steps.loc[steps["node"].to_numpy() == node, "next_node"].nunique()
    split = ("split", int(node)) if node in states and targets >= 2 else None
    return merge, split


def _what_if(ctx: AppContext, view: ComputedGroup, tables: PageTables, picks: Picks,
             node: int, second: int | None) -> None:
    """Merge the node with the second one, or split it by where its steps lead next: the
    recomputed values and advantages against the current ones, until cleared or another
    group, key or rule is chosen."""
    st.markdown("**What if** this node merged with the second one, or split by where its "
                "steps lead next?")
    merge, split = edit_choices(view.graph, node, second)
    cols = st.columns([2, 2, 2, 1])
    cols[0].button(fmt("Merge node {} with node {}", node, second if merge else "…"),
                   key="g_edit_merge", disabled=merge is None, on_click=clicks.set_edit,
                   args=(merge,), help="Pick a second state node above.")
    cols[1].button(fmt("Split node {} by next state", node), key="g_edit_split",
                   disabled=split is None, on_click=clicks.set_edit, args=(split,),
                   help="One node per next state (or terminal) its steps reach; offered where "
                        "they reach two or more.")
    min_change = cols[2].number_input("A changes when it moves by more than", 0.0, 100.0,
                                      value=DEFAULT_MIN_CHANGE, step=0.05, key=EDIT_MIN,
                                      help="or changes sign")
    cols[3].button("Clear", key="g_edit_clear", disabled=picks.edit is None,
                   on_click=clicks.set_edit, args=(None,))
    page_link(ctx, "whatif", fmt("What-if merging: the group (or the run) under a second state "
                                 "key, side by side →"))
    if picks.edit is None or picks.edit[1] != node:  # an edit of another node: kept, not shown
        return
    try:
        result = edited(view, tables.graph_id, picks.edit, min_change)
    except ValueError as err:
        show_short_error("Cannot apply the edit", err)
        return
    _edit_result(result)


def _edit_result(result: WhatIf) -> None:
    s = result.summary()
    md("**{}**: {} of {} steps change (A moves by more than {:g} or changes sign), {} sign "
       "flip(s), largest |ΔA| {:.3f}; state nodes {} → {}.", result.label_after, s["changed"],
       s["steps"], result.min_change, s["sign_flips"], s["max_abs_delta"], s["nodes_before"],
       s["nodes_after"])
    st.caption("Node values before → after (each side's nodes with V and the words that tell "
               "their keys apart):")
    st.dataframe(node_changes_text(result.nodes), hide_index=True,
                 height=min(320, 3 + 35 * (1 + len(result.nodes))))
    shown, flips = changed_steps(result)
    if shown.empty:
        st.info(fmt("No step's advantage changes by more than {:g} or changes sign.",
                    result.min_change))
        return
    st.caption("The steps whose A changes: highlighted where it changes sign; sign flips "
               "first, then the largest change; V and TD error before and after.")
    st.dataframe(flip_style(shown, flips), hide_index=True, height=300)
