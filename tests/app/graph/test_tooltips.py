from app.graph import (
    edge_tooltip,
    node_tooltip,
)
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.graph.groups import tiny_steps


def test_tooltips_are_plain_text_with_the_numbers():
    graph = state_graph(tiny_steps(), rule=OutcomeRule())
    row = graph.nodes.iloc[0].to_dict()
    tip = node_tooltip(0, row)
    assert "visits 3" in tip and "V " in tip and "Var " in tip and "s0" in tip
    assert "key: " in tip
    edge = graph.edges.iloc[0].to_dict()
    assert "TD error" in edge_tooltip(edge) and "A^NC" in edge_tooltip(edge)
