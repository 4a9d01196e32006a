import numpy as np

from g2po.analysis.state_graph import state_graph
from g2po.estimators import estimate
from g2po.node_ids import step_node_ids
from g2po.outcomes import OutcomeRule, truncated_steps
from tests.app.builders import group_steps


def test_ids_equal_each_groups_own_graph():
    steps = group_steps(seed=3, rows=900).sample(frac=1.0, random_state=0)  # rows shuffled
    steps = steps.reset_index(drop=True)
    columns, ix = estimate(steps, "g2po")
    node, next_node = step_node_ids(ix, columns["success"])
    for group in steps["group_id"].unique():
        rows = (steps["group_id"] == group).to_numpy()
        graph = state_graph(steps[rows], rule=OutcomeRule())
        np.testing.assert_array_equal(node[rows], graph.steps["node"].to_numpy())
        np.testing.assert_array_equal(next_node[rows], graph.steps["next_node"].to_numpy())


def test_ids_of_trajectories_cut_at_the_step_limit_equal_the_graphs():
    steps = group_steps(seed=5, rows=900, max_len=6).reset_index(drop=True)
    columns, ix = estimate(steps, "g2po")
    cut = truncated_steps(steps, ix, columns["success"], truncate_at=6)
    assert cut.any()
    node, next_node = step_node_ids(ix, columns["success"], cut)
    for group in steps["group_id"].unique():
        rows = (steps["group_id"] == group).to_numpy()
        graph = state_graph(steps[rows], rule=OutcomeRule(truncate_at=6))
        np.testing.assert_array_equal(next_node[rows], graph.steps["next_node"].to_numpy())
        np.testing.assert_array_equal(cut[rows], graph.steps["truncated"].to_numpy())
