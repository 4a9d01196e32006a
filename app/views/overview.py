"""Run overview: per training step, reward, success rate, episode length, invalid-action rate
and state-merge rate of every chosen run; click a point (or pick a step) to open that training
step in the group explorer. Each run keeps its colour on every chart, in every session and
after restarts (:func:`app.run_colors.run_colors`), whichever runs are added or removed."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import data
from app.charts import OVERVIEW_METRICS, history_figure, overview_figure, overview_runs
from app.context import AppContext, OpenLog
from app.navigation import goto_step, page_link
from app.rules import reward_scale_offer, run_reward_scale, truncation_offer
from app.run_colors import run_colors
from app.safe import fmt
from app.triage_table import HEADERS, computed_table
from app.ui import md, no_run_message, show_error
from g2po.analysis.triage import ALARM_COLUMNS, step_shares
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from loaders.summary import UNKNOWN_WITHOUT

__all__ = ["render", "AUTO_SHARES_ROWS", "merge_rate_column"]

#: Runs with at most this many step rows get their alarm shares computed without asking.
AUTO_SHARES_ROWS = 300_000


def merge_rate_column(metrics: pd.DataFrame) -> str | None:
    """The metrics column holding a logged state-merge rate, if the trainer logged one."""
    for name in ("g2po/merge_rate", "merge_rate", "graph/merge_rate"):
        if name in metrics.columns:
            return name
    return next((c for c in metrics.columns if c.endswith("merge_rate")), None)


def _summary_of(opened: OpenLog, version: tuple[int, int], state_key: str,
                rule: OutcomeRule) -> pd.DataFrame:
    """The run's summary with its state-merge rate: the one its trainer logged, else the
    log's count (a verl dump's comes with its summary, from its cache; a run directory's
    is counted from two columns)."""
    summary = data.run_summary(opened.log, opened.key, version, rule).copy()
    metrics = data.run_metrics(opened.log, opened.key, version)
    logged = merge_rate_column(metrics) if not metrics.empty else None
    if logged:
        rates = metrics[["train_step", logged]].rename(columns={logged: "merge_rate"})
    else:
        rates = data.merge_rates(opened.log, opened.key, version, state_key)
    summary = summary.merge(rates, on="train_step", how="left")
    summary.insert(0, "run", opened.name)
    return summary


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
    page_link(ctx, "groups", fmt("Groups: every group of a training step, worst first (no "
                                 "training signal, credit alarms) →"))
    if not ctx.logs:
        no_run_message()
        return
    parts, hints = [], []
    with st.spinner("Reading run summaries…"):
        for opened in ctx.logs:
            rule = ctx.rule_of(opened)  # each run's one rule, as every page counts success
            try:
                version = data.log_version(opened.log)
                summary = _summary_of(opened, version, ctx.params.state_key, rule)
                hints.append((opened, data.run_truncation(opened.log, opened.key, version,
                                                          rule)))
            except data.LOADER_ERRORS + (G2POError,) as err:
                show_error(f"Cannot summarise {opened.name}", err)
                continue
            parts.append(summary)
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
        rule = ctx.rule_of(opened)  # a 0/1 reward read under the success reward 10
        reward_scale_offer(opened, run_reward_scale(opened, rule), rule, "overview")

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
    _alarm_shares(ctx)



def _alarm_shares(ctx: AppContext) -> None:
    """Per training step of the active run: the share of groups with no training signal and
    with each alarm (computed for runs up to :data:`AUTO_SHARES_ROWS` step rows, else on
    request)."""
    opened = ctx.active
    if opened is None:
        return
    st.subheader("Groups with no training signal or an alarm")
    md("Run **{}**, per training step: the share of its groups where each check fires, "
       "defects and progress alike (converged, all succeeded); the chart draws those that "
       "fire, the table has them all (the Groups page lists the groups).", opened.name)
    rule = ctx.rule_of(opened)
    try:  # the summary the Run overview read (its cache entry: the same rule)
        rows = int(data.run_summary(opened.log, opened.key, data.log_version(opened.log),
                                    rule)["n_steps"].sum())
    except data.LOADER_ERRORS + (G2POError,) as err:
        show_error("Cannot summarise the run", err)
        return
    if rows > AUTO_SHARES_ROWS and not st.checkbox(
            "Compute them (reads every training step once; cached on disk afterwards)",
            key="ov_alarm_shares"):
        return
    section, table = computed_table(ctx, opened, None, rule)
    if table is None:
        return
    shares = step_shares(table)
    labels = {"no_signal": "no signal (G2PO)", "no_signal_grpo": "no signal (GRPO)",
              **{c: HEADERS[c] for c in ALARM_COLUMNS if c != "alarm_no_signal"}}
    with section.container():
        # plotly, as every chart of the app: one chart library for the page to load
        drawn = {c: name for c, name in labels.items()  # the no-signal flags, the checks
                 if not c.startswith("alarm_") or shares[c].any()}  # that fire
        st.plotly_chart(history_figure(shares, drawn,
                                       "Share of groups per training step",
                                       y_title="share of groups", percent=True),
                        width="stretch", key="ov_alarm_shares_chart")
        st.dataframe(shares.rename(columns={"train_step": "step", **labels}),
                     hide_index=True, height=200,
                     column_config={v: st.column_config.NumberColumn(v, format="percent")
                                    for v in labels.values()})
