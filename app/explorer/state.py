"""The group explorer's picks, in one object kept in the session.

Everything the user chose on the page that outlives a script run — the selected node and edge,
what the step tables are filtered to, a what-if edit of the graph, and the few facts of the last
run that the click callbacks read (the graph's id, the rows the tables showed) — is one
:class:`Picks`, read once at the start of a run (:func:`load`) and written once at its end
(:func:`save`); a callback reads and writes it once too. The widgets (trajectories, outcomes,
colours, tabs, pickers) keep their own values under their keys; their values of this run are
copied onto the picks, so the URL (:func:`url_values`) and the views read one object. The URL
seeds the picks and the widgets once per session (:mod:`app.url_state`), and a choice stays
made until another replaces it: a change of γ, w or the penalty keeps the trajectories, node
and edge (the graph's structure is the same), only another group clears them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from app.graph import EDGE_COLOR_MODES, VALUE_SCALES
from app.tables import OUTCOMES
from app.url_state import seed_from_url, url_once

__all__ = ["Picks", "PICKS", "load", "save", "update", "widget", "set_widgets", "begin",
           "url_values", "node_from_click", "edge_from_click", "filter_to_url",
           "filter_from_url", "TRAJ", "OUTCOME", "EDGE_COLOR", "VALUE_SCALE", "VIEW", "TAB",
           "NODE", "NODE2", "STEPS_PAGE", "GRAPH_KEY", "EDIT_MIN"]

#: Session key of the page's one :class:`Picks`.
PICKS = "_g2po_explorer_picks"
#: The widgets' keys.
TRAJ, OUTCOME, EDGE_COLOR, VALUE_SCALE = "g_traj", "g_outcome", "g_edge_color", "g_value_scale"
VIEW, TAB, NODE, NODE2, STEPS_PAGE = "g_view", "g_tab", "g_node", "g_node2", "g_steps_page"
GRAPH_KEY, EDIT_MIN = "g_graph", "g_edit_min"


@dataclass
class Picks:
    """What the user chose on the group explorer.

    group : (run key, training step, group id) the picks were made on; structure: the
        graph's :func:`g2po.analysis.group_view.graph_structure` then.
    node, edge : the selected node, and edge (its row in ``StateGraph.edges``).
    filter : what the step tables are filtered to: None, ``("node", id)``, ``("edge", row)``
        or ``("alarm", kind)``; in the URL as ``filter=node:3``, ``edge:10``, ``alarm:aliased``.
    edit : a what-if edit of the graph: None, ``("merge", a, b)`` or ``("split", node)``.
    fit_recorded : the user asked which estimator explains the recorded advantage.
    trajectories, outcomes, edge_color, value_scale, view : the widgets' values this run.
    critical_version, steps_version : bumped by every choice made elsewhere than in the
        critical-transitions table (resp. the step table): that table is then drawn afresh,
        its tick gone with the choice it showed.
    graph_id : the drawn graph's id (a click on another, older drawing is ignored);
        edge_source : the source node of every edge; step_rows : (node, edge) of each step row
        the step table showed; critical_rows : the edge of each critical-transition row shown.
    """

    group: tuple | None = None
    structure: str | None = None
    node: int | None = None
    edge: int | None = None
    filter: tuple | None = None
    edit: tuple | None = None
    fit_recorded: bool = False
    trajectories: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    edge_color: str = "td"
    value_scale: str = "group"
    view: str = "Graph"
    critical_version: int = 0
    steps_version: int = 0
    graph_id: str | None = None
    edge_source: tuple[int, ...] = ()
    step_rows: tuple[tuple[int, int | None], ...] = ()
    critical_rows: tuple[int, ...] = ()

    def select_node(self, node: int | None) -> None:
        """Select ``node`` (and no edge); the steps are filtered to it."""
        self.node, self.edge = node, None
        self.filter = None if node is None else ("node", int(node))

    def select_edge(self, edge: int) -> None:
        """Select edge ``edge`` and its source node; the steps are filtered to it."""
        if 0 <= edge < len(self.edge_source):
            self.node, self.edge = self.edge_source[edge], edge
            self.filter = ("edge", edge)

    def bump(self, critical: bool = True, steps: bool = True) -> None:
        """A choice was made: the tables named are drawn afresh, without the tick of the
        choice they showed before."""
        self.critical_version += int(critical)
        self.steps_version += int(steps)

    @property
    def steps_key(self) -> str:
        return f"g_steps_table:{self.steps_version}"

    @property
    def critical_key(self) -> str:
        return f"g_critical:{self.critical_version}"


def load() -> Picks:
    """The page's picks (new ones on a session's first visit)."""
    picks = st.session_state.get(PICKS)
    return picks if isinstance(picks, Picks) else Picks()


def save(picks: Picks) -> None:
    st.session_state[PICKS] = picks


def update(change: Callable[[Picks], None]) -> None:
    """Change the picks (a callback): read once, changed, written once."""
    picks = load()
    change(picks)
    save(picks)


def widget(key: str, default: Any = None) -> Any:
    """A widget's value in the session (a callback reads the event of the table clicked)."""
    return st.session_state.get(key, default)


def set_widgets(**values: Any) -> None:
    """Set widgets' values (by key) before they are drawn: a pick made elsewhere that a
    widget must show (the Steps tab opened by a click, a node picked in the graph)."""
    for key, value in values.items():
        st.session_state[key] = value


def begin(picks: Picks, group: tuple, structure: str, traj_ids: list[str], nodes: set[int],
          n_edges: int, alarm_kinds: set[str]) -> None:
    """Before anything is drawn: the picks kept or dropped for this group and structure, then
    (once per session) seeded from the URL."""
    _keep_or_drop(picks, group, structure)
    _seed(picks, traj_ids, nodes, n_edges, alarm_kinds)
    set_widgets(**{TRAJ: [t for t in widget(TRAJ) or [] if t in traj_ids]})


def _keep_or_drop(picks: Picks, group: tuple, structure: str) -> None:
    """Picks stay while they mean the same: trajectories and outcomes while the group is the
    same (a parameter change recomputes the numbers, not the rollouts); the node, the edge, a
    node or edge filter and a what-if edit while the graph's structure is too (another state
    key or success rule may number nodes and edges otherwise)."""
    if picks.group != group:
        picks.group, picks.structure = group, structure
        picks.node = picks.edge = picks.filter = picks.edit = None
        picks.fit_recorded = False
        set_widgets(**{TRAJ: [], NODE2: None})
        picks.bump()
    elif picks.structure != structure:
        picks.structure = structure
        picks.node = picks.edge = picks.edit = None
        if picks.filter and picks.filter[0] in ("node", "edge"):
            picks.filter = None
        set_widgets(**{NODE2: None})
        picks.bump()


def _seed(picks: Picks, traj_ids: list[str], nodes: set[int], n_edges: int,
          alarm_kinds: set[str]) -> None:
    """The URL's trajectories, node, edge, steps filter and colours, once per session (a URL
    with a node and no filter, as older links have, filters the steps to that node)."""
    seed_from_url(TRAJ, "traj", lambda s: [t for t in s.split(",") if t in traj_ids])
    node, edge, flt = url_once("node"), url_once("edge"), url_once("filter")
    if node is not None and node.lstrip("-").isdigit() and int(node) in nodes:
        picks.node, picks.filter = int(node), ("node", int(node))
    if edge is not None and edge.isdigit() and int(edge) < n_edges:
        picks.edge = int(edge)
    if flt is not None:
        picks.filter = filter_from_url(flt, nodes, n_edges, alarm_kinds) or picks.filter
    seed_from_url(OUTCOME, "outcome", lambda s: [o for o in s.split(",") if o in OUTCOMES])
    seed_from_url(EDGE_COLOR, "edge_color", str, EDGE_COLOR_MODES)
    seed_from_url(VALUE_SCALE, "value_scale", str, VALUE_SCALES)


def url_values(picks: Picks) -> dict[str, object]:
    """The view as the URL keeps it (None drops a name)."""
    return {"traj": list(picks.trajectories), "node": picks.node, "edge": picks.edge,
            "outcome": list(picks.outcomes), "filter": filter_to_url(picks.filter),
            "edge_color": None if picks.edge_color == "td" else picks.edge_color,
            "value_scale": None if picks.value_scale == "group" else picks.value_scale}


def node_from_click(clicked: dict | None, graph_id: str | None) -> int | None:
    """The node a click on the drawn graph chose, if it was a click on the graph now shown."""
    if isinstance(clicked, dict) and clicked.get("graph_id") == graph_id and \
            isinstance(clicked.get("node"), int):
        return int(clicked["node"])
    return None


def edge_from_click(clicked: dict | None, graph_id: str | None) -> int | None:
    """The edge (its row in ``StateGraph.edges``) a click on the drawn graph chose."""
    if isinstance(clicked, dict) and clicked.get("graph_id") == graph_id:
        edge = clicked.get("edge")
        if isinstance(edge, str) and edge.startswith("e") and edge[1:].isdigit():
            return int(edge[1:])
    return None


def filter_to_url(flt: tuple | None) -> str | None:
    """What the step tables are filtered to, as the URL keeps it (``node:3``, ``edge:10``,
    ``alarm:aliased``); None when unfiltered."""
    if not flt:
        return None
    return f"{flt[0]}:{flt[1]}"


def filter_from_url(text: str, nodes: set[int], n_edges: int, alarm_kinds: set[str]
                    ) -> tuple | None:
    """The URL's ``filter`` back as a filter of this graph (None when it names a node, an
    edge or an alarm the graph does not have)."""
    kind, _, value = str(text).partition(":")
    if kind in ("node", "edge") and value.lstrip("-").isdigit():
        number = int(value)
        if (kind == "node" and number in nodes) or (kind == "edge" and 0 <= number < n_edges):
            return (kind, number)
    if kind == "alarm" and value in alarm_kinds:
        return ("alarm", value)
    return None
