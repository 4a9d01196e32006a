"""Run overview: per training step, reward, success rate, episode length, invalid-action rate
and state-merge rate of every chosen run; click a point (or pick a step) to open that training
step in the group explorer. Each run keeps its colour on every chart, in every session and
after restarts (:func:`run_colors`), whichever runs are added or removed."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import data
from app.charts import OVERVIEW_METRICS, overview_figure, overview_runs
from app.context import AppContext, OpenLog
from app.rules import truncation_offer
from app.run_colors import run_colors_for
from app.safe import fmt
from app.sidebar import GOTO_STEP
from app.ui import md, no_run_message, show_error
from app.views.triage import alarm_shares, groups_link
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from loaders.summary import UNKNOWN_WITHOUT

__all__ = ["render", "AUTO_MERGE_RATE_ROWS", "merge_rate_column", "run_colors", "goto_step",
           "RUN_COLORS"]

#: Runs with at most this many step rows get their merge rate computed without asking.
AUTO_MERGE_RATE_ROWS = 300_000
#: Session key: run path → colour of the runs shown last (for tests and views).
RUN_COLORS = "_g2po_run_colors"


def run_colors(logs: list[OpenLog]) -> dict[str, str]:
    """Run name → colour for ``logs``: the colour each run was first given, kept across
    sessions and restarts by its path (:mod:`app.run_colors`)."""
    by_path = run_colors_for([o.ref.path for o in logs])
    st.session_state[RUN_COLORS] = by_path
    return {o.name: by_path[o.ref.path] for o in logs}


def merge_rate_column(metrics: pd.DataFrame) -> str | None:
    """The metrics column holding a logged state-merge rate, if the trainer logged one."""
    for name in ("g2po/merge_rate", "merge_rate", "graph/merge_rate"):
        if name in metrics.columns:
            return name
    return next((c for c in metrics.columns if c.endswith("merge_rate")), None)


def _summary_of(opened: OpenLog, version: tuple[int, int], compute_merge: bool,
                state_key: str, rule: OutcomeRule) -> tuple[pd.DataFrame, list[str]]:
    summary = data.run_summary(opened.log, opened.key, version, rule).copy()
    notes = []
    metrics = data.run_metrics(opened.log, opened.key, version)
    logged = merge_rate_column(metrics) if not metrics.empty else None
    if logged:
        summary = summary.merge(metrics[["train_step", logged]].rename(
            columns={logged: "merge_rate"}), on="train_step", how="left")
    else:
        large = summary["n_steps"].sum() > AUTO_MERGE_RATE_ROWS
        if large:  # computed on request only; the box that asks stays while it is ticked
            notes.append(opened.name)
        if compute_merge or not large:
            rates = data.merge_rates(opened.log, opened.key, version, state_key)
            summary = summary.merge(rates, on="train_step", how="left")
        else:
            summary["merge_rate"] = float("nan")
    summary.insert(0, "run", opened.name)
    return summary, notes


def _unknown(logs: list[OpenLog], summary: pd.DataFrame, metric: str) -> dict[str, str]:
    """Run name → why ``metric`` is unknown for it: the runs without a value there whose log
    assumed the column it is computed from (:data:`loaders.summary.UNKNOWN_WITHOUT`)."""
    column = UNKNOWN_WITHOUT.get(metric)
    if column is None:
        return {}
    valued = set(summary.loc[summary[metric].notna(), "run"])
    return {o.name: o.log.report.assumed[column] for o in logs
            if o.name not in valued and column in o.log.report.assumed}


def render(ctx: AppContext) -> None:
    st.title("Run overview")
    groups_link(ctx)
    if not ctx.logs:
        no_run_message()
        return
    compute = st.session_state.get("ov_compute_merge", False)
    parts, pending, hints = [], [], []
    with st.spinner("Reading run summaries…"):
        for opened in ctx.logs:
            rule = ctx.rule_of(opened)  # each run's one rule, as every page counts success
            try:
                version = data.log_version(opened.log)
                summary, notes = _summary_of(opened, version, compute, ctx.params.state_key,
                                             rule)
                hints.append((opened, data.run_truncation(opened.log, opened.key, version,
                                                          rule)))
            except data.LOADER_ERRORS + (G2POError,) as err:
                show_error(f"Cannot summarise {opened.name}", err)
                continue
            parts.append(summary)
            pending.extend(notes)
    if not parts:
        return
    summary = pd.concat(parts, ignore_index=True)
    if summary.empty:
        st.info("The chosen runs hold no training steps yet.")
        return

    n_runs = summary["run"].nunique()
    st.caption(fmt("{} run(s) · {:,} step rows · {:,} trajectories", n_runs,
                   int(summary["n_steps"].sum()), int(summary["n_traj"].sum())))
    md("Success by each run's outcome rule (sidebar, G2PO parameters): {}", "; ".join(
        f"{o.name}: {ctx.rule_of(o).describe()}" for o in ctx.logs))
    for opened, hint in hints:
        truncation_offer(opened, hint, "overview")
    if pending:
        st.checkbox(fmt("Compute the state-merge rate (reads every step row of: {})",
                        ", ".join(pending)), key="ov_compute_merge")

    clicked = None
    colors = run_colors(ctx.logs)
    cols = st.columns(2)
    for i, (metric, title) in enumerate(OVERVIEW_METRICS.items()):
        unknown = _unknown(ctx.logs, summary, metric)
        if summary[metric].isna().all() and not unknown:
            continue
        with cols[i % 2]:
            if summary[metric].isna().all():
                st.metric(fmt("{}", title), "unknown")
            else:
                event = st.plotly_chart(overview_figure(summary, metric, title, colors),
                                        key=f"ov_{metric}",
                                        on_select="rerun", selection_mode="points")
                points = (event.selection or {}).get("points", []) if event else []
                if points:
                    runs = overview_runs(summary, metric)
                    curve = int(points[0].get("curve_number", 0))
                    clicked = (runs[curve] if curve < len(runs) else None,
                               int(points[0]["x"]))
            if unknown:
                with st.popover("Unknown: why?", key=f"ov_unknown_{metric}"):
                    for name, reason in unknown.items():
                        st.caption(fmt("{}: {}", name, reason))

    st.subheader("Drill in")
    active = ctx.active
    steps = active.log.train_steps() if active else []
    if active is not None and steps:
        default = ctx.train_step if ctx.train_step in steps else steps[-1]
        choice = st.selectbox(fmt("Training step of {}", active.name), steps,
                              index=steps.index(default), key="ov_step")
        go = st.button("Open in the group explorer", key="ov_go", type="primary")
        if clicked is not None:
            target = next((o for o in ctx.logs if o.name == clicked[0]), active)
            goto_step(ctx, target, clicked[1])
        if go:
            goto_step(ctx, active, int(choice))
    st.subheader("Per training step")
    st.dataframe(summary, hide_index=True)
    alarm_shares(ctx)


def goto_step(ctx: AppContext, opened: OpenLog, train_step: int,
              group_id: str | None = None) -> None:
    """Open ``train_step`` of ``opened`` (and ``group_id``, if given) in the group explorer."""
    if group_id is not None:  # the sidebar falls back to the last group when none is chosen
        st.session_state.pop(f"group:{opened.key}:{train_step}", None)
        st.session_state["_g2po_last_group"] = str(group_id)
    st.session_state[GOTO_STEP] = (opened.key, train_step)
    page = ctx.pages.get("group")
    if page is not None:
        st.switch_page(page)
    st.rerun()
