"""State-merge diagnostics: singleton nodes, near-duplicate keys that did not merge (with the
characters that differ highlighted), and the per-node value variance distribution (the paper's
state-value variance analysis).

Work that takes more than a moment (comparing keys, reading a whole training step) first clears
its section and shows a progress bar or spinner there, so what is on screen is never an earlier
answer passed off as the current one.
"""

from __future__ import annotations

from collections import OrderedDict

import pandas as pd
import streamlit as st

from app import data
from app.charts import histogram
from app.context import AppContext
from app.safe import escape_html, fmt
from app.ui import chosen_graph, group_page, md, show_error
from g2po.analysis.diagnostics import (
    char_diff,
    elide_equal,
    merge_stats,
    near_duplicate_keys,
    node_variances,
    step_node_variances,
)
from g2po.analysis.state_graph import StateGraph
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams

__all__ = ["render", "diff_html", "PAIRS_SHOWN"]

#: Near-duplicate pairs drawn with their differences; the table lists them all.
PAIRS_SHOWN = 10
_CONTEXT = 60
#: (graph id, threshold) → pairs; kept here (not st.cache_data) so the progress bar is drawn
#: live by the computation, never replayed from a cache.
_PAIRS: OrderedDict[tuple[str, float], pd.DataFrame] = OrderedDict()
_PAIRS_MAX = 32
_STYLE = {
    "a": "background:#fddede;color:#8b0000;text-decoration:line-through",
    "b": "background:#d9f5dd;color:#00561b;font-weight:600",
}


def diff_html(key_a: str, key_b: str, context: int = _CONTEXT) -> str:
    """Two keys one above the other, the characters only one of them has marked (red, struck
    through in A; green in B), long equal stretches shortened. Every piece of log text is
    HTML-escaped; only our own tags and styles are markup."""
    ops = elide_equal(char_diff(key_a, key_b), context)
    lines = []
    for side, index in (("a", 1), ("b", 2)):
        parts = []
        for op in ops:
            text = op[index]
            if not text:
                continue
            if op[0] == "equal":
                parts.append(escape_html(text))
            else:
                parts.append(f'<span style="{_STYLE[side]}">{escape_html(text)}</span>')
        lines.append(f'<div style="white-space:pre-wrap;font-family:monospace;font-size:0.85em;'
                     f'margin:2px 0"><b>{side.upper()}</b> {"".join(parts)}</div>')
    return ('<div style="border-left:3px solid #ccc;padding-left:8px;margin:4px 0 12px">'
            + "".join(lines) + "</div>")


def _near_duplicates(graph: StateGraph, graph_key: str, threshold: float, bar) -> pd.DataFrame:
    key = (graph_key, threshold)
    if key in _PAIRS:
        _PAIRS.move_to_end(key)
        return _PAIRS[key]
    pairs = near_duplicate_keys(graph, threshold, progress=lambda f: bar.progress(
        min(max(f, 0.0), 1.0), text=fmt("Comparing state keys… {:.0%}", f)))
    _PAIRS[key] = pairs
    while len(_PAIRS) > _PAIRS_MAX:
        _PAIRS.popitem(last=False)
    return pairs


@st.cache_data(show_spinner=False, max_entries=16)
def _step_variances(_log, key: str, train_step: int, params: G2POParams, rule: OutcomeRule):
    steps = data.load_train_step(_log, key, train_step)
    return step_node_variances(steps, rule=rule, params=params)


def render(ctx: AppContext) -> None:
    if not group_page(ctx, "State-merge diagnostics"):
        return
    opened = ctx.active
    graph = chosen_graph(ctx)
    if graph is None:
        return
    stats = merge_stats(graph)
    cols = st.columns(4)
    cols[0].metric("State nodes", fmt("{}", stats["state_nodes"]))
    cols[1].metric("Singleton nodes", fmt("{:.0%}", stats["singleton_share"]),
                   help="Nodes seen once: A^NC has no reference set there (it is 0).")
    cols[2].metric("Merge rate", fmt("{:.0%}", stats["merge_rate"]),
                   help="1 − state nodes / steps")
    cols[3].metric("Most visits", fmt("{}", stats["max_visits"]))

    st.subheader("Near-duplicate state keys that did not merge")
    threshold = st.slider("similarity (difflib ratio) at least", 0.5, 1.0, 0.9, 0.01,
                          key="diag_threshold")
    section = st.empty()  # replaced at once: the old pairs never stand in for the new ones
    with section.container():
        bar = st.progress(0.0, text="Comparing state keys…")
        graph_key = data.graph_id(opened.key, ctx.train_step, ctx.group_id, ctx.params, ctx.rule)
        pairs = _near_duplicates(graph, graph_key, threshold, bar)
    with section.container():
        if pairs.empty:
            st.caption("No pair of distinct nodes is that similar.")
        else:
            objects = int(pairs["different_objects"].sum())
            st.caption(fmt("{} pair(s), most similar first; the characters only one key "
                           "has are marked (A struck through in red, B in green). Try the "
                           "`normalized`, `regex` or `similarity` state key in the sidebar to "
                           "merge them.", len(pairs)))
            if objects:
                st.caption(fmt("{} pair(s) name different objects (an object's name or "
                               "number differs: `countertop 1` / `countertop 2`, `fridge 1` / "
                               "`drawer 1`): they are different states, so they come last and "
                               "merging them is not advised.", objects))
            for row in pairs.head(PAIRS_SHOWN).itertuples():
                md("**node {}** ({} visits) vs **node {}** ({} visits) · similarity {:.3f}",
                   row.node_a, row.visits_a, row.node_b, row.visits_b, row.similarity)
                if row.different_objects:
                    md("Not to merge: {}", row.note)
                st.html(diff_html(str(row.key_a), str(row.key_b)))
            if len(pairs) > PAIRS_SHOWN:
                st.caption(fmt("The first {} are drawn; the table lists all {}.",
                               PAIRS_SHOWN, len(pairs)))
            st.dataframe(pairs, hide_index=True)

    st.subheader("Per-node value variance")
    variances = node_variances(graph)
    if variances.empty:
        st.caption("No state node of this group is visited twice.")
    else:
        st.plotly_chart(histogram(variances["value_var"], "Value variance of the group's nodes "
                                  "(visits ≥ 2)", "value variance"), key="diag_var_group")
        st.dataframe(variances.sort_values("value_var", ascending=False), hide_index=True,
                     height=240)
    if not st.checkbox(fmt("Over every group of training step {} (reads the whole step)",
                           ctx.train_step), key="diag_whole_step"):
        return
    step_section = st.empty()
    with step_section.container(), st.spinner(fmt("Reading every group of training step "
                                                  "{}…", ctx.train_step)):
        try:
            whole = _step_variances(opened.log, opened.key, ctx.train_step, ctx.params,
                                        ctx.rule)
        except data.LOADER_ERRORS + (G2POError,) as err:
            show_error(f"Cannot read training step {ctx.train_step}", err)
            return
    with step_section.container():
        if whole.empty:
            st.caption("No node is visited twice in this training step.")
        else:
            st.plotly_chart(histogram(whole["value_var"], f"Value variance of the nodes of "
                                      f"training step {ctx.train_step} ({len(whole)} nodes)",
                                      "value variance"), key="diag_var_step")
            st.caption(fmt("mean {:.4g} · median {:.4g} · share with variance 0: {:.0%}",
                           whole["value_var"].mean(), whole["value_var"].median(),
                           (whole["value_var"] == 0).mean()))
