"""How the state graph is drawn: what to emphasise (:class:`Highlight`), how it is coloured
(:class:`DrawStyle`), and the colours, sizes and limits every part of the drawing shares."""

from __future__ import annotations

from dataclasses import dataclass

from g2po.analysis.critical import CRITICAL_COUNT

__all__ = [
    "Highlight",
    "DrawStyle",
    "EDGE_COLOR_MODES",
    "VALUE_SCALES",
    "SUCCESS_COLOR",
    "FAILURE_COLOR",
    "TRUNCATED_COLOR",
    "HIGHLIGHT_COLOR",
    "FADED_NODE",
    "FADED_EDGE",
    "QUIET_EDGE",
    "QUIET_WIDTH",
    "LABEL_MIN_PX",
    "FULL_EDGES",
    "LARGE_GRAPH",
    "MIN_EDGE_WIDTH",
    "LOOP_SIZE",
    "SELECTED_LOOP_REACH",
    "TERMINAL_SHAPES",
]

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
#: Self-loops: the radius of a loop, and how far a selected one reaches past its node's border
#: (past the selection ring, so that it shows).
LOOP_SIZE = 16
SELECTED_LOOP_REACH = 22
#: A terminal's kind → its vis-network shape and colour.
TERMINAL_SHAPES = {"success": ("star", SUCCESS_COLOR), "failure": ("square", FAILURE_COLOR),
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
    critical : how many of the largest-|TD error| edges are emphasised and numbered
        (:func:`g2po.analysis.critical.critical_transitions`).
    """

    edge_color: str = "td"
    value_scale: str = "group"
    critical: int = CRITICAL_COUNT

    def __post_init__(self) -> None:
        if self.edge_color not in EDGE_COLOR_MODES:
            raise ValueError(f"edge_color must be one of {', '.join(EDGE_COLOR_MODES)}")
        if self.value_scale not in VALUE_SCALES:
            raise ValueError(f"value_scale must be one of {', '.join(VALUE_SCALES)}")
