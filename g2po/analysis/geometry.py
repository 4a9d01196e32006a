"""The geometry of a drawn state graph: the path of each edge as vis-network draws it, the
checks that say whether a drawing can be read (edges through nodes they do not touch,
overlapping nodes), and the routing that bends edges around the nodes in their way.

One set of functions serves the app (which routes with them), the layout benchmark and the
browser tests (which check, with them, the positions and paths the page reports back), so what
is measured is what is drawn.

Edges are drawn straight, or as vis-network's ``curvedCW`` / ``curvedCCW`` smooth types: a
quadratic Bézier curve whose control point vis-network places by the formula replicated in
:func:`control_points` (vis-network 9.1, ``BezierEdgeStatic._getViaCoordinates``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DrawingCheck", "check_drawing", "ViewCheck", "check_view", "to_screen", "STRAIGHT",
           "CW", "CCW", "ROUNDNESS_STEPS", "control_points", "edge_paths",
           "edges_through_nodes", "overlapping_nodes", "route_edges"]

#: Edge kinds: a straight line, vis-network's ``curvedCW`` and ``curvedCCW`` curves.
STRAIGHT, CW, CCW = 0, 1, 2
#: The roundness values tried, gentlest first, when an edge must bend around a node (past 1,
#: vis-network's curve swings wide: a long edge then arcs over a band of nodes).
ROUNDNESS_STEPS = (0.04, 0.08, 0.15, 0.25, 0.35, 0.5, 0.65, 0.8, 1.0, 1.25, 1.6, 2.0)
#: Points per curve when routing (the checks of a drawing use more): enough to follow a curve
#: of roundness up to 2 within a few canvas units.
ROUTE_SAMPLES = 14
#: Room (canvas units) kept between an edge and a node it does not touch.
CLEARANCE = 4.0
#: The room routing asks for, more than the checks do: a curve followed at
#: :data:`ROUTE_SAMPLES` points may come a few units closer between them.
ROUTE_CLEARANCE = 10.0
#: What a curve that swings out of the drawing costs, in nodes crossed: any curve inside it
#: that clears every node wins, and crossing one node costs more than swinging out (a
#: cost of 1.5 was tried: more edges crossed nodes, and arcs were no shorter).
OUTSIDE_COST = 0.5
#: What sharing its curve with another edge between the same two nodes costs (they are drawn
#: over each other), in nodes crossed: less than one, so two actions from the end of one band
#: to the start of the next (no second clear curve across the drawing) share one path
#: instead of one of them running through a node.
SHARED_COST = 0.75


def control_points(start: np.ndarray, end: np.ndarray, kind: np.ndarray,
                   roundness: np.ndarray) -> np.ndarray:
    """(n_edges, 2) the control point of each edge's quadratic curve, as vis-network computes
    it (the chord's middle for a straight edge).

    ``start``, ``end`` (n_edges, 2): the end points; ``kind`` (n_edges,): :data:`STRAIGHT`,
    :data:`CW` or :data:`CCW`; ``roundness`` (n_edges,): vis-network's ``smooth.roundness``.

    Examples
    --------
    >>> import numpy as np
    >>> control_points(np.array([[0.0, 0.0]]), np.array([[10.0, 0.0]]), np.array([0]),
    ...                np.array([0.0])).tolist()
    [[5.0, 0.0]]
    """
    start, end = np.asarray(start, float), np.asarray(end, float)
    kind, roundness = np.asarray(kind), np.asarray(roundness, float)
    dx = end[:, 0] - start[:, 0]
    dy_up = start[:, 1] - end[:, 1]  # vis measures the angle with y pointing up
    length = np.hypot(dx, dy_up)
    reach = 0.5 * roundness + 0.5
    turn = np.where(kind == CCW, 0.5 * -roundness + 0.5, reach) * np.pi
    angle = np.mod(np.arctan2(dy_up, dx) + turn, 2 * np.pi)
    via = np.stack([start[:, 0] + reach * length * np.sin(angle),
                    start[:, 1] + reach * length * np.cos(angle)], axis=1)
    middle = (start + end) / 2.0
    return np.where((kind == STRAIGHT)[:, None], middle, via)


def edge_paths(start: np.ndarray, end: np.ndarray, kind: np.ndarray, roundness: np.ndarray,
               samples: int = 24) -> np.ndarray:
    """(n_edges, samples, 2) points along each edge, end points included (see
    :func:`control_points` for the arguments)."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    via = control_points(start, end, kind, roundness)
    t = np.linspace(0.0, 1.0, samples)[None, :, None]
    return ((1 - t) ** 2 * start[:, None, :] + 2 * t * (1 - t) * via[:, None, :]
            + t ** 2 * end[:, None, :])


def _segment_distance(paths: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(n_paths, n_points) float32: the distance from each point to each polyline."""
    paths = np.asarray(paths, np.float32)
    points = np.asarray(points, np.float32)
    a = paths[:, :-1, :]  # (E, S-1, 2)
    ab = paths[:, 1:, :] - a
    denom = np.maximum((ab ** 2).sum(-1), np.float32(1e-12))  # (E, S-1)
    out = np.empty((len(paths), len(points)), dtype=np.float32)
    # chunks of paths and points keep the (E, S-1, P) arrays near a million elements
    step_p = max(1, min(len(points), 256))
    step_e = max(1, 1_000_000 // (max(a.shape[1], 1) * step_p))
    for i in range(0, len(paths), step_e):
        ax, ay = a[i:i + step_e, :, None, 0], a[i:i + step_e, :, None, 1]
        bx, by = ab[i:i + step_e, :, None, 0], ab[i:i + step_e, :, None, 1]
        di = denom[i:i + step_e, :, None]
        for j in range(0, len(points), step_p):
            px, py = points[None, None, j:j + step_p, 0], points[None, None, j:j + step_p, 1]
            apx, apy = px - ax, py - ay  # (e, S-1, P)
            t = np.clip((apx * bx + apy * by) / di, 0.0, 1.0)
            dx, dy = apx - t * bx, apy - t * by
            out[i:i + step_e, j:j + step_p] = (dx * dx + dy * dy).min(axis=1)
    return np.sqrt(out)


def edges_through_nodes(paths: np.ndarray, xy: np.ndarray, radius: np.ndarray,
                        src: np.ndarray, dst: np.ndarray,
                        clearance: float = CLEARANCE) -> np.ndarray:
    """(n_edges,) bool: whether an edge's path passes within ``clearance`` of a node other
    than its own two ends (the defect that makes "a → b" read "a → c → b").

    ``paths`` (n_edges, samples, 2) from :func:`edge_paths` (or read back from the page);
    ``xy`` (n_nodes, 2) node centres; ``radius`` (n_nodes,) node radii; ``src``, ``dst``
    (n_edges,) positional node indices of each edge's ends. Self-loops are never counted.

    Examples
    --------
    >>> import numpy as np
    >>> xy = np.array([[0.0, 0.0], [100.0, 0.0], [200.0, 0.0]])
    >>> paths = edge_paths(xy[[0]], xy[[2]], np.array([0]), np.array([0.0]))
    >>> edges_through_nodes(paths, xy, np.full(3, 10.0), np.array([0]), np.array([2])).tolist()
    [True]
    """
    paths = np.asarray(paths, float)
    xy, radius = np.asarray(xy, float), np.asarray(radius, float)
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if len(paths) == 0 or len(xy) == 0:
        return np.zeros(len(paths), dtype=bool)
    dist = _segment_distance(paths, xy)
    hit = dist < (radius + clearance)[None, :]
    rows = np.arange(len(paths))
    hit[rows, src] = False
    hit[rows, dst] = False
    return hit.any(axis=1) & (src != dst)


def overlapping_nodes(xy: np.ndarray, radius: np.ndarray) -> int:
    """How many pairs of nodes overlap (their discs intersect).

    Examples
    --------
    >>> import numpy as np
    >>> overlapping_nodes(np.array([[0.0, 0.0], [15.0, 0.0], [90.0, 0.0]]), np.full(3, 10.0))
    1
    """
    xy, radius = np.asarray(xy, float), np.asarray(radius, float)
    d = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1])
    close = d < radius[:, None] + radius[None, :]
    return int(np.triu(close, k=1).sum())


def route_edges(xy: np.ndarray, radius: np.ndarray, src: np.ndarray, dst: np.ndarray,
                kind: np.ndarray, roundness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bend the edges that pass through a node they do not touch: each such edge takes the
    gentlest curve (either side, roundness from :data:`ROUNDNESS_STEPS`) that clears every
    node, keeps apart from the other edges between the same two nodes (sharing a curve with
    one costs :data:`SHARED_COST` crossed nodes) and stays within the drawing (a curve
    swinging past it costs :data:`OUTSIDE_COST`); where none clears, the one through the
    fewest nodes. Returns the new ``(kind, roundness)``; edges that were
    clear keep theirs.

    Arguments as :func:`edges_through_nodes`; ``kind``, ``roundness`` (n_edges,): each edge's
    shape before routing (straight, or the curve that keeps parallel edges apart).

    Examples
    --------
    >>> import numpy as np
    >>> xy = np.array([[0.0, 0.0], [100.0, 0.0], [200.0, 0.0]])
    >>> kind, rnd = route_edges(xy, np.full(3, 10.0), np.array([0]), np.array([2]),
    ...                         np.array([0]), np.array([0.0]))
    >>> int(kind[0]) != 0 and bool(rnd[0] > 0)
    True
    """
    xy, radius = np.asarray(xy, float), np.asarray(radius, float)
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    kind, roundness = np.asarray(kind).copy(), np.asarray(roundness, float).copy()
    if len(src) == 0:
        return kind, roundness
    start, end = xy[src], xy[dst]
    paths = edge_paths(start, end, kind, roundness, samples=ROUTE_SAMPLES)
    bad = np.flatnonzero(edges_through_nodes(paths, xy, radius, src, dst, ROUTE_CLEARANCE))
    if not len(bad):
        return kind, roundness
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    mid = paths.shape[1] // 2
    middles = paths[:, mid, :].copy()
    pair_size = np.unique(np.stack([lo, hi]), axis=1, return_inverse=True,
                          return_counts=True)
    shared = pair_size[2][pair_size[1].ravel()] > 1  # edges with a sibling try every curve
    hits, c_mid = _candidate_hits(start[bad], end[bad], src[bad], dst[bad], xy, radius,
                                  paths.shape[1], shared[bad])
    c_kind = np.tile([CW, CCW], len(ROUNDNESS_STEPS))
    c_round = np.repeat(ROUNDNESS_STEPS, 2)
    # a curve swinging past the drawing (beyond its nodes, plus a margin) leaves the view
    # that shows the whole graph: among the curves that clear every node, one inside wins
    margin = 2.0 * float(radius.max()) + 40.0
    box_lo, box_hi = xy.min(axis=0) - margin, xy.max(axis=0) + margin
    outside = ((c_mid < box_lo) | (c_mid > box_hi)).any(axis=-1)  # (n_bad, n_candidates)
    for row, e in enumerate(bad):
        cost = hits[row].astype(np.float64) + OUTSIDE_COST * outside[row]
        siblings = np.flatnonzero((lo == lo[e]) & (hi == hi[e]) & (np.arange(len(src)) != e))
        if len(siblings):  # two edges of one pair share a curve only rather than cross a node
            apart = np.hypot(*(c_mid[row][:, None, :] - middles[None, siblings, :])
                             .transpose(2, 0, 1))
            cost += SHARED_COST * (apart < 12.0).any(axis=1)
        best = int(np.argmin(cost))  # first of the cheapest: the gentlest curve
        kind[e], roundness[e] = c_kind[best], c_round[best]
        middles[e] = c_mid[row, best]
    return kind, roundness


def _candidate_hits(start: np.ndarray, end: np.ndarray, src: np.ndarray, dst: np.ndarray,
                    xy: np.ndarray, radius: np.ndarray, samples: int, every: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """For each edge (its ends ``start``, ``end``, (n, 2)) and each candidate curve (both
    sides, each of :data:`ROUNDNESS_STEPS`, in that order): how many nodes it crosses,
    (n, n_candidates), and its middle point, (n, n_candidates, 2). Gentle curves are tried
    first; wider ones only for the edges no gentler one clears (fewer curves to check), and
    for those marked in ``every`` (n,) bool (whose clear curve another edge may take)."""
    c_kind = np.tile([CW, CCW], len(ROUNDNESS_STEPS))
    c_round = np.repeat(ROUNDNESS_STEPS, 2)
    n, n_c = len(start), len(c_kind)
    hits = np.full((n, n_c), 10 ** 6, dtype=np.int64)  # not tried: never the cheapest
    mids = np.zeros((n, n_c, 2))
    todo = np.arange(n)
    for stage in np.array_split(np.arange(n_c), 3):
        if not len(todo):
            break
        k = len(stage)
        paths = edge_paths(np.repeat(start[todo], k, 0), np.repeat(end[todo], k, 0),
                           np.tile(c_kind[stage], len(todo)), np.tile(c_round[stage], len(todo)),
                           samples=samples)
        near = _segment_distance(paths, xy) < (radius + ROUTE_CLEARANCE)[None, :]
        rows = np.arange(len(near))
        near[rows, np.repeat(src[todo], k)] = False
        near[rows, np.repeat(dst[todo], k)] = False
        hits[np.ix_(todo, stage)] = near.sum(axis=1).reshape(len(todo), k)
        mids[np.ix_(todo, stage)] = paths[:, samples // 2, :].reshape(len(todo), k, 2)
        todo = todo[(hits[todo][:, stage] > 0).all(axis=1) | every[todo]]
    return hits, mids


@dataclass(frozen=True)
class DrawingCheck:
    """How readable a drawing is, from what the page drew (:func:`check_drawing`).

    edges_through_nodes : edges whose path crosses a node they do not touch.
    overlapping_nodes : pairs of nodes whose discs intersect.
    smallest_label_px : the smallest label drawn, in screen pixels (inf when none is drawn).
    labels_drawn, labels_hidden : labels drawn, and labels too small to draw (shown on hover).
    full_strength : edges drawn at full strength (the others pale and thin).
    edges : edges in all.
    through : ids of the edges through nodes (for the message of a failing check).
    """

    edges_through_nodes: int
    overlapping_nodes: int
    smallest_label_px: float
    labels_drawn: int
    labels_hidden: int
    full_strength: int
    edges: int
    through: tuple[str, ...] = ()


def check_drawing(geometry: dict) -> DrawingCheck:
    """Check a drawing as the page reports it (``window.g2po.geometry()``): ``nodes`` (``id``,
    ``x``, ``y``, ``r``, ``labelPx``, ``hasLabel``) and ``edges`` (``id``, ``from``, ``to``,
    ``points``: the sampled path, ``strong``, ``labelPx``, ``hidden``), in canvas units; a
    hidden edge is not drawn, so it crosses nothing.

    Examples
    --------
    >>> g = {"nodes": [{"id": 0, "x": 0, "y": 0, "r": 10, "labelPx": 14, "hasLabel": True},
    ...                {"id": 1, "x": 100, "y": 0, "r": 10, "labelPx": 0, "hasLabel": True},
    ...                {"id": 2, "x": 200, "y": 0, "r": 10, "labelPx": 12, "hasLabel": True}],
    ...      "edges": [{"id": "e0", "from": 0, "to": 2, "points": [[0, 0], [200, 0]],
    ...                 "strong": True, "labelPx": 0}]}
    >>> c = check_drawing(g)
    >>> (c.edges_through_nodes, c.smallest_label_px, c.labels_hidden)
    (1, 12.0, 1)
    """
    nodes, edges = geometry["nodes"], geometry["edges"]
    index = {n["id"]: i for i, n in enumerate(nodes)}
    xy = np.array([[n["x"], n["y"]] for n in nodes], dtype=float).reshape(-1, 2)
    radius = np.array([n["r"] for n in nodes], dtype=float)
    drawn = [e for e in edges if len(e["points"]) >= 2 and e["from"] != e["to"]
             and not e.get("hidden")]
    through: tuple[str, ...] = ()
    if drawn:
        samples = max(len(e["points"]) for e in drawn)
        paths = np.stack([_resample(np.asarray(e["points"], float), samples) for e in drawn])
        src = np.array([index[e["from"]] for e in drawn])
        dst = np.array([index[e["to"]] for e in drawn])
        hit = edges_through_nodes(paths, xy, radius, src, dst)
        through = tuple(str(e["id"]) for e, h in zip(drawn, hit, strict=True) if h)
    sizes = [float(x["labelPx"]) for x in list(nodes) + list(edges) if x.get("labelPx")]
    hidden = sum(1 for n in nodes if n.get("hasLabel") and not n.get("labelPx"))
    return DrawingCheck(
        edges_through_nodes=len(through),
        overlapping_nodes=overlapping_nodes(xy, radius) if len(xy) else 0,
        smallest_label_px=min(sizes) if sizes else float("inf"),
        labels_drawn=len(sizes), labels_hidden=hidden,
        full_strength=sum(1 for e in edges if e.get("strong", True) and not e.get("hidden")),
        edges=len(edges),
        through=through)


def _resample(points: np.ndarray, samples: int) -> np.ndarray:
    """A polyline of ``samples`` points (the page samples every edge alike; this only evens
    out a path given with fewer points)."""
    if len(points) == samples:
        return points
    t = np.linspace(0.0, 1.0, len(points))
    u = np.linspace(0.0, 1.0, samples)
    return np.stack([np.interp(u, t, points[:, 0]), np.interp(u, t, points[:, 1])], axis=1)


#: Node shapes of the terminals (success, failure, truncated), as the page draws them.
TERMINAL_SHAPES = ("star", "square", "triangleDown")


@dataclass(frozen=True)
class ViewCheck:
    """What a view of a drawing shows, from what the page drew (:func:`check_view`).

    nodes_inside, nodes : nodes whose centre is inside the canvas, and nodes in all.
    terminals_inside, terminals : the same for the terminal nodes.
    critical_labels, labels_on_own_edge : the critical transitions' numbers drawn, and those
        that sit on their own edge clear of every node and of every other label.
    critical_arcs, critical_arcs_inside : critical transitions with both ends inside the
        canvas, and those whose whole drawn path is inside it too.
    arcs_leaving : edges drawn at full strength, both ends inside the canvas, whose path
        leaves it.
    worded_labels, states : state nodes whose drawn label shows words (more than their
        number), and state nodes in all.
    stray_labels : ids of the edges whose number is not on its own edge (for messages).
    """

    nodes_inside: int
    nodes: int
    terminals_inside: int
    terminals: int
    critical_labels: int
    labels_on_own_edge: int
    critical_arcs: int
    critical_arcs_inside: int
    arcs_leaving: int
    worded_labels: int
    states: int
    stray_labels: tuple[str, ...] = ()


def to_screen(geometry: dict, points: np.ndarray) -> np.ndarray:
    """(n, 2) canvas-unit points of a drawing as screen px inside its canvas (the page's
    ``window.g2po.geometry()``: its ``view`` centre, ``scale``, ``width`` and ``height``)."""
    view = geometry["view"]
    centre = np.array([geometry["width"], geometry["height"]], dtype=float) / 2.0
    return (np.asarray(points, float).reshape(-1, 2) - [view["x"], view["y"]]) * \
        geometry["scale"] + centre


def _inside(geometry: dict, points: np.ndarray, slack: float = 1.0) -> np.ndarray:
    px = to_screen(geometry, points)
    return ((px >= -slack) & (px <= np.array([geometry["width"], geometry["height"]]) + slack)
            ).all(axis=1)


def _boxes_meet(a: list, b: list, gap: float) -> bool:
    """Whether two boxes (left, top, width, height) come within ``gap`` of each other."""
    return (a[0] < b[0] + b[2] + gap and b[0] < a[0] + a[2] + gap and
            a[1] < b[1] + b[3] + gap and b[1] < a[1] + a[3] + gap)


def _box_meets_disc(box: list, x: float, y: float, r: float) -> bool:
    nx = min(max(x, box[0]), box[0] + box[2])
    ny = min(max(y, box[1]), box[1] + box[3])
    return (nx - x) ** 2 + (ny - y) ** 2 < r * r


def check_view(geometry: dict) -> ViewCheck:
    """Check what the page's view shows (``window.g2po.geometry()`` as :func:`check_drawing`
    reads it, plus ``view``, ``scale``, ``width``, ``height``, each node's ``shape``,
    ``label`` and ``labelBox``, each edge's ``critical`` rank and ``labelBox``; boxes in
    canvas units as (left, top, width, height)).

    A critical transition's number is on its own edge when its box is within reach of its
    own edge's path (half its size and 6 px), touches no node's disc, and keeps 2 px from
    every node label and every other edge label drawn (parallel edges' numbers share one box):
    a number beside node 31's label that reads "31#1" is not.

    Examples
    --------
    >>> g = {"view": {"x": 100, "y": 0}, "scale": 1.0, "width": 300, "height": 100,
    ...      "nodes": [{"id": 0, "x": 0, "y": 0, "r": 10, "shape": "diamond", "label": "0: a",
    ...                 "labelPx": 14},
    ...                {"id": 1, "x": 200, "y": 0, "r": 10, "shape": "star", "label": "success"},
    ...                {"id": 2, "x": 400, "y": 0, "r": 10, "shape": "dot", "label": "2",
    ...                 "labelPx": 11}],
    ...      "edges": [{"id": "e0", "from": 0, "to": 1, "points": [[0, 0], [100, 0], [200, 0]],
    ...                 "strong": True, "critical": 1, "labelBox": [90, -8, 20, 16]}]}
    >>> c = check_view(g)
    >>> (c.nodes_inside, c.terminals_inside, c.labels_on_own_edge, c.critical_arcs_inside)
    (2, 1, 1, 1)
    >>> (c.worded_labels, c.states)
    (1, 2)
    """
    nodes, edges = geometry["nodes"], geometry["edges"]
    scale = float(geometry["scale"]) or 1.0
    xy = np.array([[n["x"], n["y"]] for n in nodes], dtype=float).reshape(-1, 2)
    inside = _inside(geometry, xy) if len(xy) else np.zeros(0, dtype=bool)
    where = {n["id"]: i for i, n in enumerate(nodes)}
    terminal = np.array([n.get("shape") in TERMINAL_SHAPES for n in nodes], dtype=bool)
    drawn = [e for e in edges if len(e.get("points") or []) >= 2 and not e.get("hidden")]
    leaving = sum(1 for e in drawn if e.get("strong", True) and inside[where[e["from"]]]
                  and inside[where[e["to"]]] and not _inside(geometry, e["points"]).all())
    critical = [e for e in edges if e.get("critical")]
    arcs = [e for e in critical if e["from"] != e["to"] and inside[where[e["from"]]]
            and inside[where[e["to"]]]]
    arcs_in = sum(1 for e in arcs if len(e.get("points") or []) >= 2
                  and _inside(geometry, e["points"]).all())
    labelled = [e for e in critical if e.get("labelBox")]
    node_boxes = [n["labelBox"] for n in nodes if n.get("labelBox")]
    stray = []
    for e in labelled:
        box, gap = e["labelBox"], 2.0 / scale
        # parallel edges' numbers share one box (``#2 #4``): not an overlap
        others = [o["labelBox"] for o in edges if o is not e and o.get("labelBox")
                  and list(o["labelBox"]) != list(box)]
        clear = not any(_box_meets_disc(box, n["x"], n["y"], n["r"]) for n in nodes) and \
            not any(_boxes_meet(box, b, gap) for b in node_boxes + others)
        own = True
        if e["from"] != e["to"] and len(e.get("points") or []) >= 2:
            centre = np.array([[box[0] + box[2] / 2, box[1] + box[3] / 2]])
            reach = max(box[2], box[3]) / 2 + 6.0 / scale
            path = np.asarray(e["points"], float)[None]
            own = float(_segment_distance(path, centre)[0, 0]) <= reach
        if not (clear and own):
            stray.append(str(e["id"]))
    states = [n for n in nodes if n.get("shape") in ("dot", "diamond")]
    worded = sum(1 for n in states if n.get("labelPx") and
                 str(n.get("label", "")).strip() != str(n["id"]))
    return ViewCheck(
        nodes_inside=int(inside.sum()), nodes=len(nodes),
        terminals_inside=int((inside & terminal).sum()), terminals=int(terminal.sum()),
        critical_labels=len(labelled), labels_on_own_edge=len(labelled) - len(stray),
        critical_arcs=len(arcs), critical_arcs_inside=arcs_in, arcs_leaving=leaving,
        worded_labels=worded, states=len(states), stray_labels=tuple(stray))
