"""A layered (Sugiyama-style) drawing of a state graph: one column per step depth, node order
inside each column chosen to reduce edge crossings.

The layering is given by the domain (a node's depth is the first step index it is seen at), so
of Sugiyama's steps only crossing reduction and coordinate assignment are left. Crossings are
reduced by alternating barycentre sweeps (left to right, then right to left) over every edge,
long and backward edges included, keeping the order with the fewest crossings between adjacent
columns. Given an ``aspect`` (the canvas's width / height), columns are wrapped into bands, one
below the other, read left to right like lines of text, so that a long episode's drawing fills
a screen instead of a thin strip; without one the drawing is as long as the episodes are deep.

Vectorised with numpy (one pass per column per sweep), so a 2,000-node graph lays out in a few
hundredths of a second. grandalf (the Python Sugiyama library) was measured first: it did not
finish a 242-node, 4,500-edge group in 300 s, which rules it out for the app.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["layered_layout", "wrap_bands", "count_crossings", "columns_per_band", "BAND_GAP"]


def _columns(depth: np.ndarray) -> np.ndarray:
    _, column = np.unique(depth, return_inverse=True)
    return column.ravel().astype(np.int64)


def _rank_within(column: np.ndarray, key: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """Position of each node inside its column when sorted by (key, tie)."""
    order = np.lexsort((tie, key, column))
    rank = np.empty(len(column), dtype=np.float64)
    starts = np.searchsorted(column[order], column[order], side="left")
    rank[order] = np.arange(len(order)) - starts
    return rank


def count_crossings(column: np.ndarray, rank: np.ndarray, src: np.ndarray,
                    dst: np.ndarray) -> int:
    """Crossings between edges that join adjacent columns (the quantity Sugiyama minimises).

    ``column``, ``rank`` (n_nodes,): a node's column and position inside it; ``src``, ``dst``
    (n_edges,): positional node indices of each edge (direction does not matter).
    """
    a, b = np.minimum(column[src], column[dst]), np.maximum(column[src], column[dst])
    lo = np.where(column[src] <= column[dst], src, dst)
    hi = np.where(column[src] <= column[dst], dst, src)
    adjacent = b == a + 1
    total = 0
    for c in np.unique(a[adjacent]):
        sel = adjacent & (a == c)
        u, v = rank[lo[sel]], rank[hi[sel]]
        du = u[:, None] - u[None, :]
        dv = v[:, None] - v[None, :]
        total += int(np.count_nonzero(du * dv < 0)) // 2
    return total


def _sweep(column: np.ndarray, rank: np.ndarray, src: np.ndarray, dst: np.ndarray,
           weight: np.ndarray, ids: np.ndarray, n_cols: int, forward: bool) -> np.ndarray:
    """One barycentre sweep: each column, in turn, is reordered by the mean position of its
    neighbours in the columns already visited in this sweep (weighted by transition count)."""
    n = len(column)
    # both directions of every edge: a node's neighbours are its predecessors and successors
    a = np.concatenate([src, dst])
    b = np.concatenate([dst, src])
    w = np.concatenate([weight, weight])
    rank = rank.copy()
    sizes = np.bincount(column, minlength=n_cols).astype(np.float64)
    centred = rank - (sizes[column] - 1) / 2.0
    cols = range(n_cols) if forward else range(n_cols - 1, -1, -1)
    for c in cols:
        into = (column[a] == c) & ((column[b] < c) if forward else (column[b] > c))
        members = column == c
        bary = centred.copy()
        if into.any():
            sums = np.bincount(a[into], weights=w[into] * centred[b[into]], minlength=n)
            total = np.bincount(a[into], weights=w[into], minlength=n)
            has = total > 0
            bary[has] = sums[has] / total[has]
        idx = np.flatnonzero(members)
        order = idx[np.lexsort((ids[idx], centred[idx], bary[idx]))]
        rank[order] = np.arange(len(order))
        centred[order] = rank[order] - (len(order) - 1) / 2.0
    return rank


def layered_layout(
    nodes: pd.DataFrame,
    edges: pd.DataFrame,
    *,
    dx: float = 210.0,
    dy: float = 95.0,
    sweeps: int = 4,
    aspect: float | None = None,
) -> pd.DataFrame:
    """Node positions of a layered drawing, left to right by depth.

    Parameters
    ----------
    nodes : frame indexed by node id with an int ``depth`` column (a state graph's nodes).
    edges : frame with int ``source``, ``target`` and ``count`` columns (self-loops ignored).
    dx, dy : distance between columns and between nodes of one column.
    sweeps : number of left-right + right-left barycentre sweep pairs.
    aspect : width / height the drawing should come close to, by wrapping its columns into
        bands (:func:`columns_per_band`); None keeps one band.

    Returns
    -------
    pandas.DataFrame
        Indexed like ``nodes``: float ``x``, ``y`` (each column centred on its band's middle,
        the first band's at y = 0), int ``column`` (rank of the node's depth), ``rank``
        (position inside the column) and ``band`` (the row of columns it is drawn in).

    Examples
    --------
    >>> import pandas as pd
    >>> nodes = pd.DataFrame({"depth": [0, 1, 1, 2]})
    >>> edges = pd.DataFrame({"source": [0, 0, 1, 2], "target": [1, 2, 3, 3], "count": 1})
    >>> layered_layout(nodes, edges)["column"].tolist()
    [0, 1, 1, 2]
    """
    ids = nodes.index.to_numpy(dtype=np.int64)
    n = len(ids)
    if n == 0:
        return pd.DataFrame({"x": [], "y": [], "column": [], "rank": [], "band": []},
                            index=nodes.index)
    column = _columns(nodes["depth"].to_numpy(dtype=np.int64))
    n_cols = int(column.max()) + 1
    pos_of = pd.Series(np.arange(n), index=ids)
    src = pos_of.reindex(edges["source"].to_numpy(dtype=np.int64)).to_numpy()
    dst = pos_of.reindex(edges["target"].to_numpy(dtype=np.int64)).to_numpy()
    weight = edges["count"].to_numpy(dtype=np.float64)
    keep = (src != dst) & ~np.isnan(src.astype(float)) & ~np.isnan(dst.astype(float))
    src, dst, weight = src[keep].astype(np.int64), dst[keep].astype(np.int64), weight[keep]
    # parallel edges (other actions between the same nodes) add their weight once
    pairs = pd.DataFrame({"s": src, "d": dst, "w": weight}).groupby(["s", "d"], sort=True)["w"]
    summed = pairs.sum()
    src = summed.index.get_level_values(0).to_numpy(dtype=np.int64)
    dst = summed.index.get_level_values(1).to_numpy(dtype=np.int64)
    weight = summed.to_numpy(dtype=np.float64)

    rank = _rank_within(column, np.zeros(n), ids)  # first-seen order (node ids)
    best, best_cross = rank, count_crossings(column, rank, src, dst)
    for _ in range(sweeps):
        for forward in (True, False):
            if best_cross == 0:
                break
            rank = _sweep(column, rank, src, dst, weight, ids, n_cols, forward)
            cross = count_crossings(column, rank, src, dst)
            if cross < best_cross:
                best, best_cross = rank, cross
    layout = pd.DataFrame({"x": 0.0, "y": 0.0, "column": column,
                           "rank": best.astype(np.int64), "band": 0}, index=nodes.index)
    return wrap_bands(layout, aspect, dx=dx, dy=dy)


def wrap_bands(layout: pd.DataFrame, aspect: float | None, *, dx: float = 210.0,
               dy: float = 95.0, last_apart: bool = False) -> pd.DataFrame:
    """The positions of a layered layout (its ``column`` and ``rank``, as
    :func:`layered_layout` returns them) with its columns wrapped into bands towards
    ``aspect`` (None: one band); the node order is kept, so one crossing reduction serves
    every canvas. Where the bands are still narrower than ``aspect``, the columns are drawn
    further apart (up to :data:`MAX_STRETCH` × ``dx``). With ``last_apart``, the last column
    (a state graph's terminals, one past the deepest step) is not wrapped: it stands right of
    every band, centred on their height (its nodes up to two rows apart, room for their
    labels), a band of its own (the last), so every band's edges into it run to the right.
    Returns a new frame with ``x``, ``y`` and ``band`` set."""
    out = layout.copy()
    if out.empty:
        return out
    column = out["column"].to_numpy(dtype=np.int64)
    rank = out["rank"].to_numpy(dtype=np.float64)
    n_cols = int(column.max()) + 1
    sizes = np.bincount(column, minlength=n_cols).astype(np.int64)
    apart = bool(last_apart and n_cols > 1)
    wrapped = n_cols - 1 if apart else n_cols  # the columns that wrap into bands
    per_band = wrapped
    if aspect is not None:
        per_band = columns_per_band(sizes[:wrapped], aspect, dx, dy)
        if apart:  # the last column stands beside the bands: aim them that much narrower
            per_band = columns_per_band(sizes[:wrapped], aspect * per_band / (per_band + 1),
                                        dx, dy)
    band_of = np.arange(n_cols) // per_band
    rows = np.zeros(int(band_of[wrapped - 1]) + 1, dtype=np.int64)
    np.maximum.at(rows, band_of[:wrapped], sizes[:wrapped])
    # each band's middle: bands stacked top to bottom, a gap of BAND_GAP rows between them
    extent = (rows - 1 + BAND_GAP) * dy
    middle = np.concatenate([[0.0], np.cumsum((extent[:-1] + extent[1:]) / 2.0)])
    across = min(per_band, wrapped)  # columns across the widest band
    if apart:  # the last column: right of the bands, at the middle of their height
        band_of[-1] = len(rows)
        top, bottom = -(rows[0] - 1) * dy / 2.0, middle[-1] + (rows[-1] - 1) * dy / 2.0
        middle = np.append(middle, (top + bottom) / 2.0)
    band = band_of[column]
    step = np.full(n_cols, dy)
    if apart:  # the terminals two rows apart where the bands are tall enough: room for labels
        k = int(sizes[-1])
        step[-1] = float(np.clip((bottom - top) / max(k - 1, 1), dy, 2 * dy))
    stretch = 1.0
    if aspect is not None and np.isfinite(aspect) and aspect > 0:
        # a canvas wider than the bands: columns further apart (room for labels and curves)
        width = (across + apart) * dx
        height = (rows.sum() + BAND_GAP * (len(rows) - 1)) * dy
        stretch = float(np.clip(aspect / (width / height), 1.0, MAX_STRETCH))
    slot = np.where(band_of == len(rows), across, np.arange(n_cols) % per_band)
    out["x"] = slot[column].astype(np.float64) * dx * stretch
    out["y"] = middle[band] + (rank - (sizes[column] - 1) / 2.0) * step[column]
    out["band"] = band.astype(np.int64)
    return out


#: Empty rows between two bands of a wrapped drawing (so that bands read apart).
BAND_GAP = 1.5
#: How much wider than ``dx`` columns may be drawn apart to fill a canvas wider than the bands.
MAX_STRETCH = 1.6


def columns_per_band(sizes: np.ndarray, aspect: float, dx: float = 210.0,
                     dy: float = 95.0) -> int:
    """How many columns one band of a wrapped drawing holds, so that the drawing's width /
    height (one column and one row of margin added for labels) comes closest to ``aspect``;
    among equals, the fewest bands. Bands are balanced (the last one is never a stub of a
    column or two, such as the terminals' column alone).

    ``sizes`` (n_columns,): the number of nodes in each column.

    Examples
    --------
    >>> columns_per_band([1] * 10, aspect=2.0)
    4
    >>> columns_per_band([3, 3], aspect=2.0)
    2
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n_cols = len(sizes)
    if n_cols == 0 or not np.isfinite(aspect) or aspect <= 0:
        return max(n_cols, 1)
    best, best_miss = n_cols, np.inf
    for n_bands in range(1, n_cols + 1):  # fewest bands first: ties keep them
        k = -(-n_cols // n_bands)
        band_of = np.arange(n_cols) // k
        rows = np.zeros(int(band_of[-1]) + 1, dtype=np.int64)
        np.maximum.at(rows, band_of, sizes)
        width = min(k, n_cols) * dx
        height = (rows.sum() + BAND_GAP * (len(rows) - 1)) * dy
        miss = abs(np.log(width / height / aspect))
        if miss < best_miss - 1e-9:
            best, best_miss = k, miss
    return best
