"""What the pages across training steps (State over training, Step diff) share: matching a
task across the run's training steps (:mod:`loaders.across_steps`, cached per log version),
choosing the group a page follows where a step holds the task in several, and noticing that
the sidebar moved since the page last drew.
"""

from __future__ import annotations

import streamlit as st

from app import data
from app.context import AppContext, OpenLog
from app.safe import fmt, truncate
from app.ui import md, show_error
from g2po.errors import G2POError
from loaders.across_steps import TaskIndex, task_column, task_index

__all__ = ["task_label", "cached_task_index", "match_by", "page_task_index", "group_choice",
           "sidebar_moved"]


@st.cache_data(show_spinner=False, max_entries=64)
def cached_task_index(_log, key: str, version: tuple[int, int], by: str) -> TaskIndex:
    """:func:`loaders.across_steps.task_index`, once per log version."""
    return task_index(_log, by)


@st.cache_data(show_spinner=False, max_entries=16)
def _task_column(_log, key: str, version: tuple[int, int]) -> str:
    return task_column(_log)


def task_label(task: str, n_steps: int) -> str:
    return f"{truncate(task, 90)} · {n_steps} training step(s)"


def match_by(opened: OpenLog, key: str) -> str:
    """How tasks are matched across steps: a choice when the log has a task column."""
    version = data.log_version(opened.log)
    if _task_column(opened.log, opened.key, version) == "task":
        return st.radio("Match the task across training steps by", ["task", "group_id"],
                        horizontal=True, key=key,
                        help="task: the log's task column (the same game or instruction); "
                             "group_id: for runs that keep a task's group id at every step.")
    st.caption("Tasks are matched across training steps by group id (the log has no `task` "
               "column).")
    return "group_id"


def page_task_index(ctx: AppContext, opened, widget_key: str) -> TaskIndex | None:
    """The header of a page across training steps (run, state key, the task-matching choice
    under ``widget_key``) and the run's task index; None, with the error shown, when the run's
    tasks cannot be matched."""
    md("Run **{}** · state key **{}**", opened.name, ctx.params.state_key)
    try:
        by = match_by(opened, widget_key)
        return cached_task_index(opened.log, opened.key, data.log_version(opened.log), by)
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot match the tasks of {opened.name} across training steps", err)
        return None


def sidebar_moved(ctx: AppContext, page: str) -> bool:
    """Whether the sidebar's (run, training step, group) moved since ``page`` last drew
    (another group chosen, the URL's): a page across training steps then starts from it
    anew."""
    here = (ctx.active.key if ctx.active else None, ctx.train_step, ctx.group_id)
    key = f"_g2po_sidebar_at:{page}"
    moved = st.session_state.get(key) != here
    st.session_state[key] = here
    return moved


def group_choice(column, index: TaskIndex, task: str, step: int, preferred: str | None,
                 fresh: bool, key: str, say: bool = False) -> str:
    """The group whose graph a page shows at training step ``step``: ``preferred`` (where the
    user came from) when it holds the task there, else the first by id; and, when the step
    holds the task in several groups, a choice in ``column`` (widget ``key``, reset to that
    default when ``fresh``), said in a line above it with ``say``."""
    choices = index.groups_at(task, step)
    if len(choices) < 2:
        return choices[0]
    if fresh or st.session_state.get(key) not in choices:
        st.session_state[key] = preferred if preferred in choices else choices[0]
    with column:
        if say:
            md("Training step {} holds this task in {} groups: {}.", step, len(choices),
               ", ".join(choices))
        return st.selectbox(fmt("Group at training step {}", step), choices, key=key,
                            help="This training step holds the task in several groups; the "
                                 "states and graph shown are this group's.")
