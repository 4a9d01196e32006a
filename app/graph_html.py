"""Draw a :class:`g2po.analysis.state_graph.StateGraph` with pyvis: layout, node and edge data,
offline HTML.

pyvis builds the vis-network node and edge records; the page around them is our own
(``templates/``) because pyvis' ``generate_html`` links Bootstrap and vis-network from CDNs.
vis-network's JavaScript comes from the installed pyvis package: inlined in the standalone page
(:func:`render_html`, the export), served by the app's own component in the app
(:mod:`app.graph_component`), so the graph draws with no internet. Positions come from
:func:`layout_positions` (a layered layout by step depth with crossings reduced, its columns
wrapped into bands to fill a canvas of :data:`LAYOUT_ASPECT`, :mod:`g2po.analysis.layout`) and
physics is off, so a graph of a few thousand nodes stays responsive. What must be read at any
zoom (the critical transitions' numbers, the start and terminal labels) is listed in the data's
``legible``; the page keeps those labels at a constant size on screen.

Log text (state keys, observations, actions) is untrusted. It reaches the page only as JSON data
(``<``, ``>``, ``&`` escaped by Jinja's ``tojson``, or a ``postMessage`` to the app's component);
canvas labels are drawn as text, and tooltips are built in the page with ``textContent``, never
parsed as HTML. A Content-Security-Policy allows exactly the page's own scripts and no network
access at all.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import pyvis
from pyvis.network import Network

from app.colors import EDGE_SCALE, diverging_colors, symmetric_limit, value_colors
from app.safe import truncate
from g2po.analysis.geometry import CW, STRAIGHT, edge_paths, edges_through_nodes, route_edges
from g2po.analysis.layout import layered_layout, wrap_bands
from g2po.analysis.state_graph import StateGraph

__all__ = [
    "Highlight",
    "DrawStyle",
    "EDGE_COLOR_MODES",
    "VALUE_SCALES",
    "layout_positions",
    "LAYOUT_ASPECTS",
    "critical_edges",
    "full_strength",
    "edge_routes",
    "QUIET_EDGE",
    "FULL_EDGES",
    "build_network",
    "network_data",
    "render_html",
    "graph_html",
    "vis_network_js",
    "node_tooltip",
    "edge_tooltip",
]

_TEMPLATES = Path(__file__).with_name("templates")
SUCCESS_COLOR = "#2ca02c"
FAILURE_COLOR = "#d62728"
TRUNCATED_COLOR = "#8c8c8c"
HIGHLIGHT_COLOR = "#ff7f0e"
FADED_NODE = "rgba(200, 200, 200, 0.35)"
FADED_EDGE = "rgba(180, 180, 180, 0.25)"
#: An edge beyond the :data:`FULL_EDGES` drawn at full strength: thin and pale until the
#: page's "All edges" button brings every edge to full strength.
QUIET_EDGE = "rgba(150, 150, 150, 0.3)"
QUIET_WIDTH = 1.0
#: The smallest label drawn, in screen pixels: vis-network skips a label whose size on screen
#: is under its ``drawThreshold`` − 1; the start, terminal and critical labels grow instead.
LABEL_MIN_PX = 10
#: At most this many edges are drawn at full strength at first (the critical transitions, then
#: the most travelled): beyond ~60 strong lines a drawing stops being read.
FULL_EDGES = 60
#: Above this many nodes labels shrink to node ids and edges hide while dragging or zooming.
LARGE_GRAPH = 300
#: Edge colour choices: name → what the legend calls it.
EDGE_COLOR_MODES = {"td": "TD error", "adv": "mean advantage A",
                    "success_share": "share of successful trajectories"}
#: Node colour scales: fitted to the group's state values, or to [0, success reward].
VALUE_SCALES = {"group": "fitted to the group", "reward": "0 to the success reward"}
#: Every edge is at least this wide, so that its colour stays visible.
MIN_EDGE_WIDTH = 2.0
#: Width / height the layout's bands aim at, one drawing each (the page draws the one
#: closest to its canvas: the app's graph, the page's width, is about 2.05 at 1280 px wide,
#: 3.65 at 1920 px; 1.35 for a narrow window), so that "Fit all" fills the canvas; the first
#: is the drawing's own node positions.
LAYOUT_ASPECTS = (2.05, 3.65, 1.35)
LAYOUT_ASPECT = LAYOUT_ASPECTS[0]
#: Self-loops: the radius of a loop, and how far a selected one reaches past its node's border
#: (past the selection ring, so that it shows).
LOOP_SIZE = 16
SELECTED_LOOP_REACH = 22
_TERMINAL_SHAPES = {"success": ("star", SUCCESS_COLOR), "failure": ("square", FAILURE_COLOR),
                    "truncated": ("triangleDown", TRUNCATED_COLOR)}


@dataclass(frozen=True)
class Highlight:
    """What to emphasise: the nodes and (source, action, target) edges of the highlighted
    trajectories (``trajectories``: their ids, when a trajectory is what is highlighted), a
    selected node and a selected edge (by its row in ``StateGraph.edges``). Empty sets draw
    everything at full colour."""

    nodes: frozenset[int] = frozenset()
    edges: frozenset[tuple[int, str, int]] = frozenset()
    node: int | None = None
    edge: int | None = None
    trajectories: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.nodes or self.edges)


@dataclass(frozen=True)
class DrawStyle:
    """How the graph is coloured.

    edge_color : a key of :data:`EDGE_COLOR_MODES`.
    value_scale : a key of :data:`VALUE_SCALES`.
    critical : how many of the largest-|TD error| edges are emphasised and numbered.
    """

    edge_color: str = "td"
    value_scale: str = "group"
    critical: int = 5

    def __post_init__(self) -> None:
        if self.edge_color not in EDGE_COLOR_MODES:
            raise ValueError(f"edge_color must be one of {', '.join(EDGE_COLOR_MODES)}")
        if self.value_scale not in VALUE_SCALES:
            raise ValueError(f"value_scale must be one of {', '.join(VALUE_SCALES)}")


@functools.cache
def vis_network_js() -> str:
    """vis-network's minified JavaScript as shipped inside the installed pyvis package."""
    lib = Path(pyvis.__file__).parent / "templates" / "lib"
    candidates = sorted(lib.glob("vis-*/vis-network.min.js"))
    if not candidates:
        raise FileNotFoundError(f"no vis-network.min.js under {lib}; is pyvis installed fully?")
    return candidates[-1].read_text(encoding="utf-8")


@functools.cache
def _template(name: str) -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(name)


def layout_positions(graph: StateGraph, aspect: float | None = LAYOUT_ASPECT) -> pd.DataFrame:
    """Node positions of :func:`g2po.analysis.layout.layered_layout` (columns by step depth,
    crossings reduced, wrapped into bands towards ``aspect``), cached by the graph's structure:
    a parameter that changes only the numbers (γ, w, the penalty) reuses the layout, and
    every aspect reuses one crossing reduction."""
    nodes, edges = graph.nodes, graph.edges
    digest = _structure_digest(graph)
    hit = _LAYOUTS.get((digest, aspect))
    if hit is None:
        base = _LAYOUTS.get((digest, None))
        if base is None:
            base = _remember((digest, None), layered_layout(nodes[["depth"]], edges[
                ["source", "target", "count"]]))
        hit = base if aspect is None else _remember((digest, aspect), wrap_bands(base, aspect))
    return hit


_LAYOUTS: dict[tuple[str, float | None], pd.DataFrame] = {}


def _structure_digest(graph: StateGraph) -> str:
    """A hash of what the drawing's geometry rests on: node ids, depths and visits, edges and
    their counts (not the values γ, w or the penalty change)."""
    nodes, edges = graph.nodes, graph.edges
    structure = hashlib.sha256()
    for array in (nodes.index.to_numpy(dtype=np.int64), nodes["depth"].to_numpy(np.int64),
                  nodes["visits"].to_numpy(np.int64),
                  edges["source"].to_numpy(np.int64), edges["target"].to_numpy(np.int64),
                  edges["count"].to_numpy(np.int64)):
        structure.update(np.ascontiguousarray(array).tobytes())
        structure.update(b"|")
    return structure.hexdigest()


def _remember(key: tuple[str, float | None], layout: pd.DataFrame) -> pd.DataFrame:
    if len(_LAYOUTS) >= 256:
        _LAYOUTS.pop(next(iter(_LAYOUTS)))
    _LAYOUTS[key] = layout
    return layout


def critical_edges(graph: StateGraph, k: int = 5) -> pd.DataFrame:
    """The ``k`` edges with the largest |TD error| (ties: more steps first, then table order),
    the transitions the globally standardised TD error singles out. Rows of ``graph.edges``
    (index kept) with a ``rank`` column 1..k; edges with a TD error of 0 are left out."""
    edges = graph.edges
    if k <= 0 or edges.empty:
        return edges.iloc[:0].assign(rank=pd.Series(dtype=np.int64))
    mag = edges["td_error"].abs().to_numpy(dtype=np.float64)
    order = np.lexsort((np.arange(len(edges)), -edges["count"].to_numpy(), -mag))
    order = [i for i in order if mag[i] > 1e-12][:k]
    return edges.iloc[order].assign(rank=np.arange(1, len(order) + 1))


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


def node_tooltip(node_id: int, row: dict, text_limit: int = 800) -> str:
    """Plain-text hover text of a node (``row``: one record of ``StateGraph.nodes``): kind,
    visits, value, value variance, the state key's distinguishing words and the observation."""
    kind = row["kind"]
    head = f"node {node_id}" + (" (start)" if row["is_start"] else "")
    if kind != "state":
        head = f"terminal: {kind}"
    lines = [
        head,
        f"visits {int(row['visits'])}   V {row['value']:.4g}   Var {row['value_var']:.4g}",
    ]
    if kind == "truncated":
        lines.append("episodes cut at the step limit; valued as failure by the estimator")
    if kind == "state":
        text = str(row.get("observation", row["label"]))
        if len(text) > text_limit:
            text = text[:text_limit] + "…"
        lines += [f"key: {row['label']}", "", text]
    return "\n".join(lines)


_ADV_NAMES = (("adv", "A"), ("adv_ep", "A^EP"), ("adv_nc", "A^NC"), ("adv_ec", "A^EC"))


def edge_tooltip(row: dict) -> str:
    """Plain-text hover text of an edge (``row``: one record of ``StateGraph.edges``):
    endpoints, action, count, TD error, success share and the mean advantages of its steps."""
    invalid = int(row["invalid"])
    lines = [
        f"node {int(row['source'])} → node {int(row['target'])}",
        f"action: {truncate(row['action'], 300)}",
        f"count {int(row['count'])}" + (f" ({invalid} invalid)" if invalid else ""),
        f"TD error {row['td_error']:.4g}",
    ]
    if "success_share" in row:
        lines.append(f"successful trajectories {row['success_share']:.0%}")
    parts = [f"{name} {row[col]:.3g}" for col, name in _ADV_NAMES if col in row]
    if parts:
        lines.append("mean " + "   ".join(parts))
    return "\n".join(lines)


def _edge_shapes(edges: pd.DataFrame) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """Per edge, the shape that keeps parallel edges, opposite edges and a node's self-loops
    apart: self-loops (one per action) of one size, fanned out over the top of their node (its
    label is below it), one angle each; and, for the other edges, the curve before routing
    (:func:`g2po.analysis.geometry.route_edges`): ``kind`` and ``roundness`` (n_edges,),
    straight for a lone edge, clockwise curves for parallel and opposite ones."""
    src = edges["source"].to_numpy(dtype=np.int64)
    dst = edges["target"].to_numpy(dtype=np.int64)
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    pair = pd.DataFrame({"lo": lo, "hi": hi, "src": src})
    pair_size = pair.groupby(["lo", "hi"])["src"].transform("size").to_numpy()
    rank = pair.groupby(["lo", "hi", "src"]).cumcount().to_numpy()
    loops = [{} for _ in range(len(edges))]
    kind = np.where((pair_size > 1) & (src != dst), CW, STRAIGHT)
    roundness = np.where(kind == CW, np.round(0.15 * (rank + 1), 3), 0.0)
    for i in np.flatnonzero(src == dst):
        loops[i] = {"selfReference": {"size": LOOP_SIZE, "angle": _loop_angle(
            int(rank[i]), int(pair_size[i])), "renderBehindTheNode": True}}
    return loops, kind, roundness


def _smooth(kind: int, roundness: float) -> dict:
    """vis-network's ``smooth`` option for one edge of the given kind and roundness."""
    if kind == STRAIGHT:
        return {"enabled": False}
    return {"enabled": True, "type": "curvedCW" if kind == CW else "curvedCCW",
            "roundness": round(float(roundness), 3)}


def _node_sizes(nodes: pd.DataFrame) -> np.ndarray:
    """(n_nodes,) a node's drawn radius: grows with the square root of its visits."""
    visits = nodes["visits"].to_numpy(dtype=np.float64)
    vmax = max(float(visits.max()) if len(visits) else 1.0, 1.0)
    return np.round(8.0 + 22.0 * np.sqrt(visits / vmax), 2)


def edge_routes(graph: StateGraph, pos: pd.DataFrame, aspect: float | None = None
                ) -> tuple[list[dict], list[bool]]:
    """Per edge of ``graph.edges``, vis-network's ``smooth`` option at the node positions
    ``pos`` (:func:`layout_positions`): edges bent around every node they would cross
    (:func:`g2po.analysis.geometry.route_edges`), self-loops ``{}`` (drawn by their own
    options); and whether each edge still crosses a node (no curve cleared it). Cached by
    the graph's structure and ``aspect`` (the drawing ``pos`` is)."""
    nodes, edges = graph.nodes, graph.edges
    key = (_structure_digest(graph) + "|routes", aspect)
    hit = _ROUTES.get(key)
    if hit is not None and len(hit[0]) == len(edges):
        return hit
    index = pd.Series(np.arange(len(nodes)), index=nodes.index)
    src = index.reindex(edges["source"].to_numpy()).to_numpy(dtype=np.int64)
    dst = index.reindex(edges["target"].to_numpy()).to_numpy(dtype=np.int64)
    _, kind, roundness = _edge_shapes(edges)
    xy = pos[["x", "y"]].to_numpy(dtype=np.float64)
    radius = _node_sizes(nodes)
    kind, roundness = route_edges(xy, radius, src, dst, kind, roundness)
    blocked = edges_through_nodes(edge_paths(xy[src], xy[dst], kind, roundness, samples=48),
                                  xy, radius, src, dst)
    out = ([{} if s == d else _smooth(int(k), float(r))
            for s, d, k, r in zip(src, dst, kind, roundness, strict=True)],
           [bool(b) for b in blocked])
    if len(_ROUTES) >= 256:
        _ROUTES.pop(next(iter(_ROUTES)))
    _ROUTES[key] = out
    return out


_ROUTES: dict[tuple[str, float | None], tuple[list[dict], list[bool]]] = {}


def _loop_angle(k: int, n: int) -> float:
    """The angle (vis: radians, counter-clockwise from the right) of a node's k-th of n
    self-loops: straight up for one, spread over the upper half for more (beyond six, all
    round)."""
    if n <= 1:
        return round(math.pi / 2, 3)
    if n > 6:
        return round(math.pi / 2 + 2 * math.pi * k / n, 3)
    spread = min(math.pi, (n - 1) * math.pi / 4)
    return round(math.pi / 2 + spread * (k / (n - 1) - 0.5), 3)


def _wrap(text: str, width: int = 20, lines: int = 2) -> str:
    """A label in at most ``lines`` lines of about ``width`` characters (``…`` when cut), so
    that labels of neighbouring columns do not run into each other."""
    out = textwrap.wrap(text, width, break_long_words=True, max_lines=lines, placeholder=" …")
    return "\n".join(out)


def _trajectory_step_adv(graph: StateGraph, trajectories: tuple[str, ...]) -> np.ndarray:
    """(n_edges,) the mean combined advantage A of the given trajectories' steps along each
    edge (NaN where none of them passes): what a highlighted trajectory's own edges show."""
    steps = graph.steps
    mine = steps[steps["traj_id"].astype(str).isin(trajectories).to_numpy()]
    if mine.empty or "adv" not in mine.columns:
        return np.full(len(graph.edges), np.nan)
    keys = pd.MultiIndex.from_arrays([mine["node"].to_numpy(), mine["action"].astype(str)
                                      .to_numpy(), mine["next_node"].to_numpy()])
    mean = pd.Series(mine["adv"].to_numpy(dtype=np.float64), index=keys).groupby(
        level=[0, 1, 2]).mean()
    edges = graph.edges
    at = pd.MultiIndex.from_arrays([edges["source"].to_numpy(), edges["action"].astype(str)
                                    .to_numpy(), edges["target"].to_numpy()])
    return mean.reindex(at).to_numpy(dtype=np.float64)


def _success_share(graph: StateGraph) -> np.ndarray:
    """(n_edges,) share of each edge's steps whose trajectory succeeded."""
    steps = graph.steps
    keys = pd.MultiIndex.from_arrays([steps["node"].to_numpy(), steps["action"].astype(str)
                                      .to_numpy(), steps["next_node"].to_numpy()])
    share = pd.Series(steps["success"].to_numpy(dtype=np.float64), index=keys).groupby(
        level=[0, 1, 2]).mean()
    edges = graph.edges
    at = pd.MultiIndex.from_arrays([edges["source"].to_numpy(), edges["action"].astype(str)
                                    .to_numpy(), edges["target"].to_numpy()])
    return share.reindex(at).to_numpy(dtype=np.float64)


def _value_range(values: np.ndarray, style: DrawStyle, success_reward: float
                 ) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if style.value_scale == "reward" or not finite.size:
        return min(0.0, float(success_reward)), max(0.0, float(success_reward))
    lo, hi = float(finite.min()), float(finite.max())
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)


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
    advantage or success share — with highlighted trajectories and the mean-advantage colour,
    their own edges show *their* steps' A, on the scale of every step's A; the largest-|TD|
    edges thicker and numbered; self-loops labelled with their count; the selected edge in the
    highlight colour (a selected self-loop reaching past its node's selection ring). Tooltips
    as plain text. Physics off, positions fixed.

    The legend's numbers travel in ``net.legend``, the ids whose labels stay legible at any
    zoom in ``net.legible`` (see :func:`network_data`)."""
    highlight = highlight or Highlight()
    style = style or DrawStyle()
    nodes, edges = graph.nodes, graph.edges
    large = len(nodes) > LARGE_GRAPH
    pos = layout_positions(graph)
    states = (nodes["kind"] == "state").to_numpy()
    values = nodes["value"].to_numpy(dtype=np.float64)
    v_lo, v_hi = _value_range(values[states], style, success_reward)
    colors = value_colors(values, v_lo, v_hi)
    sizes = _node_sizes(nodes)

    net = Network(width="100%", directed=True, cdn_resources="in_line")
    node_ids = nodes.index.to_numpy(dtype=np.int64)
    xs, ys = pos["x"].to_numpy(), pos["y"].to_numpy()
    for i, row in enumerate(nodes.to_dict("records")):
        node_id = int(node_ids[i])
        kind = row["kind"]
        faded = highlight.active and node_id not in highlight.nodes
        color = colors[i]
        shape = "dot"
        if kind in _TERMINAL_SHAPES:
            shape, color = _TERMINAL_SHAPES[kind]
        elif row["is_start"]:
            shape = "diamond"
        border = "#222222"
        width = 3 if row["is_start"] or kind != "state" else 1
        if highlight.node == node_id:
            border, width = HIGHLIGHT_COLOR, 6
        if kind == "state":
            words = str(row["label"]).strip()
            label = str(node_id) if large or not words else _wrap(f"{node_id}: {words}")
        else:
            label = kind
        net.add_node(
            node_id,
            label=label,
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

    td = edges["td_error"].to_numpy(dtype=np.float64)
    share = _success_share(graph)
    edge_name = EDGE_COLOR_MODES[style.edge_color]
    if style.edge_color == "td":
        e_values, e_limit = td, symmetric_limit(td)
        edge_colors = diverging_colors(td, e_limit, EDGE_SCALE)
        e_lo, e_hi = -e_limit, e_limit
    elif style.edge_color == "adv":
        adv = edges["adv"].to_numpy(dtype=np.float64) if "adv" in edges.columns else \
            np.zeros(len(edges))
        own = _trajectory_step_adv(graph, highlight.trajectories) if highlight.trajectories \
            else np.full(len(edges), np.nan)
        if np.isfinite(own).any():  # the trajectory's own steps, on every step's A scale
            adv = np.where(np.isfinite(own), own, adv)
            e_limit = symmetric_limit(graph.steps["adv"].to_numpy(dtype=np.float64))
            edge_name = ("A of the highlighted trajectory's own steps"
                         if len(highlight.trajectories) == 1 else
                         "A of the highlighted trajectories' own steps (mean)")
        else:
            e_limit = symmetric_limit(adv)
        edge_colors = diverging_colors(adv, e_limit, EDGE_SCALE)
        e_values, e_lo, e_hi = adv, -e_limit, e_limit
    else:
        edge_colors = diverging_colors(share - 0.5, 0.5, EDGE_SCALE)
        e_values, e_lo, e_hi = share, 0.0, 1.0
    del e_values
    counts = edges["count"].to_numpy(dtype=np.float64)
    cmax = max(float(counts.max()) if len(counts) else 1.0, 1.0)
    widths = MIN_EDGE_WIDTH + 5.0 * np.sqrt(counts / cmax)
    loops, _, _ = _edge_shapes(edges)
    routes, blocked = edge_routes(graph, pos, LAYOUT_ASPECT)
    critical = critical_edges(graph, style.critical)
    strong = full_strength(graph, critical.index, highlight)
    crit_rank = dict(zip(critical.index.tolist(), critical["rank"].tolist(), strict=True))
    src = edges["source"].to_numpy(dtype=np.int64)
    dst = edges["target"].to_numpy(dtype=np.int64)
    node_pos = {int(n): i for i, n in enumerate(node_ids)}
    records = edges.assign(success_share=share).to_dict("records")
    for i, row in enumerate(records):
        key = (int(row["source"]), str(row["action"]), int(row["target"]))
        on_path = key in highlight.edges
        faded = highlight.active and not on_path
        label_parts = []
        rank = crit_rank.get(edges.index[i])
        if rank is not None:
            label_parts.append(f"#{rank}")
        if src[i] == dst[i]:
            label_parts.append(f"×{int(row['count'])}")
        extra = {}
        if label_parts:
            extra["label"] = " ".join(label_parts)
            extra["font"] = {"size": 12, "align": "top", "strokeWidth": 3}
        width = float(widths[i]) + (3.0 if on_path else 0.0) + (4.0 if rank else 0.0)
        color = FADED_EDGE if faded else edge_colors[i]
        if not strong[i] and not faded and highlight.edge != i:
            # quiet (pale, thin; hidden where it would cross a node) until "All edges"
            extra.update(quiet=True, fullColor=color, fullWidth=round(width, 2),
                         quietColor=QUIET_EDGE, quietWidth=QUIET_WIDTH,
                         hidden=blocked[i])
            color, width = QUIET_EDGE, QUIET_WIDTH
        shape = loops[i] or ({"smooth": routes[i]} if routes[i]["enabled"] else {})
        if highlight.edge == i:  # the selected edge stands out, a self-loop past the ring
            color, width = HIGHLIGHT_COLOR, width + 2.0
            if src[i] == dst[i]:
                reach = float(sizes[node_pos[src[i]]]) + SELECTED_LOOP_REACH
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

    net.options = {
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
    net.legend = {
        "value": {"lo": v_lo, "hi": v_hi, "scale": VALUE_SCALES[style.value_scale]},
        "edge": {"lo": e_lo, "hi": e_hi, "name": edge_name},
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


def network_data(
    graph: StateGraph,
    highlight: Highlight | None = None,
    *,
    success_reward: float,
    title: str = "G2PO state graph",
    graph_id: str = "",
    style: DrawStyle | None = None,
    assumed: tuple[str, ...] = (),
) -> dict:
    """What the page draws, as JSON-ready data: ``nodes`` and ``edges`` (pyvis' records),
    vis ``options``, ``legend`` (the scales' ends and names, and ``assumed``: the notes of the
    log's assumptions the drawing's numbers rest on), ``title``, ``graph_id`` (the same
    id keeps the view on an update), ``selected`` (node and edge ids to select) and
    ``legible`` (the start and terminal nodes and the critical edges: labels kept readable at
    any zoom, and what the first view frames) and ``layouts`` (node positions, in the order of
    ``nodes``, for each of :data:`LAYOUT_ASPECTS` that wraps differently: the page draws the
    one closest to its canvas's width / height)."""
    highlight = highlight or Highlight()
    net = build_network(graph, highlight, success_reward=success_reward, style=style)
    nodes, edges, _heading, _height, _width, options = net.get_network_data()
    if isinstance(options, str):
        options = json.loads(options)
    selected = {"nodes": [] if highlight.node is None else [int(highlight.node)],
                "edges": [] if highlight.edge is None else [f"e{int(highlight.edge)}"]}
    layouts, seen = [], set()
    for aspect in LAYOUT_ASPECTS:  # one drawing per canvas shape, each wrap once
        pos = layout_positions(graph, aspect)
        xs = [round(float(v), 1) for v in pos["x"]]
        ys = [round(float(v), 1) for v in pos["y"]]
        key = (tuple(xs), tuple(ys))
        if key not in seen:
            seen.add(key)
            smooth, blocked = edge_routes(graph, pos, aspect)
            layouts.append({"aspect": aspect, "x": xs, "y": ys, "smooth": smooth,
                            "blocked": blocked})
    return {"nodes": nodes, "edges": edges, "options": options, "title": title,
            "graph_id": graph_id, "legend": {**net.legend, "assumed": list(assumed)},
            "selected": selected, "legible": net.legible, "layouts": layouts}


def render_html(data: dict, *, height: str = "620px", legend: bool = True) -> str:
    """``data`` (see :func:`network_data`) as one standalone HTML page: vis-network inlined,
    no external request, a Content-Security-Policy that runs exactly its three scripts."""
    init_js = ("(function () {\n  \"use strict\";\n  window.G2POGraph.draw("
               "document.getElementById(\"g2po-graph\"), "
               + _template("graph_init.js").render(data=data).strip() + ");\n})();\n")
    vis_js, core_js = vis_network_js(), _asset("graph_core.js")
    return _template("graph.html").render(
        title=data.get("title", "G2PO state graph"),
        css=_asset("graph.css"),
        vis_js=vis_js,
        core_js=core_js,
        init_js=init_js,
        script_hashes=" ".join(_csp_hash(js) for js in (vis_js, core_js, init_js)),
        height=height,
        legend=legend,
    )


def _csp_hash(script: str) -> str:
    """The CSP source allowing exactly this inline script: the page runs its own scripts and
    nothing else, so an injected script or event handler could not run even if it got in."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


@functools.cache
def _asset(name: str) -> str:
    return (_TEMPLATES / name).read_text(encoding="utf-8")


def graph_html(
    graph: StateGraph,
    highlight: Highlight | None = None,
    *,
    height: str = "620px",
    success_reward: float,
    title: str = "G2PO state graph",
    style: DrawStyle | None = None,
) -> str:
    """The drawn graph as one standalone HTML string (the export; opens offline)."""
    data = network_data(graph, highlight, success_reward=success_reward, title=title,
                        style=style)
    return render_html(data, height=height)
