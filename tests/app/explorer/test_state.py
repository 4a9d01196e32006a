"""The group explorer's picks: clicks read for the graph shown only; the steps filter in the
URL and back."""

from app.explorer.state import (
    Picks,
    edge_from_click,
    filter_from_url,
    filter_to_url,
    node_from_click,
)


def test_clicks_on_the_drawn_graph_are_read_for_this_graph_only():
    assert node_from_click({"node": 3, "graph_id": "g1", "click": 1}, "g1") == 3
    assert node_from_click({"node": 3, "graph_id": "old", "click": 1}, "g1") is None
    assert node_from_click(None, "g1") is None
    assert edge_from_click({"edge": "e7", "graph_id": "g1", "click": 2}, "g1") == 7
    assert edge_from_click({"edge": "e7", "graph_id": "old", "click": 2}, "g1") is None
    assert edge_from_click({"node": 1, "graph_id": "g1"}, "g1") is None


def test_the_steps_filter_goes_to_the_url_and_back_for_this_graph_only():
    for flt in (("node", 3), ("edge", 10), ("alarm", "aliased")):
        assert filter_from_url(filter_to_url(flt), {3}, 11, {"aliased"}) == flt
    assert filter_to_url(None) is None
    assert filter_from_url("node:4", {3}, 11, set()) is None
    assert filter_from_url("edge:11", {3}, 11, set()) is None
    assert filter_from_url("alarm:hub", {3}, 11, {"aliased"}) is None


def test_an_edge_selects_its_source_and_a_choice_redraws_the_tables_unticked():
    picks = Picks(edge_source=(4, 7))
    picks.select_edge(1)
    assert (picks.node, picks.edge, picks.filter) == (7, 1, ("edge", 1))
    picks.select_edge(5)  # an edge of another graph: nothing changes
    assert (picks.node, picks.edge) == (7, 1)
    picks.select_node(4)
    assert (picks.node, picks.edge, picks.filter) == (4, None, ("node", 4))
    keys = picks.steps_key, picks.critical_key
    picks.bump(critical=False)
    assert picks.critical_key == keys[1] and picks.steps_key != keys[0]
