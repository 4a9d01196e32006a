"""State over training: one state of one task across every training step where the task occurs,
its visits, value V, value variance and mean advantages, as charts. Tasks are matched across
training steps by the log's ``task`` column (or by group id, where a run keeps group ids
stable) from the step files' footers, and one group per training step is read.

Other pages open it on a state with :func:`app.navigation.open_state_history`.
"""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from app import data
from app.across_steps import group_choice, page_task_index, sidebar_moved, task_label
from app.charts import history_figure
from app.context import AppContext, OpenLog
from app.navigation import goto_step, take_state_request
from app.safe import fmt, truncate
from app.ui import md, no_run_message, picked_row, show_error
from app.url_state import url_once, write_url
from g2po.analysis.history import history_of, state_table
from g2po.analysis.labels import format_number, snap_frame
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders.across_steps import TaskIndex, load_groups_coded

__all__ = ["render", "state_token"]

_CHARTS = (
    ({"visits": "visits"}, "Visits (steps taken at the state)", "bars"),
    ({"value": "V"}, "Value V(state)", "lines"),
    ({"value_var": "value variance"}, "Variance of the step values merged there", "lines"),
    ({"adv_mean": "A", "adv_nc_mean": "A^NC", "adv_ec_mean": "A^EC", "adv_ep_mean": "A^EP"},
     "Mean advantage of the steps taken there", "lines"),
)


@st.cache_data(show_spinner=False, max_entries=32)
def _state_table(_log, key: str, version: tuple[int, int], _pairs: tuple[tuple[int, str], ...],
                 pairs_key: str, params: G2POParams, rule: OutcomeRule):
    """Every state of the task at every step (one read, one G2PO call): choosing another
    state then costs nothing. ``pairs_key`` names ``_pairs`` (hashing hundreds of tuples on
    every rerun would cost more than the lookup)."""
    steps, keys = load_groups_coded(_log, _pairs)
    return state_table(steps, keys, rule=rule, params=params)


def render(ctx: AppContext) -> None:
    st.title("State over training")
    request = take_state_request()
    opened = ctx.active
    if request and request.get("run"):
        opened = next((o for o in ctx.logs if o.key == request["run"]), opened)
    if opened is None or ctx.train_step is None:
        no_run_message()
        return
    index = page_task_index(ctx, opened, "sh_by")
    if index is None:
        return
    version = data.log_version(opened.log)
    tasks = index.tasks()
    if not tasks:
        st.info(fmt("{} holds no groups.", opened.name))
        return
    n_steps = index.table.groupby("task")["train_step"].nunique().to_dict()
    # where the user comes from: the node's group (a request), else a reloaded or shared URL's
    # followed state, else the sidebar's group (the URL's)
    url_place = _url_place(index)  # read once per session: later, the page's choices rule
    if request is not None:
        url_place = None
    here = (request["train_step"], request["group_id"]) if request else \
        (url_place[:2] if url_place else (ctx.train_step, ctx.group_id))
    moved = sidebar_moved(ctx, "state_history")
    fresh = request is not None or url_place is not None or moved
    try:
        current = index.task_of(*here) if here[1] is not None else None
    except data.LOADER_ERRORS:
        current = None
    if fresh and current is not None:
        st.session_state["sh_task"] = current
    if st.session_state.get("sh_task") not in tasks:
        st.session_state["sh_task"] = current if current in tasks else tasks[0]
    task = st.selectbox(fmt("Task ({})", index.by), tasks, key="sh_task",
                        format_func=lambda t: task_label(t, n_steps.get(t, 0)))
    occurs = index.groups_of(task)["train_step"].astype(int).tolist()
    if fresh and here[0] in occurs:
        st.session_state["sh_from"] = here[0]
    if st.session_state.get("sh_from") not in occurs:
        st.session_state["sh_from"] = ctx.train_step if ctx.train_step in occurs else occurs[-1]

    pick_col, group_col, state_col = st.columns([1, 1, 3])
    source = pick_col.selectbox("Pick the state at training step", occurs, key="sh_from")
    group = group_choice(group_col, index, task, source,
                         str(here[1]) if here[0] == source else None, fresh, "sh_group")
    groups = index.groups_of(task, prefer={source: group})
    pairs = tuple(zip(groups["train_step"].astype(int), groups["group_id"].astype(str),
                      strict=True))
    placeholder = st.empty()
    with placeholder, st.spinner(fmt("Reading one group of each of {} training steps…",
                                     len(pairs))):
        try:
            pairs_key = hashlib.sha256(repr(pairs).encode()).hexdigest()
            table = _state_table(opened.log, opened.key, version, pairs, pairs_key,
                                 ctx.params, ctx.rule_of(opened))
        except data.LOADER_ERRORS + (G2POError,) as err:
            show_error(f"Cannot follow task {truncate(task, 60)} across training", err)
            return
    states = table[(table["train_step"] == source) & (table["group_id"] == group)]
    info = {str(k): (int(v), float(val)) for k, v, val in zip(
        states["key"], states["visits"], states["value"], strict=True)}
    keys = list(info)
    if not keys:
        st.info(fmt("Group {} holds no state at training step {}.", group, source))
        return
    if request and request["key"] in info:  # the node's own state, in the node's own group
        st.session_state["sh_state"] = request["key"]
    elif url_place is not None:
        by_token = {state_token(k): k for k in keys}
        if url_place[2] in by_token:
            st.session_state["sh_state"] = by_token[url_place[2]]
    if st.session_state.get("sh_state") not in info:
        st.session_state["sh_state"] = keys[0]
    key = state_col.selectbox(
        "State (most visited first)", keys, key="sh_state",
        format_func=lambda k: f"visits {info[k][0]} · V {format_number(info[k][1])} · "
                              f"{truncate(k, 80)}")
    # the followed state in the URL (its key's digest: keys are whole observations)
    write_url(hfrom=source, hgroup=group, hstate=state_token(key))
    history = snap_frame(history_of(table, key))
    reached = history[history["visits"] > 0]
    cols = st.columns(4)
    cols[0].metric("Training steps with the task", len(history))
    cols[1].metric("… where the state is reached", len(reached))
    if len(reached):
        cols[2].metric("V, first → last", fmt("{} → {}", format_number(reached["value"].iloc[0]),
                                              format_number(reached["value"].iloc[-1])))
        cols[3].metric("Visits, first → last", fmt("{} → {}", int(reached["visits"].iloc[0]),
                                                   int(reached["visits"].iloc[-1])))
    _shared_groups(ctx, opened, index, task, groups, source)
    with st.expander("The state's key", expanded=False):
        st.code(key, language=None, wrap_lines=True)

    clicked = None
    grid = st.columns(2)
    for i, (columns, title, kind) in enumerate(_CHARTS):
        with grid[i % 2]:
            event = st.plotly_chart(history_figure(history, columns, title, kind),
                                    key=f"sh_chart{i}", on_select="rerun",
                                    selection_mode="points")
        points = (event.selection or {}).get("points", []) if event else []
        if points:
            clicked = int(points[0]["x"])
    if clicked is not None and clicked in occurs:
        group_there = str(groups.loc[groups["train_step"] == clicked, "group_id"].iloc[0])
        goto_step(ctx, opened, clicked, group_there)
    st.caption("Click a point to open that training step's group in the group explorer.")
    st.dataframe(history, hide_index=True)


def state_token(key: str) -> str:
    """A state key's name in the URL: 12 hex digits of its SHA-256."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _url_place(index: TaskIndex) -> tuple[int, str, str | None] | None:
    """(training step, group, state token) of the followed state a reloaded or shared URL
    names, the first time this session draws the page; None when absent, when not a group of
    the log, and every later time."""
    step, group, token = url_once("hfrom"), url_once("hgroup"), url_once("hstate")
    if step is None or group is None:
        return None
    try:
        place = (int(step), group)
        index.task_of(*place)
    except (ValueError, *data.LOADER_ERRORS):
        return None
    return (*place, token)


def _shared_groups(ctx: AppContext, opened: OpenLog, index: TaskIndex, task: str,
                   shown, source: int) -> None:
    """Say plainly where the task maps to several groups at one training step, which group
    the page follows there, and offer the others (a click opens one in the group explorer)."""
    shared = index.shared_steps(task)
    if not shared:
        return
    followed = dict(zip(shown["train_step"].astype(int), shown["group_id"].astype(str),
                        strict=True))
    where = "; ".join(f"step {s}: {', '.join(g)}" for s, g in list(shared.items())[:6])
    more = f" and {len(shared) - 6} more" if len(shared) > 6 else ""
    md("This task is held by several groups at {} training step(s) ({}{}). The page follows "
       "one group per step: {} at step {} (chosen above), elsewhere the first by id. Pick a "
       "row below to open another in the group explorer.", len(shared), where, more,
       followed.get(source, "?"), source)
    rows = pd.DataFrame([{"train_step": s, "group_id": g, "followed": followed.get(s) == g}
                         for s, gs in shared.items() for g in gs])
    event = st.dataframe(rows, hide_index=True, key="sh_groups", on_select="rerun",
                         selection_mode="single-row", height=min(38 + 35 * len(rows), 250))
    picked = picked_row(event, len(rows))
    if picked is not None:
        row = rows.iloc[picked]
        goto_step(ctx, opened, int(row["train_step"]), str(row["group_id"]))
