"""Small Streamlit helpers shared by the views: messages for errors, escaped text.

Text reaches Streamlit only as a string literal or through :func:`app.safe.fmt` (the rule,
and why, are in its docstring); :func:`md` is ``st.markdown(fmt(template, *values))``."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

import streamlit as st

from app import data
from app.safe import fmt, truncate
from g2po.errors import G2POError

if TYPE_CHECKING:
    from app.context import AppContext
    from g2po.analysis.state_graph import StateGraph

__all__ = ["show_error", "show_short_error", "show_internal_error", "md", "no_group_message",
           "group_page", "chosen_graph", "keep_widget_value", "no_run_message",
           "picked_row"]


def show_error(title: str, err: BaseException | str) -> None:
    """A clear message instead of a traceback: ``title`` and the error's own text (which names
    the file, line or field), both escaped, the details verbatim in a code block."""
    detail = str(err) if isinstance(err, str) else f"{type(err).__name__}: {err}"
    first, _, rest = detail.partition("\n")
    st.error(fmt("{}: {}", title, first))
    if rest.strip():
        st.code(rest, language=None)


def show_short_error(title: str, err: BaseException | str, limit: int = 240) -> None:
    """``title`` and the first line of the error (with the first item when that line
    introduces a list), cut at ``limit`` characters and escaped, for a message beside the
    input that caused it; the whole text under "Details"."""
    detail = str(err) if isinstance(err, str) else str(err) or type(err).__name__
    lines = [line.strip(" -") for line in detail.splitlines() if line.strip(" -")]
    first = lines[0] if lines else detail
    if first.endswith(":") and len(lines) > 1:  # "N problem(s) …:" then the problems
        first = f"{first} {lines[1]}"
    st.error(fmt("{}: {}", title, truncate(first, limit)))
    if detail.strip() != truncate(first, limit):
        with st.expander("Details"):
            st.code(detail, language=None, wrap_lines=True)


def keep_widget_value(key: str, allowed: Collection | None = None) -> None:
    """Set the widget ``key``'s value in session state to itself (when it has one, and it is
    in ``allowed``), before the widget is drawn. A value set through session state travels
    with the widget to the browser; one Streamlit already holds does not, and the browser
    keeps its own copy. That copy is missing when a page link was followed before the browser
    had drawn the widget (a session's first script run still going): the new page then showed
    the widget's empty default, and the next rerun sent that back (the runs multiselect came
    back empty, a run chosen from the URL became the first run)."""
    state = st.session_state
    if key in state and (allowed is None or state[key] in allowed):
        state[key] = state[key]


def show_internal_error(what: str, err: BaseException) -> None:
    """A bug, not bad input: a plain message on the page (no traceback, no server paths, no
    links), the traceback in the server's log."""
    logging.getLogger("app").error("%s failed", what, exc_info=err)
    st.error(fmt("{} failed with an internal error ({}). The details are in the server's log; "
                 "other pages and choices still work.", what, type(err).__name__))


def md(template: str, *values: object) -> None:
    """``st.markdown(fmt(template, *values))``: a string literal ``template`` with untrusted
    ``values`` escaped into its ``{}`` slots."""
    st.markdown(fmt(template, *values))


def picked_row(event: object, n_rows: int) -> int | None:
    """The row picked in a dataframe's selection ``event`` (what ``st.dataframe(on_select=…)``
    returns, or its session state in a callback: an object or a dict), None when no row, or
    one beyond the ``n_rows`` shown (a stale event)."""
    selection = getattr(event, "selection", None)
    rows = getattr(selection, "rows", None) or \
        (event.get("selection", {}).get("rows", []) if isinstance(event, dict) else [])
    return int(rows[0]) if rows and rows[0] < n_rows else None


def no_run_message() -> None:
    st.info("No run open: choose or open one in the sidebar.")


def no_group_message() -> None:
    st.info("No group to show: open a log and choose a training step and a group in the "
            "sidebar.")


def group_page(ctx: AppContext, title: str) -> bool:
    """The title and headline of a page about the chosen group; False, with a hint, when no
    group is chosen yet."""
    st.title(fmt("{}", title))
    if not ctx.has_group:
        no_group_message()
        return False
    md("Run **{}** · training step **{}** · group **{}** · state key **{}**", ctx.active.name,
       ctx.train_step, ctx.group_id, ctx.params.state_key)
    return True


def chosen_graph(ctx: AppContext) -> StateGraph | None:
    """The chosen group's state graph, or None after saying why it cannot be built."""
    opened = ctx.active
    try:
        return data.group_graph(opened.log, opened.key, ctx.train_step, ctx.group_id,
                                ctx.params, ctx.rule)
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error(f"Cannot build the graph of group {ctx.group_id}", err)
        return None
