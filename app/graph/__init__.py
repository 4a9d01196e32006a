"""Draw a :class:`g2po.analysis.state_graph.StateGraph`: layout, node and edge data, offline
HTML.

pyvis builds the vis-network node and edge records (:mod:`app.graph.network`); the page around
them is our own (``app/templates/``) because pyvis' ``generate_html`` links Bootstrap and
vis-network from CDNs (:mod:`app.graph.page`). Positions come from the layered layout by step
depth with crossings reduced, its columns wrapped into bands to fill the canvas, and edges are
routed around the nodes in their way (:mod:`app.graph.positions`); physics is off, so a graph
of a few thousand nodes stays responsive. What must be read at any zoom (the critical
transitions' numbers, the start and terminal labels) is listed in the data's ``legible``; the
page keeps those labels at a constant size on screen.

Log text (state keys, observations, actions) is untrusted. It reaches the page only as JSON data
(escaped by Jinja's ``tojson``, or a ``postMessage`` to the app's component); canvas labels are
drawn as text, and tooltips (:mod:`app.graph.tooltips`) are built in the page with
``textContent``, never parsed as HTML.
"""

from app.graph.network import build_network, full_strength
from app.graph.page import TEMPLATES, graph_html, network_data, render_html, vis_network_js
from app.graph.positions import LAYOUT_ASPECTS, edge_routes, layout_positions
from app.graph.style import (
    EDGE_COLOR_MODES,
    FADED_EDGE,
    FULL_EDGES,
    HIGHLIGHT_COLOR,
    MIN_EDGE_WIDTH,
    QUIET_EDGE,
    SELECTED_LOOP_REACH,
    VALUE_SCALES,
    DrawStyle,
    Highlight,
)
from app.graph.tooltips import edge_tooltip, node_tooltip

__all__ = [
    "Highlight",
    "DrawStyle",
    "EDGE_COLOR_MODES",
    "VALUE_SCALES",
    "FADED_EDGE",
    "FULL_EDGES",
    "HIGHLIGHT_COLOR",
    "MIN_EDGE_WIDTH",
    "QUIET_EDGE",
    "SELECTED_LOOP_REACH",
    "LAYOUT_ASPECTS",
    "layout_positions",
    "edge_routes",
    "full_strength",
    "build_network",
    "network_data",
    "render_html",
    "graph_html",
    "vis_network_js",
    "node_tooltip",
    "edge_tooltip",
    "TEMPLATES",
]
