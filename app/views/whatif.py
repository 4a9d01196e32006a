"""What-if merging: the sidebar's group under a second state key, beside the sidebar's own.
The steps whose advantage changes sign (highlighted) or by more than a chosen amount, with
the advantage before and after and why; the nodes that merged or split, with their values;
and, on demand, the same for every group of the run (a table to sort; a click opens a group
here). All numbers come from :mod:`g2po.analysis.whatif`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import pandas as pd
import streamlit as st

from app import data
from app.context import AppContext, OpenLog
from app.safe import fmt
from app.sidebar import request_group
from app.tables import changed_steps, flip_style
from app.ui import group_page, picked_row, show_short_error
from app.url_state import seed_from_url, url_once, write_url
from g2po.analysis.whatif import (
    DEFAULT_MIN_CHANGE,
    WhatIf,
    compare_graphs,
    node_changes_text,
    whatif_log,
)
from g2po.errors import G2POError
from g2po.params import G2POParams
from g2po.state_keys import strategy_names

__all__ = ["render", "RUN_CACHE_MAX"]

#: Run-wide tables kept (per log version, parameters, rule, key and threshold); kept here,
#: not in st.cache_data, so the progress bar is drawn by the computation itself.
RUN_CACHE_MAX = 8
_RUN_TABLES: OrderedDict[tuple, pd.DataFrame] = OrderedDict()
_ERRORS = data.LOADER_ERRORS + (G2POError, ValueError)


def _choices(ctx: AppContext) -> tuple[str, float]:
    """The second state key, from the page's own picker (default: GiGPO's similarity rule,
    or exact when the sidebar already uses similarity), and the smallest change of an
    advantage that counts."""
    names = strategy_names()
    _seed_from_url(names)
    current = str(ctx.params.state_key).partition(":")[0]
    st.session_state.setdefault("wi_key", "exact" if current == "similarity" else "similarity")
    st.session_state.setdefault("wi_regex", r"^[^\n]*")
    st.session_state.setdefault("wi_similarity", 0.9)
    st.session_state.setdefault("wi_min", DEFAULT_MIN_CHANGE)
    cols = st.columns([2, 3, 2])
    min_change = cols[2].number_input("A step changes when A moves by more than", 0.0, 100.0,
                                      step=0.05, key="wi_min", help="or when A changes sign")
    name = cols[0].selectbox("Second state key", names, key="wi_key",
                             help="How observations merge into nodes on the other side; the "
                                  "first side is the sidebar's state key.")
    key = name
    if name == "regex":
        pattern = cols[1].text_input("regex (first group or whole match is the key)",
                                     key="wi_regex")
        key = f"regex:{pattern}"
    elif name == "similarity":
        threshold = cols[1].slider("similarity threshold", 0.5, 1.0, step=0.01,
                                   key="wi_similarity")
        key = f"similarity:{threshold}"
    elif name == "alfworld":
        cols[1].caption("G2PO's ALFWorld anchor: the observation and its admissible actions "
                        "(read from the log's prompts); needs a log that records them.")
    write_url(wkey=key, wmin=float(min_change))
    return key, float(min_change)


def _seed_from_url(names: list[str]) -> None:
    """The page's key and threshold from the URL's ``wkey`` (``regex:^[^\\n]*``,
    ``similarity:0.9``, …) and ``wmin``, once per session."""
    raw = url_once("wkey")
    if raw:
        name, _, arg = raw.partition(":")
        if name in names:
            st.session_state["wi_key"] = name
            if name == "regex":
                st.session_state["wi_regex"] = arg
            elif name == "similarity":
                try:
                    st.session_state["wi_similarity"] = min(1.0, max(0.5, float(arg)))
                except ValueError:
                    pass
    seed_from_url("wi_min", "wmin", lambda text: min(100.0, max(0.0, float(text))))


def _compare(ctx: AppContext, key: str, min_change: float) -> WhatIf:
    """The sidebar's group under the sidebar's key and under ``key``: both graphs from the
    app's graph cache (the explorer's, for the sidebar's key)."""
    opened = ctx.active
    other = replace(ctx.params, state_key=key)
    before = data.group_graph(opened.log, opened.key, ctx.train_step, ctx.group_id,
                              ctx.params, ctx.rule)
    after = data.group_graph(opened.log, opened.key, ctx.train_step, ctx.group_id, other,
                             ctx.rule)
    return compare_graphs(before, after, min_change=min_change,
                          label_before=str(ctx.params.state_key), label_after=key)


def _metrics(result: WhatIf) -> None:
    s = result.summary()
    cols = st.columns(5)
    cols[0].metric("Steps changed", fmt("{} of {}", s["changed"], s["steps"]),
                   help=fmt("Advantage moved by more than {:g} or changed sign.",
                            result.min_change))
    cols[1].metric("Sign flips", fmt("{}", s["sign_flips"]))
    cols[2].metric("Largest |ΔA|", fmt("{:.3f}", s["max_abs_delta"]))
    cols[3].metric("State nodes", fmt("{} → {}", s["nodes_before"], s["nodes_after"]))
    cols[4].metric("Merged / split", fmt("{} / {}", s["merged"], s["split"]),
                   help="Nodes under the second key holding several of the first key's "
                        "(merged); the first key's nodes spread over several (split).")


def _run_table(opened: OpenLog, params: G2POParams, rule, key: str,
               min_change: float) -> pd.DataFrame | None:
    """The run-wide table: from this page's cache, or computed now with a progress bar when
    the user asks for it (None until then)."""
    cache_key = (opened.key, data.log_version(opened.log), params, rule, key, min_change)
    if cache_key in _RUN_TABLES:
        _RUN_TABLES.move_to_end(cache_key)
        return _RUN_TABLES[cache_key]
    if not st.button("Compute for every group of the run", key="wi_run"):
        st.caption("Every training step is read once (only the columns the keys need); the "
                   "table is kept for this key and parameters.")
        return None
    bar = st.progress(0.0, text="Reading training steps…")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=fmt("Training steps {} of {}", done, total))

    table = whatif_log(opened.log, key, rule=rule, params=params, min_change=min_change,
                       progress=progress)
    bar.empty()
    _RUN_TABLES[cache_key] = table
    while len(_RUN_TABLES) > RUN_CACHE_MAX:
        _RUN_TABLES.popitem(last=False)
    return table


def _run_section(ctx: AppContext, key: str, min_change: float) -> None:
    st.subheader("Every group of the run")
    opened = ctx.active
    try:
        table = _run_table(opened, ctx.params, ctx.rule, key, min_change)
    except _ERRORS as err:
        show_short_error("Cannot compute the run's table", err)
        return
    if table is None:
        return
    changed = int((table["changed"] > 0).sum())
    st.caption(fmt("{} of {} group(s) change; {} sign flip(s) in all. Most sign flips first; "
                   "click a column to sort, a row to open its group here.", changed,
                   len(table), int(table["sign_flips"].sum())))
    event = st.dataframe(table, hide_index=True, height=320, on_select="rerun",
                         selection_mode="single-row", key="wi_run_table",
                         column_config={"max_abs_delta": st.column_config.NumberColumn(
                             "max |ΔA|", format="%.3f")})
    picked = picked_row(event, len(table))
    if picked is None:
        return
    row = table.iloc[picked]
    step, group = int(row["train_step"]), str(row["group_id"])
    if (step, group) != (ctx.train_step, ctx.group_id):
        request_group(opened.key, step, group)
        st.rerun()


def render(ctx: AppContext) -> None:
    if not group_page(ctx, "What-if merging"):
        return
    key, min_change = _choices(ctx)
    try:
        result = _compare(ctx, key, min_change)
    except _ERRORS as err:
        show_short_error(f"Cannot compute group {ctx.group_id} under the state key {key}", err)
        return
    _metrics(result)
    st.subheader("Nodes that merged or split")
    if result.nodes.empty:
        st.caption("Both keys put the steps into the same nodes.")
    else:
        st.caption(fmt("Under **{}** (before) and **{}** (after): each side's nodes with "
                       "their value V and the words that tell their keys apart.",
                       result.label_before, result.label_after))
        st.dataframe(node_changes_text(result.nodes), hide_index=True,
                     height=min(320, 3 + 35 * (1 + len(result.nodes))))
    st.subheader("Steps whose advantage changes")
    shown, flips = changed_steps(result)
    if shown.empty:
        st.info(fmt("No step's advantage changes by more than {:g} or changes sign.",
                    result.min_change))
    else:
        st.caption("Highlighted: the advantage changes sign. Sign flips first, then the "
                   "largest change.")
        st.dataframe(flip_style(shown, flips), hide_index=True, height=360)
    _run_section(ctx, key, min_change)
