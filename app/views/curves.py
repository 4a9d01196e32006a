"""Training curves: every scalar the trainer logged (a run directory's ``metrics.jsonl``, or
verl's file logger or TensorBoard events beside a dump: losses, KL, grad norm, advantage
statistics, |TD|, validation scores, timings …), picked by name, by namespace or by a regular
expression, one chart per metric in a grid that fills the width, every chosen run on each
chart in its own colour and named in the legend. The x-axis is the training step or the wall
time (the logger's times, else verl's ``timing_s/step`` summed); smoothing draws a band of the
raw values it averaged behind each curve; click a point to open that training step in the group
explorer. A validation success curve (``val/success…``, with its episode counts) gets its noise:
each validation's 95 % band from the panel's size and the mean of the last validations, dashed
(:func:`g2po.evaluation.validation_curve`; drawn here, computed there). What reading the curves
noted (a resumed verl run's file logger lacks the steps before the resume) is said above the
charts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import regex
import streamlit as st

from app import data
from app.charts import metric_figure
from app.context import AppContext, OpenLog
from app.navigation import goto_step
from app.run_colors import run_colors
from app.safe import escape_html, fmt
from app.ui import no_run_message, show_error
from g2po.analysis.history import metric_namespaces, metric_series, namespace_of
from g2po.errors import G2POError, UserPatternError
from g2po.evaluation import episodes_metric, metric_name, validation_curve
from g2po.user_regex import UserPattern
from loaders import report_of
from loaders.curves import elapsed_seconds

__all__ = ["render", "DEFAULT_METRICS", "default_metrics", "matching_metrics", "time_unit",
           "X_STEP", "X_TIME", "MAX_MATCHED"]

#: Shown first when a run logged them (in this order); else the first metric of each namespace.
#: Validation success is the evaluation's own name (``val/success``, g2po.evaluation).
DEFAULT_METRICS = ("rollout/success_rate", metric_name("success"), "critic/score/mean",
                   "actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "adv/std",
                   "g2po/td_error_abs_mean", "g2po/merge_rate")
_MAX_DEFAULT = 4
#: At most this many charts from a regular expression (the rest are counted, not drawn).
MAX_MATCHED = 24
#: The x-axis choices.
X_STEP, X_TIME = "training step", "wall time"
#: Charts per row offered, and the default (W&B's panel grid holds three).
_PER_ROW = (1, 2, 3, 4)
_DEFAULT_PER_ROW = 3
#: Validations averaged by the window mean of a validation success curve, by default.
_DEFAULT_WINDOW = 3


def matching_metrics(names: list[str], pattern: str) -> list[str]:
    """The metrics whose name contains a match of ``pattern`` (a regular expression, case
    ignored), in the order of ``names``. :class:`UserPatternError` saying what is wrong with
    a pattern that does not compile, or that backtracks without end.

    >>> matching_metrics(["actor/pg_loss", "actor/kl_loss", "critic/vf_loss", "lr"], "kl|vf")
    ['actor/kl_loss', 'critic/vf_loss']
    """
    rx = UserPattern(pattern, "metric filter", flags=regex.IGNORECASE)
    return [name for name in names if rx.search(name) is not None]


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit the wall-time axis reads in for a span of ``seconds``, and its size in
    seconds: hours past two hours, minutes past two minutes, else seconds.

    >>> time_unit(90.0), time_unit(600.0), time_unit(3 * 3600.0)
    (('s', 1.0), ('min', 60.0), ('h', 3600.0))
    """
    if seconds > 7200:
        return "h", 3600.0
    if seconds > 120:
        return "min", 60.0
    return "s", 1.0


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
    by_regex = _regex_choice(options)
    picked = pick_col.multiselect("Metrics (type to search, e.g. actor/ or kl)", options,
                                  default=default, key="cv_metrics",
                                  disabled=by_regex is not None,
                                  help="Unused while the regular expression below picks.")
    ns_col.selectbox("Add a whole namespace", [None, *groups], key="cv_namespace",
                     format_func=lambda ns: "—" if ns is None else f"{ns} ({len(groups[ns])})",
                     on_change=_add_namespace, args=(groups,), disabled=by_regex is not None)
    chosen = picked if by_regex is None else by_regex
    x_col, smooth_col, row_col = st.columns([2, 3, 1])
    axis = x_col.radio(
        "x-axis", [X_STEP, X_TIME], key="cv_x", horizontal=True,
        help="Wall time: since each run's first logged step, from the times its logger "
             "wrote, else from verl's timing_s/step summed.")
    smoothing = smooth_col.slider("Smoothing (exponential moving average weight; 0 = raw)",
                                  0.0, 0.99, 0.0, 0.01, key="cv_smooth")
    per_row = row_col.selectbox("Charts per row", _PER_ROW,
                                index=_PER_ROW.index(_DEFAULT_PER_ROW), key="cv_per_row")
    window = _noise_control(chosen)
    if not chosen:
        st.info("Choose at least one metric." if by_regex is None else
                "No metric matches the regular expression.")
        return
    colors = run_colors([o for o in ctx.logs if o.name in frames])
    series = metric_series(frames, chosen, smoothing)
    x, x_title = "train_step", X_STEP
    if axis == X_TIME:
        times = _wall_times(frames)
        if times.empty:
            st.info("None of the chosen runs logged times (no timestamps, no verl "
                    "timing_s/step): the x-axis stays the training step.")
        else:
            x, x_title, series = _on_wall_time(series, times)
    order = {ns: i for i, ns in enumerate(groups)}  # a namespace's charts side by side
    names = sorted(chosen, key=lambda n: order.get(namespace_of(n), len(order)))
    clicked = None
    for start in range(0, len(names), per_row):
        cols = st.columns(per_row)
        for col, name in zip(cols, names[start:start + per_row], strict=False):
            fig, trace_runs = metric_figure(series, name, colors, smoothed=smoothing > 0,
                                            x=x, x_title=x_title)
            if window and x == "train_step":
                _add_noise(fig, trace_runs, frames, name, colors, window)
            with col:
                event = st.plotly_chart(fig, key=f"cv_chart:{name}", on_select="rerun",
                                        selection_mode="points")
            points = (event.selection or {}).get("points", []) if event else []
            if points:
                curve = int(points[0].get("curve_number", 0))
                index = int(points[0].get("point_index", 0))
                if curve < len(trace_runs) and index < len(fig.data[curve].customdata):
                    clicked = (trace_runs[curve], int(fig.data[curve].customdata[index]))
    if clicked is not None:
        target = next((o for o in ctx.logs if o.name == clicked[0]), None)
        if target is not None and clicked[1] in target.log.train_steps():
            goto_step(ctx, target, clicked[1])
    with st.expander("The values"):
        st.dataframe(series, hide_index=True)


def _noise_control(chosen: list[str]) -> int:
    """How many validations the window mean of a validation success curve averages (0: no
    band, no window), asked for only when such a curve is charted."""
    if not any(episodes_metric(name) for name in chosen):
        return 0
    on = st.checkbox("Validation noise: a 95 % band from each validation's episodes, and the "
                     "mean of the last validations (dashed)", value=True, key="cv_noise",
                     help="A validation success is a proportion of its panel's episodes: the "
                          "band is its binomial noise (Wilson's interval); the window pools "
                          "the last validations' episodes (the policy changes within it).")
    if not on:
        return 0
    return int(st.number_input("Validations in the window mean", 1, 50, _DEFAULT_WINDOW,
                               key="cv_window"))


def _add_noise(fig: go.Figure, trace_runs: list[str], frames: dict[str, pd.DataFrame],
               metric: str, colors: dict[str, str], window: int) -> None:
    """Draw each run's validation noise on its chart of ``metric``: the band behind the values
    and the window mean, each trace carrying its training steps (a click opens one)."""
    for run in sorted(frames):
        try:
            curve = validation_curve(frames[run], metric, window)
        except ValueError:  # a run that did not log this metric's episode counts
            continue
        if curve.empty:
            continue
        steps = curve["train_step"].to_numpy()
        color = colors.get(run)
        name = escape_html(run)
        fig.add_trace(go.Scatter(
            x=np.concatenate([steps, steps[::-1]]),
            y=np.concatenate([curve["high"].to_numpy(), curve["low"].to_numpy()[::-1]]),
            customdata=np.concatenate([steps, steps[::-1]]), fill="toself", mode="lines",
            line={"width": 0, "color": color}, opacity=0.35, name=name, legendgroup=name,
            showlegend=False, hoverinfo="skip"))
        trace_runs.append(run)
        fig.add_trace(go.Scatter(
            x=steps, y=curve["window_mean"], customdata=steps, mode="lines", name=name,
            legendgroup=name, showlegend=False, line={"color": color, "width": 1.5,
                                                      "dash": "dash"},
            hovertemplate=f"mean of the last {window} validation(s) %{{y:.1%}}"
                          "<extra>%{fullData.name}</extra>"))
        trace_runs.append(run)


def _regex_choice(options: list[str]) -> list[str] | None:
    """The metrics the regular expression typed picks (at most :data:`MAX_MATCHED`), or None
    when none is typed or it is invalid (then the error is shown and the picks stand)."""
    pattern = st.text_input("Or chart every metric matching a regular expression (case "
                            "ignored), e.g. loss$ or ^actor/.*(kl|entropy)", key="cv_regex")
    if not pattern:
        return None
    try:
        matched = matching_metrics(options, pattern)
    except UserPatternError as err:
        st.error(fmt("{} The metrics picked above are shown instead.", err))
        return None
    if len(matched) > MAX_MATCHED:
        st.caption(fmt("{} metrics match; the first {} are charted (narrow the expression to "
                       "see the others).", len(matched), MAX_MATCHED))
    else:
        st.caption(fmt("{} metric(s) match.", len(matched)))
    return matched[:MAX_MATCHED]


def _wall_times(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """run, train_step, seconds (since the run's first logged step) of every run whose logger
    recorded times; the runs without any are named in a caption."""
    parts, missing, sources = [], [], set()
    for run, frame in frames.items():
        ordered = frame.sort_values("train_step", kind="stable")
        seconds, source = elapsed_seconds(ordered)
        if seconds is None:
            missing.append(run)
            continue
        sources.add(source)
        parts.append(pd.DataFrame({"run": run, "train_step": ordered["train_step"].to_numpy(
            dtype=np.int64), "seconds": seconds}))
    if missing:
        st.caption(fmt("No wall time for {} (its logger wrote no times and no timing_s/step): "
                       "on the wall-time axis it is left out.", ", ".join(missing)))
    if parts:
        st.caption(fmt("Wall time from {}.", " and ".join(sorted(sources))))
    if not parts:
        return pd.DataFrame({"run": [], "train_step": pd.Series(dtype=np.int64),
                             "seconds": []})
    return pd.concat(parts, ignore_index=True).dropna(subset=["seconds"])


def _on_wall_time(series: pd.DataFrame, times: pd.DataFrame) -> tuple[str, str, pd.DataFrame]:
    """``series`` with the wall time of each row (column ``wall_time``, in the unit that
    suits the longest run), the column's name and the axis title; rows without a time go."""
    series = series.merge(times, on=["run", "train_step"], how="inner")
    span = float(series["seconds"].max()) if not series.empty else 0.0
    unit, size = time_unit(span)
    series["wall_time"] = series.pop("seconds") / size
    return "wall_time", f"wall time ({unit} since the run's first logged step)", series
