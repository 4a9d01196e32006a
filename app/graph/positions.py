"""Where the state graph's nodes are drawn and how its edges run: the layered layout wrapped
to a canvas's shape (:mod:`g2po.analysis.layout`), the edges' shapes (straight, curved apart
from their parallel and opposite edges, self-loops fanned over their node) and their routes
around the nodes in their way (:mod:`g2po.analysis.geometry`).

Both are cached by the graph's structure (node ids, depths, visits, edges and counts): a change
of γ, w or the penalty changes only the numbers and reuses them.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd

from app.graph.style import LOOP_SIZE
from g2po.analysis.geometry import CW, STRAIGHT, edge_paths, edges_through_nodes, route_edges
from g2po.analysis.layout import layered_layout, wrap_bands
from g2po.analysis.state_graph import StateGraph

__all__ = ["layout_positions", "edge_routes", "edge_shapes", "node_sizes", "LAYOUT_ASPECTS",
           "LAYOUT_ASPECT"]

#: Width / height the layout's bands aim at, one drawing each (the page draws the one
#: closest to its canvas: the app's graph, the page's width, is about 2.05 at 1280 px wide,
#: 3.65 at 1920 px; 1.35 for a narrow window), so that "Fit all" fills the canvas; the first
#: is the drawing's own node positions.
LAYOUT_ASPECTS = (2.05, 3.65, 1.35)
LAYOUT_ASPECT = LAYOUT_ASPECTS[0]
#: At most this many layouts (and as many edge routings) are kept.
_CACHE_SIZE = 256


def layout_positions(graph: StateGraph, aspect: float | None = LAYOUT_ASPECT) -> pd.DataFrame:
    """Node positions of :func:`g2po.analysis.layout.layered_layout` (columns by step depth,
    crossings reduced, wrapped into bands towards ``aspect``, the terminals' column right of
    every band), cached by the graph's structure:
    a parameter that changes only the numbers (γ, w, the penalty) reuses the layout, and
    every aspect reuses one crossing reduction."""
    nodes, edges = graph.nodes, graph.edges
    digest = _structure_digest(graph)
    hit = _LAYOUTS.get((digest, aspect))
    if hit is None:
        base = _LAYOUTS.get((digest, None))
        if base is None:
            base = _remember(_LAYOUTS, (digest, None), layered_layout(nodes[["depth"]], edges[
                ["source", "target", "count"]]))
        # the terminals (one past the deepest step: the last column) right of every band
        terminals = bool((nodes["kind"] != "state").any())
        hit = base if aspect is None else _remember(
            _LAYOUTS, (digest, aspect), wrap_bands(base, aspect, last_apart=terminals))
    return hit


_LAYOUTS: dict[tuple[str, float | None], pd.DataFrame] = {}
_ROUTES: dict[tuple[str, float | None], tuple[list[dict], list[bool]]] = {}


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


def _remember(cache: dict, key: tuple[str, float | None], value):
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def node_sizes(nodes: pd.DataFrame) -> np.ndarray:
    """(n_nodes,) a node's drawn radius: grows with the square root of its visits."""
    visits = nodes["visits"].to_numpy(dtype=np.float64)
    vmax = max(float(visits.max()) if len(visits) else 1.0, 1.0)
    return np.round(8.0 + 22.0 * np.sqrt(visits / vmax), 2)


def edge_shapes(edges: pd.DataFrame) -> tuple[list[dict], np.ndarray, np.ndarray]:
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


def _smooth(kind: int, roundness: float) -> dict:
    """vis-network's ``smooth`` option for one edge of the given kind and roundness."""
    if kind == STRAIGHT:
        return {"enabled": False}
    return {"enabled": True, "type": "curvedCW" if kind == CW else "curvedCCW",
            "roundness": round(float(roundness), 3)}


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
    _, kind, roundness = edge_shapes(edges)
    xy = pos[["x", "y"]].to_numpy(dtype=np.float64)
    radius = node_sizes(nodes)
    kind, roundness = route_edges(xy, radius, src, dst, kind, roundness)
    blocked = edges_through_nodes(edge_paths(xy[src], xy[dst], kind, roundness, samples=48),
                                  xy, radius, src, dst)
    out = ([{} if s == d else _smooth(int(k), float(r))
            for s, d, k, r in zip(src, dst, kind, roundness, strict=True)],
           [bool(b) for b in blocked])
    return _remember(_ROUTES, key, out)
