"""Training curves: every scalar the trainer logged (a run directory's ``metrics.jsonl``, or
verl's file logger or TensorBoard events beside a dump: losses, KL, grad norm, advantage
statistics, |TD|, validation scores, timings …), grouped by namespace, for every chosen run on
one chart per metric, each run in its own colour; optional smoothing; click a point to open
that training step in the group explorer. What reading the curves noted (a resumed verl run's
file logger lacks the steps before the resume) is said above the charts."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import data
from app.charts import metric_figure
from app.context import AppContext, OpenLog
from app.navigation import goto_step
from app.run_colors import run_colors
from app.safe import fmt
from app.ui import no_run_message, show_error
from g2po.analysis.history import metric_namespaces, metric_series, namespace_of
from g2po.errors import G2POError
from g2po.evaluation import metric_name
from loaders import report_of

__all__ = ["render", "DEFAULT_METRICS", "default_metrics"]

#: Shown first when a run logged them (in this order); else the first metric of each namespace.
#: Validation success is the evaluation's own name (``val/success``, g2po.evaluation).
DEFAULT_METRICS = ("rollout/success_rate", metric_name("success"), "critic/score/mean",
                   "actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "adv/std",
                   "g2po/td_error_abs_mean", "g2po/merge_rate")
_MAX_DEFAULT = 4


def default_metrics(names: list[str]) -> list[str]:
    """The metrics chosen before the user picks: the known useful ones present, else the first
    metric of each namespace; at most four."""
    known = [n for n in DEFAULT_METRICS if n in names]
    if not known:
        seen: dict[str, str] = {}
        for name in names:
            seen.setdefault(namespace_of(name), name)
        known = list(seen.values())
    return known[:_MAX_DEFAULT]


def _add_namespace(groups: dict[str, set[str]]) -> None:
    """Put every metric of the chosen namespace on the charts (runs before the next rerun)."""
    ns = st.session_state.get("cv_namespace")
    if ns is not None:
        current = list(st.session_state.get("cv_metrics", []))
        st.session_state["cv_metrics"] = current + sorted(set(groups[ns]) - set(current))
    st.session_state["cv_namespace"] = None


def _metrics_of(logs: list[OpenLog]) -> dict[str, pd.DataFrame]:
    frames = {}
    for opened in logs:
        try:
            frame = data.run_metrics(opened.log, opened.key, data.log_version(opened.log))
        except data.LOADER_ERRORS + (G2POError,) as err:
            show_error(f"Cannot read the metrics of {opened.name}", err)
            continue
        if len(frame.columns) > 1:
            frames[opened.name] = frame
            for note in report_of(frame).notes:
                st.caption(fmt("{}: {}", opened.name, note))
    return frames


def render(ctx: AppContext) -> None:
    st.title("Training curves")
    if not ctx.logs:
        no_run_message()
        return
    frames = _metrics_of(ctx.logs)
    if not frames:
        st.info("None of the chosen runs logged training metrics (run directories record them "
                "in metrics.jsonl; for a verl dump, give its file logger's JSONL or its "
                "TensorBoard folder with --metrics after its --log, or keep them beside it).")
        return
    groups: dict[str, set[str]] = {}
    for frame in frames.values():
        for ns, names in metric_namespaces(frame).items():
            groups.setdefault(ns, set()).update(names)
    options = [name for ns in sorted(groups, key=lambda n: (n.startswith("("), n))
               for name in sorted(groups[ns])]
    st.caption(fmt("{} metrics in {} namespaces: {}", len(options), len(groups),
                   ", ".join(f"{ns} ({len(names)})" for ns, names in groups.items())))
    default = default_metrics(options)
    if "cv_metrics" in st.session_state:  # keep the choice; drop what a rerun no longer has
        st.session_state["cv_metrics"] = [m for m in st.session_state["cv_metrics"]
                                          if m in options]
        default = None
    pick_col, ns_col = st.columns([3, 1])
    chosen = pick_col.multiselect("Metrics (type to search, e.g. actor/ or kl)", options,
                                  default=default, key="cv_metrics")
    ns_col.selectbox("Add a whole namespace", [None, *groups], key="cv_namespace",
                     format_func=lambda ns: "—" if ns is None else f"{ns} ({len(groups[ns])})",
                     on_change=_add_namespace, args=(groups,))
    smoothing = st.slider("Smoothing (exponential moving average weight; 0 = raw)", 0.0, 0.99,
                          0.0, 0.01, key="cv_smooth")
    if not chosen:
        st.info("Choose at least one metric.")
        return
    colors = run_colors([o for o in ctx.logs if o.name in frames])
    series = metric_series(frames, chosen, smoothing)
    by_ns: dict[str, list[str]] = {}
    for name in chosen:
        by_ns.setdefault(namespace_of(name), []).append(name)
    clicked = None
    for ns, names in by_ns.items():
        st.subheader(fmt("{}", ns))
        cols = st.columns(2)
        for i, name in enumerate(names):
            fig, trace_runs = metric_figure(series, name, colors, smoothed=smoothing > 0)
            with cols[i % 2]:
                event = st.plotly_chart(fig, key=f"cv_chart:{name}", on_select="rerun",
                                        selection_mode="points")
            points = (event.selection or {}).get("points", []) if event else []
            if points:
                curve = int(points[0].get("curve_number", 0))
                if curve < len(trace_runs):
                    clicked = (trace_runs[curve], int(points[0]["x"]))
    if clicked is not None:
        target = next((o for o in ctx.logs if o.name == clicked[0]), None)
        if target is not None and clicked[1] in target.log.train_steps():
            goto_step(ctx, target, clicked[1])
    with st.expander("The values"):
        st.dataframe(series, hide_index=True)
