"""The state graph as a page: the JSON data the page draws (:func:`network_data`), and one
standalone offline HTML page holding it (:func:`render_html`, :func:`graph_html`: the export).

vis-network's JavaScript comes from the installed pyvis package: inlined in the standalone page,
served by the app's own component in the app (:mod:`app.graph_component`), so the graph draws
with no internet. Log text reaches the page only as JSON data (``<``, ``>``, ``&`` escaped by
Jinja's ``tojson``); a Content-Security-Policy allows exactly the page's own scripts and no
network access at all.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from pathlib import Path

import jinja2
import pyvis

from app.graph.network import build_network
from app.graph.positions import LAYOUT_ASPECTS, edge_routes, layout_positions
from app.graph.style import DrawStyle, Highlight
from g2po.analysis.state_graph import StateGraph

__all__ = ["network_data", "render_html", "graph_html", "vis_network_js", "TEMPLATES"]

#: The page's templates, script and style (shared with :mod:`app.graph_component`).
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


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
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(name)


@functools.cache
def _asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


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
    return {"nodes": nodes, "edges": edges, "options": options, "title": title,
            "graph_id": graph_id, "legend": {**net.legend, "assumed": list(assumed)},
            "selected": selected, "legible": net.legible, "layouts": _layouts(graph)}


def _layouts(graph: StateGraph) -> list[dict]:
    """One drawing per canvas shape of :data:`LAYOUT_ASPECTS` that wraps differently: node
    positions (in the order of the graph's nodes) and the edges routed for them."""
    layouts, seen = [], set()
    for aspect in LAYOUT_ASPECTS:
        pos = layout_positions(graph, aspect)
        xs = [round(float(v), 1) for v in pos["x"]]
        ys = [round(float(v), 1) for v in pos["y"]]
        key = (tuple(xs), tuple(ys))
        if key not in seen:
            seen.add(key)
            smooth, blocked = edge_routes(graph, pos, aspect)
            layouts.append({"aspect": aspect, "x": xs, "y": ys, "smooth": smooth,
                            "blocked": blocked})
    return layouts


def render_html(data: dict, *, height: str = "620px", legend: bool = True) -> str:
    """``data`` (see :func:`network_data`) as one standalone HTML page: vis-network inlined,
    no external request, a Content-Security-Policy that runs exactly its three scripts (the
    drawing's marks and core code are one)."""
    init_js = ("(function () {\n  \"use strict\";\n  window.G2POGraph.draw("
               "document.getElementById(\"g2po-graph\"), "
               + _template("graph_init.js").render(data=data).strip() + ");\n})();\n")
    vis_js, core_js = vis_network_js(), _asset("graph_marks.js") + "\n" + _asset("graph_core.js")
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
