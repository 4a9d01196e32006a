import pandas as pd

from g2po.analysis.critical import CRITICAL_COLUMNS, critical_transitions
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import group_steps


def graph_of(seed: int = 0):
    steps = group_steps(seed=seed, rows=400)
    return state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())


def test_the_largest_td_errors_ranked_first_with_the_edges_own_rows_and_names():
    graph = graph_of()
    top = critical_transitions(graph, 3)
    assert list(top.columns[:len(CRITICAL_COLUMNS)]) == list(CRITICAL_COLUMNS)
    assert top["rank"].tolist() == [1, 2, 3]
    magnitude = graph.edges["td_error"].abs()
    assert top["td_error"].abs().tolist() == sorted(magnitude, reverse=True)[:3]
    # indexed by the edge's row: the rows of graph.edges, every column of it kept
    pd.testing.assert_frame_equal(top[graph.edges.columns], graph.edges.loc[top.index])
    kinds = graph.nodes["kind"]
    for end, name in (("source", "from"), ("target", "to")):
        for node, shown in zip(top[end], top[name], strict=True):
            assert shown == (str(node) if kinds[node] == "state" else kinds[node])
    assert critical_transitions(graph, 0).empty
    assert list(critical_transitions(graph, 0).columns[:len(CRITICAL_COLUMNS)]) == \
        list(CRITICAL_COLUMNS)


def test_ties_go_to_the_busier_edge_and_a_zero_td_error_is_never_ranked():
    # two rollouts take s0 -go-> s1, one takes s0 -run-> s2, all win: the two edges out of s0
    # carry one TD error, and so do the two winning steps
    steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b", "c", "c"],
                          "t": [0, 1, 0, 1, 0, 1],
                          "state_key": ["s0", "s1", "s0", "s1", "s0", "s2"],
                          "action": ["go", "win", "go", "win", "run", "win"],
                          "episode_reward": 10.0, "is_action_valid": True})
    top = critical_transitions(state_graph(steps, rule=OutcomeRule()))
    assert top[["from", "action", "count"]].values.tolist() == [
        ["1", "win", 2], ["2", "win", 1], ["0", "go", 2], ["0", "run", 1]]
    # every rollout fails: every value and TD error is 0, nothing is critical
    lost = state_graph(steps.assign(episode_reward=0.0), rule=OutcomeRule())
    assert (lost.edges["td_error"] == 0).all() and critical_transitions(lost).empty
