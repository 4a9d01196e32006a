"""The state graph's vis-network records (through pyvis): each node's shape, colour, size,
label and position, each edge's colour, width, shape and marks, the view options, the legend's
numbers and what stays legible at any zoom (:func:`build_network`)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyvis.network import Network

from app.colors import EDGE_SCALE, diverging_colors, symmetric_limit, value_colors
from app.graph.positions import (
    LAYOUT_ASPECT,
    edge_routes,
    edge_shapes,
    layout_positions,
    node_sizes,
)
from app.graph.style import (
    EDGE_COLOR_MODES,
    FADED_EDGE,
    FADED_NODE,
    FULL_EDGES,
    HIGHLIGHT_COLOR,
    LABEL_MIN_PX,
    LARGE_GRAPH,
    MIN_EDGE_WIDTH,
    QUIET_EDGE,
    QUIET_WIDTH,
    SELECTED_LOOP_REACH,
    TERMINAL_SHAPES,
    VALUE_SCALES,
    DrawStyle,
    Highlight,
)
from app.graph.tooltips import edge_tooltip, node_tooltip
from g2po.analysis.critical import critical_transitions
from g2po.analysis.labels import terse
from g2po.analysis.state_graph import StateGraph

__all__ = ["build_network", "full_strength", "edge_colors", "EdgeColors"]


def build_network(
    graph: StateGraph,
    highlight: Highlight | None = None,
    *,
    success_reward: float,
    style: DrawStyle | None = None,
) -> Network:
    """A pyvis :class:`Network` of the graph: node colour = V (on the scale ``style`` names),
    label = the state key's place and distinguishing words, size = visits; start nodes as
    diamonds, terminals as a green star (success), a red square (failure) or a grey triangle
    (truncated); edge width = count (at least :data:`MIN_EDGE_WIDTH`), colour = TD error, mean
    advantage or success share (:func:`edge_colors`); the largest-|TD| edges thicker and
    numbered; self-loops labelled with their count; the selected edge in the highlight colour
    (a selected self-loop reaching past its node's selection ring). Tooltips as plain text.
    Physics off, positions fixed.

    The legend's numbers travel in ``net.legend``, the ids whose labels stay legible at any
    zoom in ``net.legible`` (see :func:`app.graph.page.network_data`)."""
    highlight = highlight or Highlight()
    style = style or DrawStyle()
    nodes, edges = graph.nodes, graph.edges
    large = len(nodes) > LARGE_GRAPH
    states = (nodes["kind"] == "state").to_numpy()
    v_lo, v_hi = _value_range(nodes["value"].to_numpy(dtype=np.float64)[states], style,
                              success_reward)
    critical = critical_transitions(graph, style.critical)
    strong = full_strength(graph, critical.index, highlight)
    colors = edge_colors(graph, style, highlight)

    net = Network(width="100%", directed=True, cdn_resources="in_line")
    _add_nodes(net, graph, highlight, (v_lo, v_hi), large)
    _add_edges(net, graph, highlight, colors, critical, strong)
    net.options = _options(large)
    net.legend = {
        "value": {"lo": v_lo, "hi": v_hi, "scale": VALUE_SCALES[style.value_scale]},
        "edge": {"lo": colors.lo, "hi": colors.hi, "name": colors.name},
        "critical": len(critical),
        "truncated": bool((nodes["kind"] == "truncated").any()),
        "quiet": int(len(edges) - strong.sum()) if not highlight.active else 0,
        "edges": len(edges),
    }
    key_nodes = nodes.index[(nodes["kind"] != "state").to_numpy() |
                            nodes["is_start"].to_numpy(dtype=bool)]
    net.legible = {"nodes": [int(n) for n in key_nodes],
                   "edges": [f"e{edges.index.get_loc(i)}" for i in critical.index]}
    return net


def _value_range(values: np.ndarray, style: DrawStyle, success_reward: float
                 ) -> tuple[float, float]:
    """The ends of the node colour scale: the states' values, or 0 to the success reward."""
    finite = values[np.isfinite(values)]
    if style.value_scale == "reward" or not finite.size:
        return min(0.0, float(success_reward)), max(0.0, float(success_reward))
    lo, hi = float(finite.min()), float(finite.max())
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)


def _add_nodes(net: Network, graph: StateGraph, highlight: Highlight,
               value_range: tuple[float, float], large: bool) -> None:
    """Every node of the graph, at its position of the first layout: its shape (start,
    terminal), V colour (faded off the highlighted paths), size, border, label and tooltip."""
    nodes = graph.nodes
    pos = layout_positions(graph)
    colors = value_colors(nodes["value"].to_numpy(dtype=np.float64), *value_range)
    sizes = node_sizes(nodes)
    node_ids = nodes.index.to_numpy(dtype=np.int64)
    xs, ys = pos["x"].to_numpy(), pos["y"].to_numpy()
    for i, row in enumerate(nodes.to_dict("records")):
        node_id = int(node_ids[i])
        kind = row["kind"]
        faded = highlight.active and node_id not in highlight.nodes
        color = colors[i]
        shape = "dot"
        if kind in TERMINAL_SHAPES:
            shape, color = TERMINAL_SHAPES[kind]
        elif row["is_start"]:
            shape = "diamond"
        border = "#222222"
        width = 3 if row["is_start"] or kind != "state" else 1
        if highlight.node == node_id:
            border, width = HIGHLIGHT_COLOR, 6
        short = {} if large or kind != "state" else {"short": _short_label(node_id, row)}
        net.add_node(
            node_id,
            label=_node_label(node_id, row, large),
            **short,
            shape=shape,
            # selected or hovered, a node keeps its V colour (vis would paint it pale blue)
            color={"background": FADED_NODE if faded else color,
                   "border": FADED_NODE if faded else border,
                   "highlight": {"background": color, "border": HIGHLIGHT_COLOR},
                   "hover": {"background": color, "border": border}},
            size=round(float(sizes[i]), 2),
            borderWidth=width,
            title=node_tooltip(node_id, row),
            x=round(float(xs[i]), 1),
            y=round(float(ys[i]), 1),
        )


def _node_label(node_id: int, row: dict, large: bool) -> str:
    """A state's number and distinguishing words (its number alone in a large graph), a
    terminal's kind."""
    if row["kind"] != "state":
        return str(row["kind"])
    words = str(row["label"]).strip()
    return str(node_id) if large or not words else _wrap(f"{node_id}: {words}")


def _short_label(node_id: int, row: dict) -> str:
    """A state's label on one line without function words (``12: arrive drawer 3 · closed``):
    what the page cuts to the room beside the node when the view is too far out for the full
    label."""
    words = terse(str(row["label"]).strip())
    return f"{node_id}: {words}" if words else str(node_id)


def _wrap(text: str, width: int = 20, lines: int = 2) -> str:
    """A label in at most ``lines`` lines of about ``width`` characters (``…`` when cut), so
    that labels of neighbouring columns do not run into each other."""
    out = textwrap.wrap(text, width, break_long_words=True, max_lines=lines, placeholder=" …")
    return "\n".join(out)


@dataclass(frozen=True)
class EdgeColors:
    """The edges' colours (one per row of ``graph.edges``) and the ends and name of their
    scale, as the legend shows it."""

    colors: list[str]
    lo: float
    hi: float
    name: str


def edge_colors(graph: StateGraph, style: DrawStyle, highlight: Highlight) -> EdgeColors:
    """The edge colour ``style`` names: TD error or the share of successful trajectories
    through an edge, or its steps' mean advantage — with highlighted trajectories, their own
    edges show *their* steps' A, on the scale of every step's A."""
    edges = graph.edges
    name = EDGE_COLOR_MODES[style.edge_color]
    if style.edge_color == "td":
        td = edges["td_error"].to_numpy(dtype=np.float64)
        limit = symmetric_limit(td)
        return EdgeColors(diverging_colors(td, limit, EDGE_SCALE), -limit, limit, name)
    if style.edge_color == "success_share":
        share = _success_share(graph)
        return EdgeColors(diverging_colors(share - 0.5, 0.5, EDGE_SCALE), 0.0, 1.0, name)
    adv = edges["adv"].to_numpy(dtype=np.float64) if "adv" in edges.columns else \
        np.zeros(len(edges))
    own = _trajectory_step_adv(graph, highlight.trajectories) if highlight.trajectories \
        else np.full(len(edges), np.nan)
    if np.isfinite(own).any():  # the trajectory's own steps, on every step's A scale
        adv = np.where(np.isfinite(own), own, adv)
        limit = symmetric_limit(graph.steps["adv"].to_numpy(dtype=np.float64))
        name = ("A of the highlighted trajectory's own steps"
                if len(highlight.trajectories) == 1 else
                "A of the highlighted trajectories' own steps (mean)")
    else:
        limit = symmetric_limit(adv)
    return EdgeColors(diverging_colors(adv, limit, EDGE_SCALE), -limit, limit, name)


def _edge_means(graph: StateGraph, steps: pd.DataFrame, values: np.ndarray) -> np.ndarray:
    """(n_edges,) the mean of ``values`` (one per row of ``steps``) over the steps along each
    edge of the graph (NaN where none of ``steps`` passes)."""
    keys = pd.MultiIndex.from_arrays([steps["node"].to_numpy(), steps["action"].astype(str)
                                      .to_numpy(), steps["next_node"].to_numpy()])
    mean = pd.Series(values, index=keys).groupby(level=[0, 1, 2]).mean()
    edges = graph.edges
    at = pd.MultiIndex.from_arrays([edges["source"].to_numpy(), edges["action"].astype(str)
                                    .to_numpy(), edges["target"].to_numpy()])
    return mean.reindex(at).to_numpy(dtype=np.float64)


def _trajectory_step_adv(graph: StateGraph, trajectories: tuple[str, ...]) -> np.ndarray:
    """(n_edges,) the mean combined advantage A of the given trajectories' steps along each
    edge (NaN where none of them passes): what a highlighted trajectory's own edges show."""
    steps = graph.steps
    mine = steps[steps["traj_id"].astype(str).isin(trajectories).to_numpy()]
    if mine.empty or "adv" not in mine.columns:
        return np.full(len(graph.edges), np.nan)
    return _edge_means(graph, mine, mine["adv"].to_numpy(dtype=np.float64))


def _success_share(graph: StateGraph) -> np.ndarray:
    """(n_edges,) share of each edge's steps whose trajectory succeeded."""
    steps = graph.steps
    return _edge_means(graph, steps, steps["success"].to_numpy(dtype=np.float64))


def full_strength(graph: StateGraph, critical: pd.Index, highlight: Highlight,
                  limit: int = FULL_EDGES) -> np.ndarray:
    """(n_edges,) bool: the edges drawn at full strength at first. With a highlight, its own
    edges (the rest fade); else the critical transitions (``critical``: their rows in
    ``graph.edges``), then the most travelled (ties: the larger |TD error|), ``limit`` in
    all."""
    edges = graph.edges
    if highlight.active:
        keys = zip(edges["source"].astype(int), edges["action"].astype(str),
                   edges["target"].astype(int), strict=True)
        return np.fromiter((k in highlight.edges for k in keys), dtype=bool, count=len(edges))
    strong = edges.index.isin(critical)
    order = np.lexsort((np.arange(len(edges)), -edges["td_error"].abs().to_numpy(),
                        -edges["count"].to_numpy()))
    room = max(limit - int(strong.sum()), 0)
    rest = order[~strong[order]][:room]
    strong[rest] = True
    return strong


def _add_edges(net: Network, graph: StateGraph, highlight: Highlight, colors: EdgeColors,
               critical: pd.DataFrame, strong: np.ndarray) -> None:
    """Every edge of the graph: its colour and width (count; wider on a highlighted path and
    for a critical transition), shape (routed curve, self-loop), marks (its critical rank,
    a self-loop's count, dashes when every step along it was invalid), quiet until "All
    edges" when not at full strength, and the selected edge in the highlight colour."""
    edges = graph.edges
    counts = edges["count"].to_numpy(dtype=np.float64)
    cmax = max(float(counts.max()) if len(counts) else 1.0, 1.0)
    widths = MIN_EDGE_WIDTH + 5.0 * np.sqrt(counts / cmax)
    loops, _, _ = edge_shapes(edges)
    routes, blocked = edge_routes(graph, layout_positions(graph), LAYOUT_ASPECT)
    crit_rank = dict(zip(critical.index.tolist(), critical["rank"].tolist(), strict=True))
    src = edges["source"].to_numpy(dtype=np.int64)
    dst = edges["target"].to_numpy(dtype=np.int64)
    sizes = dict(zip(graph.nodes.index.astype(int), node_sizes(graph.nodes), strict=True))
    records = edges.assign(success_share=_success_share(graph)).to_dict("records")
    for i, row in enumerate(records):
        key = (int(row["source"]), str(row["action"]), int(row["target"]))
        on_path = key in highlight.edges
        faded = highlight.active and not on_path
        rank = crit_rank.get(edges.index[i])
        extra = _edge_marks(rank, int(row["count"]) if src[i] == dst[i] else None)
        extra.update(hidden=False, quiet=False, faded=False)  # an update overwrites them
        width = float(widths[i]) + (3.0 if on_path else 0.0) + (4.0 if rank else 0.0)
        color = FADED_EDGE if faded else colors.colors[i]
        if faded and highlight.edge != i:  # context: hidden where it would cross a node
            extra.update(faded=True, hidden=blocked[i])
        elif not faded and not strong[i] and highlight.edge != i:
            # quiet (pale, thin; hidden where it would cross a node) until "All edges"
            extra.update(quiet=True, fullColor=color, fullWidth=round(width, 2),
                         quietColor=QUIET_EDGE, quietWidth=QUIET_WIDTH,
                         hidden=blocked[i])
            color, width = QUIET_EDGE, QUIET_WIDTH
        shape = loops[i] or ({"smooth": routes[i]} if routes[i]["enabled"] else {})
        if highlight.edge == i:  # the selected edge stands out, a self-loop past the ring
            color, width = HIGHLIGHT_COLOR, width + 2.0
            if src[i] == dst[i]:
                reach = float(sizes[int(src[i])]) + SELECTED_LOOP_REACH
                shape = {"selfReference": {**shape["selfReference"], "size": round(reach, 1),
                                           "renderBehindTheNode": False}}
        net.add_edge(
            key[0],
            key[2],
            id=f"e{i}",  # stable ids: an update recolours these edges instead of adding more
            title=edge_tooltip(row),
            color=color,
            width=round(width, 2),
            dashes=bool(row["invalid"] == row["count"]),
            **shape,
            **extra,
        )


def _edge_marks(rank: int | None, loop_count: int | None) -> dict:
    """An edge's marks: its critical rank (``rank``: the page draws ``#1``… on the edge itself,
    where no node or label is) and, on a self-loop, a label with its count (``×3``, after
    the rank on a critical self-loop)."""
    parts, extra = [], {}
    if rank is not None:
        extra["rank"] = int(rank)
    if loop_count is not None:
        parts = ([f"#{rank}"] if rank is not None else []) + [f"×{loop_count}"]
    if parts:
        extra["label"] = " ".join(parts)
        extra["font"] = {"size": 12, "align": "top", "strokeWidth": 3}
    return extra


def _options(large: bool) -> dict:
    """vis-network's options: physics off (positions are fixed), hover tooltips, edges hidden
    while a large graph is dragged or zoomed, labels under :data:`LABEL_MIN_PX` not drawn."""
    return {
        "physics": {"enabled": False},
        "layout": {"improvedLayout": False, "hierarchical": {"enabled": False}},
        "interaction": {
            "hover": True,
            "tooltipDelay": 80,
            "hideEdgesOnDrag": large,
            "hideEdgesOnZoom": large,
            "navigationButtons": False,
            "keyboard": False,
            "multiselect": False,
            "selectConnectedEdges": False,
        },
        "nodes": {"font": {"size": 14, "face": "sans-serif", "multi": False, "vadjust": -2},
                  "physics": False,
                  "color": {"highlight": {"border": HIGHLIGHT_COLOR}},
                  # a label under 10 px on screen is not drawn (hover shows it)
                  "scaling": {"label": {"drawThreshold": LABEL_MIN_PX + 1}}},
        "edges": {
            "arrows": {"to": {"enabled": True, "scaleFactor": 0.5}},
            "smooth": False,
            "selfReference": {"renderBehindTheNode": True},
            "font": {"size": 0},
            "scaling": {"label": {"drawThreshold": LABEL_MIN_PX + 1}},
            "color": {"highlight": HIGHLIGHT_COLOR, "hover": HIGHLIGHT_COLOR, "inherit": False},
        },
    }
