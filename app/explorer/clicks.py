"""What a click on the group explorer does: each widget's callback, run before the next script
run, reads the page's picks once, changes them and writes them once
(:func:`app.explorer.state.update`).

A click on a node (in the graph, the Node tab's picker or an alarm's ranking) selects it and
filters the steps to it; on an edge (in the graph, a critical transition, an alarm's link) the
same for the steps along it; on a step row, its node and edge are selected in the graph (the
critical transition ticked before is unticked: the selection is now the step's). A click that
lists steps opens the Steps tab.
"""

from __future__ import annotations

from app.explorer.state import (
    GRAPH_KEY,
    NODE,
    TAB,
    Picks,
    edge_from_click,
    node_from_click,
    set_widgets,
    update,
    widget,
)
from app.ui import picked_row

__all__ = ["graph_clicked", "row_clicked", "critical_clicked", "select_node", "select_edge",
           "set_filter", "node_picked", "set_edit", "fit_recorded"]


def _open_steps() -> None:
    set_widgets(**{TAB: "Steps"})


def graph_clicked() -> None:
    """A click on the drawn graph: a node, or an edge, of the graph now shown."""
    def change(picks: Picks) -> None:
        clicked = widget(GRAPH_KEY)
        node = node_from_click(clicked, picks.graph_id)
        edge = edge_from_click(clicked, picks.graph_id)
        if node is not None:
            picks.select_node(node)
        elif edge is not None:
            picks.select_edge(edge)
        else:
            return
        _open_steps()
        picks.bump()
    update(change)


def row_clicked() -> None:
    """A click on a step row selects its node and edge."""
    def change(picks: Picks) -> None:
        picked = picked_row(widget(picks.steps_key), len(picks.step_rows))
        if picked is not None:
            picks.node, picks.edge = picks.step_rows[picked]
            picks.bump(steps=False)
    update(change)


def critical_clicked() -> None:
    """A click on a critical transition selects its edge and lists its steps."""
    def change(picks: Picks) -> None:
        picked = picked_row(widget(picks.critical_key), len(picks.critical_rows))
        if picked is not None:
            picks.select_edge(picks.critical_rows[picked])
            _open_steps()
            picks.bump(critical=False)
    update(change)


def select_node(node: int) -> None:
    """An alarm's ranked node: selected, its steps listed."""
    def change(picks: Picks) -> None:
        picks.select_node(node)
        _open_steps()
    update(change)


def select_edge(edge: int) -> None:
    """The critical transition an alarm explains: selected, its steps listed."""
    def change(picks: Picks) -> None:
        picks.select_edge(edge)
        _open_steps()
    update(change)


def set_filter(value: tuple | None) -> None:
    """An alarm's steps (or all steps again) listed."""
    def change(picks: Picks) -> None:
        picks.filter = value
        _open_steps()
        picks.bump()
    update(change)


def node_picked() -> None:
    """A node picked in the Node tab selects it (and filters the steps to it)."""
    def change(picks: Picks) -> None:
        node = widget(NODE)
        picks.select_node(None if node is None else int(node))
        picks.bump()
    update(change)


def set_edit(edit: tuple | None) -> None:
    """A what-if edit of the graph (merge two nodes, split one), or none."""
    def change(picks: Picks) -> None:
        picks.edit = edit
    update(change)


def fit_recorded() -> None:
    """Search which estimator explains the recorded advantage."""
    def change(picks: Picks) -> None:
        picks.fit_recorded = True
    update(change)
