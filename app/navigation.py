"""Moving between pages: a link to a page, and opening a page on what another page points at
(a training step or group in the group explorer, a step of a trajectory there, a state over
training). Pages call these and never import each other; the sidebar is steered only through
:func:`app.sidebar.request_group`, and the requests one page leaves for another are kept here.

Pages are named by their keys in :data:`app.shell.PAGES` (``ctx.pages``, set by the shell).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from app.context import AppContext, OpenLog
from app.safe import Markdown, fmt
from app.sidebar import request_group
from app.url_state import reseed

__all__ = ["page_link", "goto_step", "open_explorer_at", "open_state_history",
           "take_state_request", "STATE_REQUEST"]

#: Session key: the state another page asked "State over training" to show.
STATE_REQUEST = "_g2po_state_history_request"


def page_link(ctx: AppContext, name: str, label: Markdown) -> None:
    """A link to page ``name`` (nothing where no such page is declared); ``label`` from
    :func:`app.safe.fmt` (any other text is escaped)."""
    page = ctx.pages.get(name)
    if page is not None:
        st.page_link(page, label=fmt("{}", label))


def goto_step(ctx: AppContext, opened: OpenLog, train_step: int,
              group_id: str | None = None) -> None:
    """Open ``train_step`` of ``opened`` (and ``group_id``, if given) in the group explorer."""
    request_group(opened.key, train_step, group_id)
    _switch(ctx, "group")


def open_explorer_at(ctx: AppContext, traj_id: str, node: int, edge: int | None) -> None:
    """Open the sidebar's group in the group explorer with trajectory ``traj_id`` highlighted,
    its ``node`` (the explorer's id, under the sidebar's state key) and ``edge`` selected and
    the node's steps listed, through the URL names the explorer reads (``traj``, ``node``,
    ``edge``)."""
    view = {"traj": traj_id, "node": str(node)}
    if edge is not None:
        view["edge"] = str(edge)
    reseed("traj", "node", "edge")
    page = ctx.pages.get("group")
    if page is not None:
        st.switch_page(page, query_params=view)


def open_state_history(ctx: AppContext, canonical_key: str, train_step: int | None = None,
                       group_id: str | None = None, run_key: str | None = None) -> None:
    """Open "State over training" on one state: ``canonical_key`` (a graph node's
    ``canonical_key``) of the task of group ``group_id`` at ``train_step`` (default: the
    sidebar's group) of the run ``run_key`` (default: the active run). For the group
    explorer's "this state over training"."""
    st.session_state[STATE_REQUEST] = {
        "run": run_key or (ctx.active.key if ctx.active else None),
        "train_step": ctx.train_step if train_step is None else int(train_step),
        "group_id": ctx.group_id if group_id is None else str(group_id),
        "key": str(canonical_key),
    }
    _switch(ctx, "state_history")


def take_state_request() -> dict[str, Any] | None:
    """The state another page asked "State over training" to show (:func:`open_state_history`),
    once: the request is used up."""
    return st.session_state.pop(STATE_REQUEST, None)


def _switch(ctx: AppContext, name: str) -> None:
    page = ctx.pages.get(name)
    if page is not None:
        st.switch_page(page)
    st.rerun()
