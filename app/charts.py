"""Plotly figures of the views. Hover text built from log strings is HTML-escaped first: plotly
interprets a subset of HTML (``<a href>``, ``<b>``…) in hover labels, and shows entities as the
characters they stand for."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.colors import qualitative

from app.colors import DIVERGING_SCALE
from app.safe import escape_html, truncate

__all__ = [
    "OVERVIEW_METRICS",
    "RUN_PALETTE",
    "assign_run_colors",
    "overview_figure",
    "overview_runs",
    "metric_figure",
    "history_figure",
    "advantage_lines",
    "correlation_heatmap",
    "histogram",
]

#: Summary column → chart title, in the order the overview shows them.
OVERVIEW_METRICS = {
    "mean_reward": "Mean episode reward",
    "success_rate": "Success rate",
    "mean_length": "Mean episode length (steps)",
    "invalid_rate": "Invalid-action rate",
    "merge_rate": "State-merge rate (1 − state nodes / steps)",
}


#: Run colours: a run keeps the one it was first given (:mod:`app.run_colors`).
RUN_PALETTE = tuple(qualitative.Plotly) + tuple(qualitative.D3[1::2])


def _preference(run: str) -> int:
    """A number fixed by the run's name alone (not Python's salted ``hash``): breaks ties."""
    return int.from_bytes(hashlib.sha256(run.encode("utf-8", "replace")).digest()[:8], "big")


def assign_run_colors(runs: list[str], assigned: Mapping[str, str],
                      used: Mapping[str, int] | None = None) -> dict[str, str]:
    """``assigned`` (run → colour, kept as it is) plus a colour for each new run of ``runs``:
    one no run of ``runs`` holds, the least ``used`` so far (colour → how many runs ever got
    it), ties broken by the run's own name; new runs are served in an order fixed by their
    names, so the answer does not depend on the order of ``runs``. Only when every colour is
    held by a run of ``runs`` do two of them share one."""
    out = dict(assigned)
    counts = {c: 0 for c in RUN_PALETTE}
    counts.update({c: n for c, n in (used or {}).items() if c in counts})
    for run in sorted((r for r in runs if r not in out), key=lambda r: (_preference(r), r)):
        held = {out[r] for r in runs if r in out}
        free = [c for c in RUN_PALETTE if c not in held] or list(RUN_PALETTE)
        offset = _preference(run) % len(RUN_PALETTE)
        color = min(free, key=lambda c: (counts[c],
                                         (RUN_PALETTE.index(c) - offset) % len(RUN_PALETTE)))
        out[run] = color
        counts[color] += 1
    return out


def overview_runs(summary: pd.DataFrame, metric: str) -> list[str]:
    """The runs of :func:`overview_figure`'s traces, in trace order (a click names a trace)."""
    return sorted(summary.dropna(subset=[metric])["run"].unique().tolist())


def overview_figure(summary: pd.DataFrame, metric: str, title: str | None = None,
                    colors: Mapping[str, str] | None = None) -> go.Figure:
    """One metric per training step, one line per run (``summary`` has ``run``,
    ``train_step`` and ``metric``), coloured by ``colors`` (run → colour; plotly's order
    otherwise). Points are selectable: a click picks the training step."""
    data = summary.dropna(subset=[metric])
    fig = go.Figure()
    for run in overview_runs(summary, metric):
        part = data[data["run"] == run].sort_values("train_step")
        color = (colors or {}).get(run)
        fig.add_trace(go.Scatter(
            x=part["train_step"], y=part[metric], mode="lines+markers", name=escape_html(run),
            line={"color": color} if color else None,
            hovertemplate="training step %{x}<br>%{y:.4g}<extra>%{fullData.name}</extra>",
        ))
    fig.update_layout(
        title=title or OVERVIEW_METRICS.get(metric, metric), height=280,
        margin={"l": 40, "r": 10, "t": 40, "b": 30}, showlegend=data["run"].nunique() > 1,
        xaxis_title="training step", clickmode="event+select",
    )
    return fig


def _fill(color: str | None, alpha: float) -> str:
    """A ``#rrggbb`` colour as ``rgba(…, alpha)`` (grey for none): the band's fill."""
    if not color or not color.startswith("#") or len(color) != 7:
        return f"rgba(128,128,128,{alpha})"
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


#: The legend of a chart in the grid: one row under the plot and its axis title, so the plot
#: keeps the width (below the axis with automargin: never over the tick labels).
_LEGEND = {"orientation": "h", "yanchor": "top", "y": -0.32, "x": 0, "xanchor": "left",
           "font": {"size": 11}}


def metric_figure(series: pd.DataFrame, metric: str, colors: Mapping[str, str],
                  smoothed: bool = False, x: str = "train_step",
                  x_title: str = "training step") -> tuple[go.Figure, list[str]]:
    """One training metric, one line per run (``series`` from
    :func:`g2po.analysis.history.metric_series`: run, metric, train_step, value, smoothed,
    low, high; plus the column ``x`` when it is not ``train_step``, e.g. wall time), against
    ``x`` (axis title ``x_title``). With ``smoothed``, each run's smoothed line is drawn over
    a band from the smallest to the largest raw value the smoothing spans and over the raw
    values (faded, same colour). The legend always names the runs (one entry per run; a click
    on it hides all of that run's traces). Every trace carries each point's training step as
    ``customdata``, so a click on any x-axis names its step. Returns the figure and the run of
    each trace, in trace order."""
    data = series[series["metric"] == metric].dropna(subset=[x])
    fig = go.Figure()
    trace_runs: list[str] = []
    for run in sorted(data["run"].unique().tolist()):
        part = data[data["run"] == run]
        name = escape_html(run)
        color = colors.get(run)
        steps = part["train_step"].to_numpy()
        hover = "training step %{customdata}<br>%{y:.4g}"
        if smoothed:
            fig.add_trace(go.Scatter(
                x=np.concatenate([part[x].to_numpy(), part[x].to_numpy()[::-1]]),
                y=np.concatenate([part["high"].to_numpy(), part["low"].to_numpy()[::-1]]),
                customdata=np.concatenate([steps, steps[::-1]]), mode="lines", name=name,
                fill="toself", fillcolor=_fill(color, 0.15), line={"width": 0},
                legendgroup=name, showlegend=False, hoverinfo="skip"))
            trace_runs.append(run)
            fig.add_trace(go.Scatter(
                x=part[x], y=part["value"], customdata=steps, mode="lines", name=name,
                line={"color": color, "width": 1}, opacity=0.3, legendgroup=name,
                showlegend=False, hovertemplate=hover + " (raw)<extra>%{fullData.name}</extra>"))
            trace_runs.append(run)
        fig.add_trace(go.Scatter(
            x=part[x], y=part["smoothed" if smoothed else "value"], customdata=steps,
            mode="lines+markers", name=name, marker={"size": 4}, legendgroup=name,
            line={"color": color, "width": 2}, showlegend=True,
            hovertemplate=hover + (" (smoothed)" if smoothed else "") +
                          "<extra>%{fullData.name}</extra>"))
        trace_runs.append(run)
    fig.update_layout(
        title=escape_html(metric), height=320, margin={"l": 40, "r": 10, "t": 40, "b": 20},
        xaxis_title=x_title, hovermode="x unified", clickmode="event+select",
        showlegend=True, legend=_LEGEND,
    )
    fig.update_xaxes(automargin=True, title={"standoff": 8, "font": {"size": 12}})
    return fig, trace_runs


def history_figure(history: pd.DataFrame, columns: Mapping[str, str], title: str,
                   kind: str = "lines", y_title: str | None = None,
                   percent: bool = False) -> go.Figure:
    """Numbers over training steps (``history`` has ``train_step``; e.g. a state's, from
    :func:`g2po.analysis.history.state_history`): one trace per column (column → legend
    name), as ``lines`` or ``bars``; with ``percent``, shares shown as percentages. Missing
    values (the state not reached that step) leave gaps. Points are selectable: a click picks
    the training step."""
    fig = go.Figure()
    value = "%{y:.1%}" if percent else "%{y:.4g}"
    for column, name in columns.items():
        hover = f"training step %{{x}}<br>{value}<extra>{escape_html(name)}</extra>"
        if kind == "bars":
            fig.add_trace(go.Bar(x=history["train_step"], y=history[column],
                                 name=escape_html(name), hovertemplate=hover))
        else:
            fig.add_trace(go.Scatter(x=history["train_step"], y=history[column],
                                     mode="lines+markers", name=escape_html(name),
                                     connectgaps=False, hovertemplate=hover))
    fig.update_layout(title=title, height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30},
                      xaxis_title="training step", yaxis_title=y_title,
                      clickmode="event+select", showlegend=len(columns) > 1)
    if percent:
        fig.update_yaxes(tickformat=".0%")
    return fig


def advantage_lines(table: pd.DataFrame, estimators: list[str], traj_ids: list[str],
                    cols: int = 2, highlight: str | None = None,
                    y_title: str = "advantage",
                    titles: dict[str, str] | None = None) -> go.Figure:
    """Per trajectory (one panel each), the per-step advantage of every estimator; the
    ``highlight`` estimator drawn thick on top, the others thin and faded. ``titles``:
    traj_id → the panel's title (untrusted text, escaped here; default the id)."""
    data = table[table["traj_id"].isin(traj_ids)]
    long = data.melt(id_vars=["traj_id", "t", "action"], value_vars=estimators,
                     var_name="estimator", value_name=y_title)
    long["action"] = long["action"].map(lambda s: escape_html(truncate(s, 60)))
    long["traj_id"] = long["traj_id"].map(escape_html)
    long["estimator"] = long["estimator"].map(escape_html)
    fig = px.line(long, x="t", y=y_title, color="estimator", facet_col="traj_id",
                  facet_col_wrap=cols, markers=True, hover_data={"action": True},
                  facet_row_spacing=0.06 if len(traj_ids) <= 8 else 0.02)
    if highlight is not None:
        mark = escape_html(highlight)
        fig.for_each_trace(lambda tr: tr.update(line={"width": 4}, opacity=1.0,
                                                marker={"size": 8})
                           if tr.name == mark else
                           tr.update(line={"width": 1}, opacity=0.35, marker={"size": 4}))
        fig.data = tuple(sorted(fig.data, key=lambda tr: tr.name == mark))  # on top
    rows = max(1, -(-len(traj_ids) // cols))
    fig.update_layout(height=max(260, 200 * rows), margin={"l": 40, "r": 10, "t": 40, "b": 30})
    names = {escape_html(t): escape_html((titles or {}).get(t, t)) for t in traj_ids}
    fig.for_each_annotation(lambda a: a.update(text=names.get(a.text.split("=", 1)[-1],
                                                              a.text.split("=", 1)[-1])))
    fig.add_hline(y=0, line_width=1, line_color="#999999")
    return fig


def correlation_heatmap(corr: pd.DataFrame, title: str) -> go.Figure:
    """A (k, k) correlation matrix on the diverging scale from −1 to 1, values written in."""
    names = [escape_html(c) for c in corr.columns]
    fig = go.Figure(go.Heatmap(
        z=corr.to_numpy(), x=names, y=names, zmin=-1, zmax=1, colorscale=DIVERGING_SCALE,
        text=np.vectorize(lambda v: "n/a" if np.isnan(v) else f"{v:.2f}")(corr.to_numpy()),
        texttemplate="%{text}", hovertemplate="%{y} vs %{x}: %{text}<extra></extra>",
    ))
    fig.update_layout(title=title, height=120 + 45 * len(names),
                      margin={"l": 40, "r": 10, "t": 40, "b": 30})
    return fig


def histogram(values: pd.Series, title: str, x_title: str, nbins: int = 40,
              color: pd.Series | None = None) -> go.Figure:
    """A histogram of ``values`` (n,)."""
    frame = pd.DataFrame({x_title: values.to_numpy()})
    if color is not None:
        frame["group"] = color.map(escape_html).to_numpy()
    fig = px.histogram(frame, x=x_title, nbins=nbins,
                       color="group" if color is not None else None)
    fig.update_layout(title=title, height=300, margin={"l": 40, "r": 10, "t": 40, "b": 30},
                      bargap=0.05)
    return fig
