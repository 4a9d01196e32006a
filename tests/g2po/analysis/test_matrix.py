import numpy as np
import pytest

from g2po.analysis.matrix import is_dense, transition_matrix
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps
from tests.app.builders import group_steps


def rooms(n_states: int, rollouts: int, max_len: int):
    steps = synthetic_steps(rollouts * max_len, rollouts=rollouts, max_len=max_len,
                            states_per_task=n_states)
    return state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())


def test_each_cell_is_the_count_weighted_mean_over_the_pairs_edges():
    steps = group_steps(rows=400)
    graph = state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())
    td = transition_matrix(graph, "td_error")
    counts = transition_matrix(graph, "count")
    edges = graph.edges
    assert np.nansum(counts.to_numpy()) == edges["count"].sum()
    names = {i: (str(i) if k == "state" else k) for i, k in graph.nodes["kind"].items()}
    pair = edges.groupby(["source", "target"])
    for (s, t), group in list(pair)[:10]:
        expected = np.average(group["td_error"], weights=group["count"])
        assert td.loc[names[s], names[t]] == pytest.approx(expected)
    # every state a row, the same states in the same order then the terminals as columns,
    # named as the graph names them (strings, never numbers), in the order of first depth
    states = graph.nodes[graph.nodes["kind"] == "state"]
    assert td.index.tolist() == [names[i] for i in states.sort_values("depth",
                                                                    kind="stable").index]
    terminals = [c for c in td.columns if c in ("success", "failure", "truncated")]
    assert td.columns.tolist() == td.index.tolist() + terminals and len(terminals) >= 2
    assert all(isinstance(c, str) for c in td.columns)
    # each edge's cell is where its two nodes are: no transition is lost or moved
    filled = {(r, c) for r, c in zip(*np.nonzero(counts.notna().to_numpy()), strict=True)}
    want = {(td.index.get_loc(names[s]), td.columns.get_loc(names[t]))
            for s, t in zip(edges["source"], edges["target"], strict=True)}
    assert filled == want
    with pytest.raises(ValueError, match="td_error"):
        transition_matrix(graph, "nonsense")


def test_the_matrix_is_offered_for_dense_groups_only():
    small, big = rooms(30, 8, 40), rooms(100, 16, 80)
    assert len(small.edges) <= 150 and small.n_states <= 40 and not is_dense(small)
    assert is_dense(big)
