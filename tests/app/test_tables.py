import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from app.tables import (
    ADVANTAGE_COLUMNS,
    OUTCOMES,
    STEP_COLUMNS,
    critical_table,
    node_choices,
    node_highlight,
    node_occurrences,
    outgoing_transitions,
    scale_limits,
    step_table,
    style_diverging,
    trajectory_highlight,
    trajectory_summary,
)
from g2po.analysis.critical import critical_transitions
from g2po.analysis.labels import natural_key
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import group_steps


def graph_of(seed: int = 0):
    steps = group_steps(seed=seed, rows=400)
    return state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())


def test_step_table_has_the_issue_columns_and_the_graph_numbers():
    graph = graph_of()
    table = step_table(graph)
    assert list(table.columns) == ["rollout", "t", *STEP_COLUMNS.values(), "valid", "end",
                                   "action", "observation"]
    assert list(table.columns)[2:5] == ["node", "A", "A^EP"]  # node first, A early
    assert len(table) == len(graph.steps)
    steps = graph.steps.reset_index(drop=True)
    np.testing.assert_allclose(table["A"], steps.loc[table.index, "adv"])
    np.testing.assert_allclose(table["TD error"], steps.loc[table.index, "td_error"])
    assert table["observation"].str.len().max() <= 80
    assert set(table["end"]) - {""} <= {"success", "failure", "truncated"}
    assert (table["end"] != "").sum() == graph.steps["traj_id"].nunique()
    one = step_table(graph, "r1")
    assert set(one["rollout"]) == {"r1"} and list(one["t"]) == sorted(one["t"])
    rows = step_table(graph, rows=np.array([3, 1]))
    assert sorted(rows.index) == [1, 3]


def test_trajectory_summary_matches_the_steps():
    graph = graph_of()
    summary = trajectory_summary(graph)
    lengths = graph.steps.groupby("traj_id").size()
    assert dict(zip(summary["traj_id"], summary["length"], strict=True)) == lengths.to_dict()
    assert summary["success"].dtype == bool
    assert list(summary["traj_id"]) == sorted(summary["traj_id"], key=natural_key)
    assert set(summary["outcome"]) <= set(OUTCOMES)


def test_trajectory_highlight_follows_the_path_to_its_terminal():
    graph = graph_of()
    hl = trajectory_highlight(graph, "r0")
    rows = graph.steps[graph.steps["traj_id"] == "r0"]
    assert set(rows["node"]) <= hl.nodes
    last = rows.sort_values("t").iloc[-1]
    assert int(last["next_node"]) in hl.nodes
    assert graph.nodes.loc[int(last["next_node"]), "kind"] in ("success", "failure")
    assert len(hl.edges) == len(set(zip(rows["node"], rows["action"], rows["next_node"],
                                        strict=True)))


def test_node_occurrences_are_the_node_centric_reference_set():
    graph = graph_of()
    node = int(graph.nodes["visits"].idxmax())
    occ = node_occurrences(graph, node, penalty=0.1)
    assert len(occ) == graph.nodes.loc[node, "visits"]
    expected = occ["V(next)"] - 0.1 * (~occ["valid"]).astype(float)
    np.testing.assert_allclose(occ["x = V(next) − p·invalid"], expected)
    if len(occ) > 1:  # A^NC is the normalised x over exactly these rows
        x = occ["x = V(next) − p·invalid"]
        np.testing.assert_allclose(occ["A^NC"], (x - x.mean()) / (x.std(ddof=1) + 1e-6),
                                   atol=1e-9)
    out = outgoing_transitions(graph, node)
    assert out["count"].sum() == len(occ)
    hl = node_highlight(graph, node)
    assert hl.node == node and len(hl.edges) == len(out)


def test_node_choices_describe_every_node():
    graph = graph_of()
    choices = node_choices(graph)
    assert set(choices) == set(graph.nodes.index)
    assert any("success" in v for v in choices.values())


def test_one_zero_centred_scale_per_quantity_shared_by_every_table():
    graph = graph_of()
    limits = scale_limits(graph)
    assert set(limits) == set(ADVANTAGE_COLUMNS)
    assert limits["A"] == graph.steps["adv"].abs().max()
    whole = style_diverging(step_table(graph), limits)
    part = style_diverging(step_table(graph, "r1"), limits)
    assert isinstance(whole, Styler)

    def colour_of(styler, column, row):
        styler._compute()
        j = list(styler.data.columns).index(column)
        return dict(styler.ctx[(row, j)])["background-color"]

    # the same step has the same colour in the long table and in its trajectory's table
    first = step_table(graph, "r1").index[0]
    i_whole = list(step_table(graph).index).index(first)
    assert colour_of(whole, "A", i_whole) == colour_of(part, "A", 0)
    # a constant quantity of zeros stays white instead of being painted darkest
    zeros = pd.DataFrame({"A": [0.0, 0.0]})
    styled = style_diverging(zeros, {"A": 0.0})
    assert colour_of(styled, "A", 0) == "rgb(247, 247, 247)"
    # other tables' names of a quantity share its scale
    occ = style_diverging(pd.DataFrame({"mean A": [limits["A"]]}), limits)
    assert colour_of(occ, "mean A", 0) == colour_of(
        style_diverging(pd.DataFrame({"A": [limits["A"]]}), limits), "A", 0)
    big = pd.DataFrame(np.zeros((50_000, 2)), columns=["A", "x"])
    assert isinstance(style_diverging(big, ["A"]), pd.DataFrame)


def test_critical_table_puts_its_numbers_before_the_action():
    graph = graph_of()
    table = critical_table(critical_transitions(graph))
    assert list(table.columns) == ["#", "from", "to", "TD error", "mean A", "count", "action"]
    first = graph.edges.loc[table.index[0]]
    # named as the graph names them: a state's number, a terminal's kind
    names = {i: (str(i) if k == "state" else k) for i, k in graph.nodes["kind"].items()}
    assert (table["from"].iloc[0], table["to"].iloc[0]) == (names[first["source"]],
                                                            names[first["target"]])
    into_terminal = table["to"][graph.edges.loc[table.index, "target"].map(
        graph.nodes["kind"]).to_numpy() != "state"]
    assert set(into_terminal) <= {"success", "failure", "truncated"}


def test_rollouts_are_named_by_what_tells_them_apart():
    steps = group_steps(rows=400)
    steps = steps[steps["group_id"] == "task-0"]
    steps = steps.assign(traj_id="cooking-recipe3-take2-go9-open-cook-cut-train-s1:" +
                         steps["traj_id"].astype(str).str.extract(r"(\d+)$")[0])
    graph = state_graph(steps, rule=OutcomeRule())
    summary = trajectory_summary(graph)
    assert all(r.startswith("s1:") for r in summary["rollout"])
    assert summary["rollout"].is_unique
    assert set(step_table(graph)["rollout"]) == set(summary["rollout"])
