"""Export: the per-step advantage table (CSV / Parquet) of the group or of its whole training
step, with each step's node and next-node ids (as the graph numbers them) and a record of how
it was computed (Parquet metadata; a JSON sidecar for CSV), and the group's graph as a
standalone HTML file that opens offline."""

from __future__ import annotations

import re
from dataclasses import asdict

import pandas as pd
import streamlit as st

from app import data
from app.context import AppContext
from app.export import EXPORT_FORMATS, export_metadata, metadata_bytes, table_bytes
from app.graph import graph_html
from app.safe import fmt
from app.ui import chosen_graph, group_page, show_error
from g2po.errors import G2POError
from g2po.estimators import compute_advantages, estimate, list_estimators
from g2po.node_ids import step_node_ids
from g2po.outcomes import OutcomeRule, truncated_steps
from g2po.params import G2POParams

__all__ = ["render", "export_table", "table_metadata", "file_stem"]


def file_stem(*parts: object) -> str:
    """A safe file name from the run, step and group (log text never reaches the file system
    unfiltered)."""
    raw = "_".join(str(p) for p in parts)
    return re.sub(r"[^A-Za-z0-9.-]+", "-", raw).strip("-.")[:120] or "g2po"


def export_table(steps: pd.DataFrame, params: G2POParams, rule: OutcomeRule,
                 extra: list[str]) -> pd.DataFrame:
    """The step rows with ``node`` and ``next_node`` (the ids the group's graph shows) and
    G2PO's columns, plus ``<name>_adv`` for each extra estimator."""
    columns, ix = estimate(steps, "g2po", **params.g2po_kwargs(rule))
    # cut at the step limit by the run's outcome rule (valued as failure all the same)
    truncated = truncated_steps(steps, ix, columns["success"], rule.truncate_at)
    node, next_node = step_node_ids(ix, columns["success"], truncated)
    table = steps.assign(node=node, next_node=next_node, truncated=truncated, **columns)
    for name in extra:
        out = compute_advantages(steps, name, state_key=params.state_key,
                                 prefix=f"{name}_", **params.for_estimator(name, rule))
        table[f"{name}_adv"] = out[f"{name}_adv"].to_numpy()
    return table


def table_metadata(params: G2POParams, rule: OutcomeRule, extra: list[str], source: dict,
                   added: list[str]) -> dict:
    """What :func:`export_table` ran, with every parameter (see
    :func:`app.export.export_metadata`); ``added``: the columns it added to the step rows."""
    g2po_params = {k: v for k, v in params.g2po_kwargs(rule).items() if k != "state_key"}
    others = {n: [f"{n}_adv"] for n in extra}
    taken = {c for cols in others.values() for c in cols}
    estimators = {"g2po": g2po_params, **{n: params.for_estimator(n, rule) for n in extra}}
    columns = {"g2po": [c for c in added if c not in taken], **others}
    return export_metadata(estimators, columns, params.state_key, source)


def render(ctx: AppContext) -> None:
    if not group_page(ctx, "Export"):
        return
    opened = ctx.active
    scope = st.radio("Rows", ["this group", "all groups of the training step"],
                     horizontal=True, key="exp_scope")
    extra = st.multiselect("Add the advantage of other estimators",
                           [n for n in list_estimators() if n != "g2po"], key="exp_extra")
    kind = st.radio("Format", list(EXPORT_FORMATS), horizontal=True, key="exp_fmt")
    guard = kind == "csv" and st.checkbox(
        "Quote text that a spreadsheet would run as a formula", value=True, key="exp_guard",
        help="Text cells starting with = + - @ (log text, e.g. from web pages) get a leading ' "
             "so Excel or LibreOffice show them instead of evaluating them. Untick for the raw "
             "text; Parquet always keeps it.")
    whole = scope != "this group"
    stem = file_stem(opened.name, f"step{ctx.train_step}",
                     "all-groups" if whole else ctx.group_id)

    try:
        group = data.load_group(opened.log, opened.key, ctx.train_step, ctx.group_id)
        preview = export_table(group, ctx.params, ctx.rule, extra)
        steps = data.load_train_step(opened.log, opened.key, ctx.train_step) if whole else group
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error("Cannot compute the table", err)
        return
    st.caption(fmt("{:,} step rows × {} columns", len(steps), preview.shape[1]))

    source = {"run": opened.name, "path": opened.ref.path, "format": opened.log.format,
              "train_step": ctx.train_step, "group_id": None if whole else ctx.group_id,
              "rows": len(steps), "outcome_rule": {**asdict(ctx.rule),
                                                   "in_words": ctx.rule.describe()}}
    metadata = table_metadata(ctx.params, ctx.rule, extra, source,
                              [c for c in preview.columns if c not in group.columns])

    def make_bytes() -> bytes:
        return table_bytes(export_table(steps, ctx.params, ctx.rule, extra), kind, guard=guard,
                           metadata=metadata)

    st.download_button(fmt("Download the advantage table ({})", kind), make_bytes,
                       file_name=f"{stem}.{kind}", mime=EXPORT_FORMATS[kind], key="exp_table",
                       on_click="ignore", type="primary")
    if kind == "csv":
        st.download_button("Download how it was computed (JSON sidecar)",
                           metadata_bytes(metadata), file_name=f"{stem}.csv.json",
                           mime="application/json", key="exp_sidecar", on_click="ignore")
        st.caption("The sidecar names the estimators and every parameter, the state key and "
                   "the source; keep it next to the CSV.")
    else:
        st.caption("The estimators, every parameter, the state key and the source are stored "
                   "in the file's metadata (key `g2po.export`).")
    with st.expander("How the table is computed"):
        st.json(metadata)
    if not whole:
        st.dataframe(preview.head(200), hide_index=True, height=260)

    st.subheader("The graph as a standalone HTML file")
    st.caption("One file with vis-network inside: it opens in any browser, with no internet.")
    graph = chosen_graph(ctx)
    if graph is None:
        return
    title = f"G2PO state graph: group {ctx.group_id}, training step {ctx.train_step}"
    st.download_button("Download the graph (HTML)",
                       lambda: graph_html(graph, success_reward=ctx.rule.success_reward,
                                          title=title).encode("utf-8"),
                       file_name=f"{file_stem(opened.name, f'step{ctx.train_step}', ctx.group_id)}"
                                 ".html",
                       mime="text/html", key="exp_graph", on_click="ignore")
