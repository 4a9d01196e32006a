"""The group explorer's tabs below the graph: the steps (filtered to a node, an edge or an
alarm's steps; a click on a row finds it in the graph), one table per rollout, a node
(:mod:`app.explorer.node_tab`) and a step's text beside its trajectory's tokens coloured by
credit. Lazy: only the open tab is computed and sent, so the graph draws sooner.

Where the log recorded the advantage its trainer trained with, the step tables show it beside
the recomputed A (column ``recorded (trainer)``) with the audit's word for each step, and the
token view offers it as a second colouring; nothing of it shows where the log has none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.context import AppContext
from app.explorer import clicks
from app.explorer.compute import PageTables
from app.explorer.marks import assumption_marks
from app.explorer.node_tab import node_tab
from app.explorer.state import STEPS_PAGE, TAB, Picks, set_widgets, widget
from app.safe import fmt, truncate
from app.tables import RECORDED, step_table, style_diverging
from app.token_view import token_panel
from app.ui import md
from g2po.analysis.alarms import Alarm
from g2po.analysis.assumptions import Assumption
from g2po.analysis.group_view import ComputedGroup
from g2po.analysis.labels import lead_with_difference
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.tokens import Credit

__all__ = ["tabs", "TABS", "PAGE_ROWS", "MAX_ROLLOUT_TABLES"]

TABS = ("Steps", "One table per rollout", "Node", "Step text")
#: Steps per page of the step table.
PAGE_ROWS = 50
#: Above this many rollouts the per-rollout tab shows the first ones only.
MAX_ROLLOUT_TABLES = 16
#: What the step tables' recorded-advantage columns mean (said where they are shown).
_RECORDED_NOTE = ("A: recomputed by G2PO under the sidebar's parameters; recorded (trainer): "
                  "the advantage the log's trainer recorded for the step, a fact about the "
                  "run; audit: how it compares with the audit's recomputation (matches, "
                  "zeroed, broadcast, sign flipped, misaligned, sign flip, not finite, "
                  "differs).")


def tabs(ctx: AppContext, view: ComputedGroup, tables: PageTables, picks: Picks,
         shown_ids: list[str], assumed: list[Assumption]) -> None:
    """The four tabs, only the open one drawn."""
    drawn = st.tabs(list(TABS), key=TAB, on_change="rerun")
    tab = dict(zip(TABS, drawn, strict=True))
    with tab["Steps"]:
        if tab["Steps"].open is not False:
            _steps_tab(view, tables, picks, shown_ids, assumed)
    with tab["One table per rollout"]:
        if tab["One table per rollout"].open:
            _rollouts_tab(view, tables, shown_ids, assumed)
    with tab["Node"]:
        if tab["Node"].open:
            node_tab(ctx, view, tables, picks, assumed)
    with tab["Step text"]:
        if tab["Step text"].open:
            chosen = picks.trajectories
            _step_text(view, chosen[0] if chosen else (shown_ids or tables.traj_ids)[0],
                       tables.labels)


def _recorded_note(view: ComputedGroup) -> None:
    if view.recorded is not None:
        st.caption(_RECORDED_NOTE)


def filtered_rows(graph: StateGraph, alarms: list[Alarm], picks: Picks, shown_ids: list[str]
                  ) -> tuple[np.ndarray, str | None, Alarm | None]:
    """Positions in ``graph.steps`` of the steps the tables show, and what filters them."""
    steps = graph.steps
    keep = steps["traj_id"].astype(str).isin(shown_ids).to_numpy().copy()
    flt = picks.filter
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
            pairs = pd.MultiIndex.from_arrays([alarm.steps["traj_id"].astype(str),
                                               alarm.steps["t"].astype(int)])
            keep &= pd.MultiIndex.from_arrays([steps["traj_id"].astype(str),
                                               steps["t"].astype(int)]).isin(pairs)
            what = f"the {int(keep.sum())} step(s) of “{alarm.title}”"
    return np.flatnonzero(keep), what, alarm


def _edge_rows(graph: StateGraph, rows: pd.Index) -> list[int | None]:
    """The edge (row of ``graph.edges``) each of the step rows ``rows`` (positions in
    ``graph.steps``) takes."""
    edges = graph.edges
    row_of: dict[tuple, int] = {}
    for i, key in enumerate(zip(edges["source"].astype(int), edges["action"].astype(str),
                                edges["target"].astype(int), strict=True)):
        row_of.setdefault(key, i)
    steps = graph.steps.iloc[np.asarray(rows, dtype=np.int64)]
    return [row_of.get(key) for key in zip(
        steps["node"].astype(int), steps["action"].astype(str), steps["next_node"].astype(int),
        strict=True)]


def _steps_tab(view: ComputedGroup, tables: PageTables, picks: Picks, shown_ids: list[str],
               assumed: list[Assumption]) -> None:
    graph = view.graph
    rows, what, alarm = filtered_rows(graph, view.alarms, picks, shown_ids)
    if what:
        info, clear = st.columns([5, 1])
        with info:
            md("Showing {}. {}", what, alarm.detail if alarm else "")
        clear.button("Show all steps", key="g_clear_filter", on_click=clicks.set_filter,
                     args=(None,))
    table = tables.steps[tables.steps.index.isin(rows)]
    if len(table) > PAGE_ROWS:  # styling costs per cell: long tables come in pages
        pages = (len(table) + PAGE_ROWS - 1) // PAGE_ROWS
        if widget(STEPS_PAGE, 1) > pages:
            set_widgets(**{STEPS_PAGE: 1})
        page = st.number_input(fmt("Page (of {}, {} steps each)", pages, PAGE_ROWS), 1, pages,
                               key=STEPS_PAGE)
        table = table.iloc[(page - 1) * PAGE_ROWS: page * PAGE_ROWS]
    nodes = graph.steps["node"].to_numpy()[table.index.to_numpy(dtype=np.int64)]
    picks.step_rows = tuple(zip((int(n) for n in nodes), _edge_rows(graph, table.index),
                                strict=True))
    _recorded_note(view)
    marks = assumption_marks(table.columns, assumed)
    st.dataframe(style_diverging(table, tables.limits), hide_index=True, key=picks.steps_key,
                 on_select=clicks.row_clicked, selection_mode="single-row", height=360,
                 column_config=marks)


def _rollouts_tab(view: ComputedGroup, tables: PageTables, shown_ids: list[str],
                  assumed: list[Assumption]) -> None:
    st.markdown("**Trajectories**")
    summary = tables.summary
    shown = summary[summary["traj_id"].isin(shown_ids)].drop(columns=["traj_id"]).rename(
        columns={"adv_sum": "ΣA"})
    marks = assumption_marks(shown.columns, assumed)
    st.dataframe(style_diverging(shown, ["ΣA"]), hide_index=True,
                 height=min(38 + 35 * len(shown), 300), column_config=marks)
    if len(shown_ids) > MAX_ROLLOUT_TABLES:
        st.caption(fmt("{} rollouts: showing the first {}; the Steps tab has them all.",
                       len(shown_ids), MAX_ROLLOUT_TABLES))
    _recorded_note(view)
    for t in shown_ids[:MAX_ROLLOUT_TABLES]:
        md("**{}**", tables.labels[t])
        one = step_table(view.graph, t, recorded=view.recorded)
        st.dataframe(style_diverging(one, tables.limits), hide_index=True,
                     column_config=assumption_marks(one.columns, assumed))


def _credits(graph: StateGraph, steps: pd.DataFrame) -> list[Credit]:
    """What the trajectory's tokens can be coloured by: G2PO's advantage, and the one the
    trainer recorded where the log has it (each on the group's scale)."""
    credits = [Credit("g2po", steps["adv"].to_numpy(dtype=float),
                      graph.steps["adv"].to_numpy(dtype=float))]
    if "advantage" in steps.columns and steps["advantage"].notna().any():
        credits.append(Credit(RECORDED, steps["advantage"].to_numpy(dtype=float),
                              graph.steps["advantage"].to_numpy(dtype=float)))
    return credits


def _step_text(view: ComputedGroup, traj_id: str, labels: dict[str, str]) -> None:
    """One step's observation, action, response and prompt, beside the trajectory's tokens
    coloured by credit (:func:`app.token_view.token_panel`)."""
    graph = view.graph
    md("**{}**", labels.get(traj_id, lead_with_difference([traj_id], limit=40)[0][0]))
    steps = graph.steps[graph.steps["traj_id"].astype(str).to_numpy() == traj_id].sort_values(
        "t")
    text, tokens = st.columns(2)
    with text:
        t = st.selectbox("Step of the trajectory", steps["t"].tolist(),
                         key=f"g_step_text:{traj_id}")
        row = steps[steps["t"] == t].iloc[0]
        st.markdown("**Observation**")
        st.code(str(row["observation" if "observation" in steps.columns else "state_key"]),
                language=None, wrap_lines=True)
        st.markdown("**Action**")
        st.code(str(row["action"]), language=None, wrap_lines=True)
        if "response" in steps.columns and isinstance(row["response"], str):
            st.markdown("**Model response**")
            st.code(row["response"], language=None, wrap_lines=True)
        if "prompt" in steps.columns and isinstance(row["prompt"], str):  # a verl dump's input
            with st.expander(fmt("The whole prompt ({:,} characters)", len(row["prompt"]))):
                st.code(row["prompt"], language=None, wrap_lines=True)
    with tokens:
        st.markdown("**The trajectory's tokens**, coloured by credit")
        token_panel(steps, _credits(graph, steps), key=f"g_tokens:{traj_id}")
