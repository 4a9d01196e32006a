"""The state × state matrix of a group (:func:`g2po.analysis.matrix.transition_matrix`) as a
plotly heatmap: the compact view of a group too dense to draw.

Nodes are named as the drawing names them, and a state's name is its number: plotly would take
a column of names such as ``'0'``, ``'11'``, ``'4'`` for numbers (an axis from 0 to 25, cells
moved, the terminals' columns dropped), so both axes are categories, in the matrix's own order.
Log text (the states' labels in the hover) is HTML-escaped: plotly renders a subset of HTML in
hover text.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.colors import DIVERGING_SCALE, symmetric_limit
from app.safe import escape_html
from g2po.analysis.critical import CRITICAL_COUNT, critical_transitions
from g2po.analysis.labels import node_names
from g2po.analysis.matrix import MATRIX_VALUES, transition_matrix
from g2po.analysis.state_graph import StateGraph

__all__ = ["matrix_figure", "ROW_PX", "NO_TRANSITION"]

#: Height of one row of the matrix, in px: a 50-state group is ~650 px tall, rows legible.
ROW_PX = 13
#: The colour of a cell no transition fills (a transition with a value of 0 is white).
NO_TRANSITION = "#ececec"
#: Room around the cells for the axes' names and numbers, in px.
_MARGIN = {"l": 60, "r": 10, "t": 70, "b": 20}
#: Above this many columns the columns' names stand upright (``success`` would overlap).
_UPRIGHT_COLUMNS = 20
#: Every row and column named (plotly would name every other one of a long category axis).
_EVERY_TICK = {"tickmode": "linear", "tick0": 0, "dtick": 1}


def matrix_figure(graph: StateGraph, value: str = "td_error", *,
                  critical: int = CRITICAL_COUNT, min_height: int = 400) -> go.Figure:
    """The heatmap of ``graph``'s transition matrix of ``value`` (a key of
    :data:`g2po.analysis.matrix.MATRIX_VALUES`): rows the states a transition leaves, columns
    the states and terminals it reaches (a line before the terminals), both categorical in the
    matrix's order; a diverging colour scale centred on 0; grey where no transition is; the
    ``critical`` critical transitions numbered in their cells (``#1`` …); a hover naming both
    nodes by their label, the value and the number of transitions. At least ``min_height`` px
    tall, :data:`ROW_PX` per row beyond."""
    matrix = transition_matrix(graph, value)
    counts = transition_matrix(graph, "count")
    rows, cols = matrix.index.tolist(), matrix.columns.tolist()
    z = matrix.to_numpy(dtype=np.float64)
    limit = symmetric_limit(z)
    name = MATRIX_VALUES[value]
    labels = _hover_labels(graph)
    row_labels = np.array([labels[r] for r in rows], dtype=object)
    col_labels = np.array([labels[c] for c in cols], dtype=object)
    custom = np.stack([np.repeat(row_labels[:, None], len(cols), axis=1),
                       np.repeat(col_labels[None, :], len(rows), axis=0),
                       np.nan_to_num(counts.to_numpy(dtype=np.float64)).astype(int)
                       .astype(object)], axis=-1)
    # z as nested lists (None where no transition): a page reads the cells as they are sent,
    # not as a base64 block that plotly decodes
    cells = [[None if np.isnan(v) else float(v) for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=cells, x=cols, y=rows, customdata=custom, text=_rank_text(graph, rows, cols, critical),
        texttemplate="%{text}", textfont={"size": 10},
        colorscale=DIVERGING_SCALE, zmid=0.0, zmin=-limit, zmax=limit, xgap=1, ygap=1,
        hoverongaps=False,
        colorbar={"title": {"text": escape_html(name)}, "thickness": 12},
        hovertemplate=("from %{y}: %{customdata[0]}<br>to %{x}: %{customdata[1]}<br>"
                       + escape_html(name) + " %{z:.3g} over %{customdata[2]} "
                       "transition(s)<extra></extra>")))
    states = sum(1 for c in cols if c in set(rows))
    if states < len(cols):  # a line between the states' columns and the terminals'
        fig.add_vline(x=states - 0.5, line={"color": "#555555", "width": 1})
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=cols, title="to",
                     side="top", tickangle=-90 if len(cols) > _UPRIGHT_COLUMNS else 0,
                     showgrid=False, tickfont={"size": 10}, **_EVERY_TICK)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=rows,
                     autorange="reversed", title="from", showgrid=False, tickfont={"size": 10},
                     **_EVERY_TICK)
    fig.update_layout(height=max(min_height, ROW_PX * len(rows) + _MARGIN["t"] + _MARGIN["b"]),
                      margin=_MARGIN, plot_bgcolor=NO_TRANSITION)
    return fig


def _hover_labels(graph: StateGraph) -> dict[str, str]:
    """A node's name → its hover label: a state's distinguishing words (cut, HTML-escaped),
    a terminal's kind."""
    nodes = graph.nodes
    names = node_names(nodes)
    out = {}
    for node, name in names.items():
        words = str(nodes.at[node, "label"]).strip() if nodes.at[node, "kind"] == "state" else ""
        out[str(name)] = escape_html(words[:60] + ("…" if len(words) > 60 else "")) or \
            escape_html(str(name))
    return out


def _rank_text(graph: StateGraph, rows: list[str], cols: list[str], k: int) -> np.ndarray:
    """(n_rows, n_cols) str: ``#rank`` in the cells of the critical transitions (``#2 #4``
    in a cell two of them share: two actions between the same states), empty elsewhere."""
    text = np.full((len(rows), len(cols)), "", dtype=object)
    where_row = {r: i for i, r in enumerate(rows)}
    where_col = {c: j for j, c in enumerate(cols)}
    top = critical_transitions(graph, k)
    for rank, source, target in zip(top["rank"], top["from"], top["to"], strict=True):
        i, j = where_row[str(source)], where_col[str(target)]
        text[i, j] = f"{text[i, j]} #{rank}".strip()
    return text
