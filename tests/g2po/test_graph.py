"""The state graph of one group: nodes, terminals, edges, networkx view."""

from __future__ import annotations

import networkx as nx
import pandas as pd
import pytest

from g2po import state_graph, to_networkx
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.g2po.builders import CYCLE, THREE, TWO, trajectories

G = 0.95


def test_nodes_of_two_trajectories():
    graph = state_graph(trajectories(TWO), rule=OutcomeRule())
    nodes = graph.nodes
    assert nodes["kind"].tolist() == ["state", "state", "state", "success", "failure"]
    assert nodes["state_key"].tolist()[:3] == ["s0", "s1", "s2"]
    assert nodes["visits"].tolist() == [2, 2, 1, 1, 1]
    assert nodes["value"].tolist() == pytest.approx([9.025 / 2, 9.5 / 2, 0.0, 10.0, 0.0])
    # population variance of the merged step values: s0 = {9.025, 0}, s1 = {9.5, 0}
    assert nodes["value_var"].tolist()[:3] == pytest.approx([(9.025 / 2) ** 2,
                                                             (9.5 / 2) ** 2, 0.0])
    assert nodes["is_start"].tolist() == [True, False, False, False, False]
    assert nodes["depth"].tolist() == [0, 1, 1, 3, 3]
    assert graph.n_states == 3


def test_edges_merge_identical_transitions_and_keep_parallel_ones():
    graph = state_graph(trajectories(THREE), rule=OutcomeRule())
    edges = graph.edges.set_index(["source", "action", "target"])
    s0, s1, success, failure = 0, 1, 3, 4
    assert edges.loc[(s0, "x", s1), "count"] == 2  # a0 and c1
    assert edges.loc[(s0, "look", s0), "count"] == 1  # the invalid self-loop
    assert edges.loc[(s0, "look", s0), "invalid"] == 1
    assert edges.loc[(s1, "y", success), "count"] == 1
    assert edges.loc[(s1, "y", failure), "count"] == 1  # parallel: same action, other target
    assert edges.loc[(s1, "q", failure), "count"] == 1
    assert edges["count"].sum() == len(graph.steps) == 8
    v_s0, v_s1 = 9.025 / 4, 9.5 / 3
    assert edges.loc[(s0, "x", s1), "td_error"] == pytest.approx(v_s1 - v_s0)
    assert edges.loc[(s0, "look", s0), "td_error"] == pytest.approx(0.0)


def test_edge_advantages_are_means_of_their_steps():
    graph = state_graph(trajectories(THREE), rule=OutcomeRule())
    steps = graph.steps
    along = steps[(steps["node"] == 0) & (steps["action"] == "x")]
    edge = graph.edges[(graph.edges["source"] == 0) & (graph.edges["action"] == "x")]
    assert edge["adv"].iloc[0] == pytest.approx(along["adv"].mean())


def test_steps_keep_their_order_and_get_node_ids():
    steps = trajectories(CYCLE).sample(frac=1.0, random_state=1)
    graph = state_graph(steps, rule=OutcomeRule())
    assert graph.steps.index.tolist() == steps.index.tolist()
    by_row = graph.steps.sort_index()
    assert by_row["node"].tolist()[:4] == [by_row["node"][0], by_row["node"][1]] * 2
    assert by_row["next_node"].iloc[3] == graph.nodes.index[graph.nodes["kind"] == "success"][0]


def test_parameters_reach_the_estimator():
    a = state_graph(trajectories(TWO), rule=OutcomeRule())
    b = state_graph(trajectories(TWO), rule=OutcomeRule(), params=G2POParams(gamma=0.5))
    assert b.nodes.loc[0, "value"] == pytest.approx(0.25 * 10 / 2)
    assert a.nodes.loc[0, "value"] != b.nodes.loc[0, "value"]


def test_one_group_only():
    two_groups = pd.concat([trajectories(TWO), trajectories(TWO, group="h")])
    with pytest.raises(ValueError, match="exactly one group"):
        state_graph(two_groups, rule=OutcomeRule())


def test_networkx_view():
    graph = state_graph(trajectories(THREE), rule=OutcomeRule())
    g = to_networkx(graph)
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == len(graph.nodes) == 5
    assert g.number_of_edges() == len(graph.edges)
    assert g.has_edge(0, 0, key="look")  # self-loop
    assert g.number_of_edges(1, 4) == 2  # parallel edges s1 -> failure ("y" and "q")
    assert g.nodes[3]["kind"] == "success"
    assert nx.has_path(g, 0, 3)
