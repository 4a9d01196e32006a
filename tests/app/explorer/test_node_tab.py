"""The group explorer's Node tab: two nodes merged, or one split by where its steps lead next,
with the recomputed credit against the current one."""

import numpy as np

from g2po.analysis.whatif import merge_nodes, node_changes_text, split_node
from g2po.outcomes import OutcomeRule
from tests.app.builders import app_test, texts
from tests.app.explorer.pages import pick, shown_graph


def test_two_nodes_merged_or_one_split_show_the_recomputed_credit(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    graph, _ = shown_graph(at, runs_root)
    states = graph.nodes[graph.nodes["kind"] == "state"]
    leads = graph.steps.groupby("node")["next_node"].nunique().reindex(states.index)
    node = int(leads.idxmax())
    other = int(next(n for n in states.index if n != node))
    at.session_state["g_tab"] = "Node"
    pick(at, node=node, filter=("node", node))
    at.run()
    assert at.button(key="g_edit_merge").proto.disabled  # no second node yet
    at.selectbox(key="g_node2").select(other).run()
    at.button(key="g_edit_merge").click().run()
    assert not at.exception
    merged = merge_nodes(graph, node, other, rule=OutcomeRule())
    assert f"**nodes {node} and {other} merged**: {merged.summary()['changed']} of " \
           f"{len(graph.steps)} steps change" in texts(at)
    (parts,) = [d.value for d in at.dataframe if list(d.value.columns) == ["kind", "steps",
                                                                           "before", "after"]]
    assert parts["after"].tolist() == node_changes_text(merged.nodes)["after"].tolist()
    changed = next(d.value for d in at.dataframe if "A before" in d.value.columns)
    assert len(changed) == int(merged.steps["changed"].sum()) > 0
    np.testing.assert_allclose(sorted(changed["A after"]),
                               sorted(merged.changed["adv_after"]))
    # split by where its steps lead next
    at.button(key="g_edit_split").click().run()
    split = split_node(graph, node, rule=OutcomeRule())
    assert f"**node {node} split by next state**: {split.summary()['changed']} of" in texts(at)
    assert f"state nodes {graph.n_states} → {split.after.n_states}" in texts(at)
    # the threshold, then clearing the edit
    at.number_input(key="g_edit_min").set_value(10.0).run()
    assert "A moves by more than 10" in texts(at)
    at.button(key="g_edit_clear").click().run()
    assert "split by next state**" not in texts(at)
    assert at.button(key="g_edit_clear").proto.disabled
