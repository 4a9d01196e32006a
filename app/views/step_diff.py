"""Step diff: one task at two training steps side by side, the state graph of each, and what
changed: states and transitions that appeared or vanished, each kept state's value change,
and the change of the success rate."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import data
from app.across_steps import group_choice, page_task_index, sidebar_moved, task_label
from app.context import AppContext
from app.graph import Highlight, network_data
from app.graph_component import graph_component
from app.safe import fmt, truncate
from app.tables import style_diverging
from app.ui import md, no_run_message, show_error
from g2po.analysis.labels import snap_frame
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.stepdiff import APPEARED, KEPT, VANISHED, step_diff
from g2po.errors import G2POError

__all__ = ["render", "changed_highlight", "GRAPH_HEIGHT"]

GRAPH_HEIGHT = 420


def changed_highlight(transitions: pd.DataFrame, states: pd.DataFrame, side: str) -> Highlight:
    """Graph ``side`` (``a`` or ``b``) with what the other step lacks emphasised: in A the
    states and transitions that vanished, in B those that appeared."""
    status = VANISHED if side == "a" else APPEARED
    nodes = states.loc[states["status"] == status, f"node_{side}"]
    edges = transitions[transitions["status"] == status]
    keys = {(int(s), str(a), int(t)) for s, a, t in zip(
        edges[f"from_node_{side}"], edges["action"], edges[f"to_node_{side}"], strict=True)}
    return Highlight(nodes=frozenset(int(n) for n in nodes), edges=frozenset(keys))


def _draw(graph: StateGraph, highlight: Highlight, title: str, key: str, graph_key: str,
          success_reward: float) -> None:
    drawn = network_data(graph, highlight, success_reward=success_reward, title=title,
                         graph_id=graph_key)
    graph_component(drawn, height=GRAPH_HEIGHT, key=key)


def render(ctx: AppContext) -> None:
    st.title("Step diff")
    opened = ctx.active
    if opened is None or ctx.train_step is None:
        no_run_message()
        return
    index = page_task_index(ctx, opened, "sd_by")
    if index is None:
        return
    counts = index.table.groupby("task")["train_step"].nunique()
    tasks = [t for t in index.tasks() if counts[t] >= 2]
    if not tasks:
        st.info(fmt("No task of {} occurs at two training steps (matched by {}).", opened.name,
                    index.by))
        return
    try:
        current = index.task_of(ctx.train_step, ctx.group_id) if ctx.group_id else None
    except data.LOADER_ERRORS:
        current = None
    fresh = sidebar_moved(ctx, "step_diff")
    if fresh and current in tasks:
        st.session_state["sd_task"] = current
    if st.session_state.get("sd_task") not in tasks:
        st.session_state["sd_task"] = current if current in tasks else tasks[0]
    task = st.selectbox(fmt("Task ({})", index.by), tasks, key="sd_task",
                        format_func=lambda t: task_label(t, int(counts[t])))
    # at the sidebar's training step, the sidebar's group (the URL's), not another of the task
    groups = index.groups_of(task, prefer={ctx.train_step: ctx.group_id} if ctx.group_id
                             else None)
    occurs = groups["train_step"].astype(int).tolist()
    here = occurs.index(ctx.train_step) if ctx.train_step in occurs else len(occurs) - 1
    a_col, b_col = st.columns(2)
    step_a = a_col.selectbox("Training step A", occurs, index=max(here - 1, 0),
                             key=f"sd_a:{task}")
    step_b = b_col.selectbox("Training step B", occurs, index=max(here, 1), key=f"sd_b:{task}")
    if step_a == step_b:
        st.info("Choose two different training steps.")
        return
    group_of = dict(zip(groups["train_step"].astype(int), groups["group_id"].astype(str),
                        strict=True))
    for column, step in ((a_col, step_a), (b_col, step_b)):
        group_of[step] = group_choice(column, index, task, int(step), group_of[step], fresh,
                                      f"sd_group:{task}:{step}", say=True)
    graphs = {}
    for side, step in (("a", step_a), ("b", step_b)):
        try:
            graphs[side] = data.group_graph(opened.log, opened.key, int(step), group_of[step],
                                            ctx.params, ctx.rule)
        except data.LOADER_ERRORS + (G2POError,) as err:
            show_error(f"Cannot build the graph of group {group_of[step]} at training step "
                       f"{step}", err)
            return
    diff = step_diff(graphs["a"], graphs["b"])
    n = diff.counts()
    cols = st.columns(5)
    change = diff.success_change
    if round(change * 100) == 0:  # no arrow for no change
        cols[0].metric(fmt("Success rate at {}", step_b), fmt("{:.0%}", diff.success_b),
                       fmt("no change vs {}", step_a), delta_color="off", delta_arrow="off")
    else:
        cols[0].metric(fmt("Success rate at {}", step_b), fmt("{:.0%}", diff.success_b),
                       fmt("{:+.0%} vs {}", change, step_a))
    cols[1].metric("States appeared", fmt("{}", n["states_appeared"]))
    cols[2].metric("States vanished", fmt("{}", n["states_vanished"]))
    cols[3].metric("Transitions appeared", fmt("{}", n["transitions_appeared"]))
    cols[4].metric("Transitions vanished", fmt("{}", n["transitions_vanished"]))

    # each graph the page's width, one above the other, as readable as the explorer's
    for side, step, what in (("a", step_a, "vanished by"), ("b", step_b, "new at")):
        md("**Training step {}** · group {}", step, group_of[step])
        st.caption(fmt("Emphasised: states and transitions {} training step {}.", what,
                       step_b if side == "a" else step))
        gid = data.graph_id(opened.key, int(step), group_of[step], ctx.params, ctx.rule)
        _draw(graphs[side], changed_highlight(diff.transitions, diff.states, side),
              f"Training step {step}, group {group_of[step]}", f"sd_graph_{side}", gid,
              ctx.rule.success_reward)

    st.subheader("States")
    status = st.multiselect("Show", [APPEARED, VANISHED, KEPT], default=[APPEARED, VANISHED, KEPT],
                            key="sd_status")
    shown = snap_frame(diff.states[diff.states["status"].isin(status)]).assign(
        state=lambda f: f["label"].map(lambda s: truncate(s, 80)),
        node_a=lambda f: _node_text(f["node_a"]),
        node_b=lambda f: _node_text(f["node_b"])).drop(columns=["label", "key"])
    shown = shown[["state", *[c for c in shown.columns if c != "state"]]]
    st.dataframe(style_diverging(shown, ["value_change"]), hide_index=True, height=300,
                 column_config={"node_a": st.column_config.TextColumn(
                     fmt("node at {}", step_a), help="— : not seen at this step"),
                     "node_b": st.column_config.TextColumn(
                         fmt("node at {}", step_b), help="— : not seen at this step")})
    st.caption("Blank value: the state was not seen at that training step.")
    st.subheader("Transitions")
    edges = snap_frame(diff.transitions[diff.transitions["status"].isin(status)])
    edges = edges.assign(source=edges["source"].map(_key_text),
                         action=edges["action"].map(lambda s: truncate(s, 50)),
                         target=edges["target"].map(_key_text))
    edges = edges.drop(columns=[c for c in edges.columns if c.endswith(("_node_a", "_node_b"))])
    st.dataframe(style_diverging(edges, ["td_error_a", "td_error_b"]), hide_index=True,
                 height=300)
    st.caption("Count 0 and a blank TD error: the transition was not taken at that step.")


def _node_text(nodes: pd.Series) -> pd.Series:
    """Node ids as the graph names them, "—" where the state was not seen (no ``-1``)."""
    return nodes.map(lambda n: "—" if int(n) < 0 else str(int(n)))


def _key_text(key: str) -> str:
    """A transition's end: a state's key (shortened), or a terminal's kind."""
    text = str(key)
    if text in ("<success>", "<failure>", "<truncated>"):
        return text[1:-1]
    return truncate(text, 50)
