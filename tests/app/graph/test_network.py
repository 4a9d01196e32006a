import numpy as np
import pandas as pd
import pytest

from app.colors import EDGE_SCALE, diverging_colors, symmetric_limit
from app.graph import (
    EDGE_COLOR_MODES,
    FADED_EDGE,
    FULL_EDGES,
    HIGHLIGHT_COLOR,
    MIN_EDGE_WIDTH,
    QUIET_EDGE,
    SELECTED_LOOP_REACH,
    DrawStyle,
    Highlight,
    build_network,
    network_data,
)
from app.tables import trajectory_highlight
from g2po.analysis.critical import critical_transitions
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import group_steps
from tests.app.graph.groups import tiny_steps


def test_network_has_every_node_and_edge_with_marks():
    graph = state_graph(tiny_steps(), rule=OutcomeRule())
    net = build_network(graph, success_reward=10.0)
    assert len(net.nodes) == len(graph.nodes) and len(net.edges) == len(graph.edges)
    shapes = {n["id"]: n["shape"] for n in net.nodes}
    kinds = graph.nodes["kind"]
    assert shapes[int(kinds[kinds == "success"].index[0])] == "star"
    assert shapes[int(kinds[kinds == "failure"].index[0])] == "square"
    start = int(graph.nodes.index[graph.nodes["is_start"]][0])
    assert shapes[start] == "diamond"
    sizes = {n["id"]: n["size"] for n in net.nodes}
    busiest = int(graph.nodes["visits"].idxmax())
    assert sizes[busiest] == max(sizes.values())
    assert all(n["x"] is not None and n["y"] is not None for n in net.nodes)
    assert net.options["physics"] == {"enabled": False}


def test_parallel_edges_and_self_loops_are_drawn_apart():
    net = build_network(state_graph(tiny_steps(), rule=OutcomeRule()), success_reward=10.0)
    loops = [e for e in net.edges if e["from"] == e["to"]]
    assert len(loops) == 2  # one per (node, action), each with its count, at its own angle
    assert len({e["selfReference"]["angle"] for e in loops}) == 2
    assert all("×1" in e["label"] for e in loops)
    s0_s1 = [e for e in net.edges if (e["from"], e["to"]) == (0, 1)]
    assert len(s0_s1) == 2
    assert len({e["smooth"]["roundness"] for e in s0_s1}) == 2
    back = [e for e in net.edges if (e["from"], e["to"]) == (1, 0)]
    assert back and back[0]["smooth"]["enabled"]


def test_edge_width_grows_with_count():
    net = build_network(state_graph(tiny_steps(), rule=OutcomeRule()), success_reward=10.0)
    graph = state_graph(tiny_steps(), rule=OutcomeRule())
    widths = {(e["from"], e["to"], e["title"].split("\n")[1]): e["width"] for e in net.edges}
    go = widths[(0, 1, "action: go")]
    assert go > widths[(0, 1, "action: walk")] or graph.edges["count"].nunique() == 1


def test_highlight_fades_what_is_off_the_path():
    graph = state_graph(tiny_steps(), rule=OutcomeRule())
    hl = Highlight(nodes=frozenset({0}), edges=frozenset({(0, "go", 1)}), node=0, edge=1)
    net = build_network(graph, hl, success_reward=10.0)
    data = network_data(graph, hl, success_reward=10.0)
    assert data["selected"] == {"nodes": [0], "edges": ["e1"]}
    faded = [e for e in net.edges if e["color"] == FADED_EDGE]
    on_path = graph.edges.index[(graph.edges["source"] == 0) & (graph.edges["action"] == "go")
                                & (graph.edges["target"] == 1)]
    assert 1 not in on_path  # the selected edge, off the path, is drawn in the highlight colour
    assert len(faded) == len(net.edges) - 2
    assert net.edges[1]["color"] == HIGHLIGHT_COLOR
    node0 = next(n for n in net.nodes if n["id"] == 0)
    assert node0["borderWidth"] == 6


@pytest.mark.parametrize("n_rows", [2_000])
def test_big_graph_switches_to_compact_drawing(n_rows):
    steps = group_steps(rows=n_rows, rollouts=16, max_len=200, states_per_task=2000)
    graph = state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())
    assert len(graph.nodes) > 300
    net = build_network(graph, success_reward=10.0)
    assert net.options["interaction"]["hideEdgesOnDrag"]
    assert all(":" not in n["label"] for n in net.nodes if n["shape"] == "dot")
    assert not any("short" in n for n in net.nodes)  # numbers only: no words to fit


def test_colours_scales_widths_and_critical_edges():
    graph = state_graph(
        group_steps(rows=400)[lambda d: d["group_id"] == "task-0"], rule=OutcomeRule()
    )
    net = build_network(graph, success_reward=10.0)
    assert min(e["width"] for e in net.edges) >= MIN_EDGE_WIDTH
    states = graph.nodes["kind"] == "state"
    values = graph.nodes.loc[states, "value"]
    assert net.legend["value"]["lo"] == values.min() and net.legend["value"]["hi"] == values.max()
    reward = build_network(graph, style=DrawStyle(value_scale="reward"), success_reward=10.0)
    assert (reward.legend["value"]["lo"], reward.legend["value"]["hi"]) == (0.0, 10.0)
    # the five critical transitions carry their rank (the page draws "#1"… on the edge)
    ranked = sorted(e["rank"] for e in net.edges if e.get("rank"))
    assert ranked == [1, 2, 3, 4, 5]
    top = critical_transitions(graph, 5)
    assert {e["id"]: e["rank"] for e in net.edges if e.get("rank")} == {
        f"e{graph.edges.index.get_loc(i)}": r for i, r in zip(top.index, top["rank"],
                                                              strict=True)}
    assert not any(e.get("label", "").startswith("#") for e in net.edges if e["from"] != e["to"])
    colours = {
        mode: [
            e["color"]
            for e in build_network(
                graph, style=DrawStyle(edge_color=mode), success_reward=10.0
            ).edges
        ]
        for mode in EDGE_COLOR_MODES
    }
    assert len({tuple(c) for c in colours.values()}) == 3
    share = build_network(graph, style=DrawStyle(edge_color="success_share"), success_reward=10.0)
    assert share.legend["edge"] == {"lo": 0.0, "hi": 1.0,
                                    "name": EDGE_COLOR_MODES["success_share"]}
    with pytest.raises(ValueError, match="edge_color"):
        DrawStyle(edge_color="nope")


def test_state_labels_are_the_distinguishing_key_words_and_wrap():
    graph = state_graph(tiny_steps(), rule=OutcomeRule())
    net = build_network(graph, success_reward=10.0)
    labels = {n["id"]: n["label"] for n in net.nodes}
    assert labels[0].startswith("0: ") and "s0" in labels[0]
    assert all(len(line) <= 22 for label in labels.values() for line in label.split("\n"))
    # the short form a zoomed-out view cuts to its room: one line, no function words
    alfworld = pd.DataFrame({
        "group_id": "g", "traj_id": ["a", "a", "b"], "t": [0, 1, 0],
        "state_key": ["You are in the middle of a room. You see a bed 1.",
                      "You arrive at drawer 3. The drawer 3 is closed.",
                      "You are in the middle of a room. You see a bed 1."],
        "action": ["go to drawer 3", "open drawer 3", "look"],
        "episode_reward": [10.0, 10.0, 0.0], "is_action_valid": True})
    shorts = {n["id"]: n.get("short") for n in build_network(
        state_graph(alfworld, rule=OutcomeRule()), success_reward=10.0).nodes}
    assert shorts[0] == "0: middle room" and shorts[1] == "1: arrive drawer 3"
    assert [shorts[k] for k in shorts if k > 1] == [None, None]  # terminals: their kind


def test_a_highlighted_trajectorys_own_edges_show_its_own_steps_advantage():
    graph = state_graph(
        group_steps(rows=400)[lambda d: d["group_id"] == "task-0"], rule=OutcomeRule()
    )
    traj = sorted(graph.steps["traj_id"].unique())[1]
    hl = trajectory_highlight(graph, traj)
    assert hl.trajectories == (traj,)
    data = network_data(graph, hl, style=DrawStyle(edge_color="adv"), success_reward=10.0)
    assert data["legend"]["edge"]["name"] == "A of the highlighted trajectory's own steps"
    limit = symmetric_limit(graph.steps["adv"].to_numpy())
    assert data["legend"]["edge"]["hi"] == limit  # the scale of every step's A
    mine = graph.steps[graph.steps["traj_id"] == traj]
    own = mine.groupby(["node", "action", "next_node"])["adv"].mean()
    colours = {(e["from"], e["to"], e["title"].split("\n")[1][len("action: "):]): e["color"]
               for e in data["edges"]}
    for (source, action, target), a in own.items():
        want = diverging_colors(np.array([a]), limit, EDGE_SCALE)[0]
        assert colours[(source, target, action)] == want
    # other colourings, or no highlighted trajectory, keep the edge's own numbers
    assert network_data(graph, hl, success_reward=10.0)["legend"]["edge"]["name"] == "TD error"
    plain = network_data(graph, style=DrawStyle(edge_color="adv"), success_reward=10.0)
    assert plain["legend"]["edge"]["name"] == EDGE_COLOR_MODES["adv"]


def test_self_loops_sit_above_their_node_and_a_selected_one_reaches_past_the_ring():
    graph = state_graph(tiny_steps(), rule=OutcomeRule())
    loops = graph.edges.index[graph.edges["source"] == graph.edges["target"]]
    net = build_network(graph, success_reward=10.0)
    angles = [net.edges[i]["selfReference"]["angle"] for i in loops]
    assert all(0 < a < np.pi for a in angles)  # above the node, away from its label
    chosen = int(loops[0])
    node = int(graph.edges.loc[chosen, "source"])
    picked = build_network(graph, Highlight(node=node, edge=chosen), success_reward=10.0)
    edge = picked.edges[chosen]
    size = next(n["size"] for n in picked.nodes if n["id"] == node)
    assert edge["color"] == HIGHLIGHT_COLOR
    assert edge["selfReference"]["size"] >= size + SELECTED_LOOP_REACH - 0.1
    assert edge["selfReference"]["renderBehindTheNode"] is False
    # the selected node keeps its own colour under the selection ring
    drawn = next(n for n in picked.nodes if n["id"] == node)
    assert drawn["color"]["highlight"] == {"background": drawn["color"]["background"],
                                           "border": HIGHLIGHT_COLOR}


def test_at_most_sixty_edges_at_full_strength_the_rest_quiet_until_all_edges():
    from tests.app.layout_groups import layout_graph

    graph = layout_graph(30)
    assert len(graph.edges) > FULL_EDGES
    data = network_data(graph, success_reward=10.0)
    quiet = [e for e in data["edges"] if e.get("quiet")]
    strong = [e for e in data["edges"] if not e.get("quiet")]
    assert len(strong) == FULL_EDGES and data["legend"]["quiet"] == len(quiet)
    assert all(e["color"] == QUIET_EDGE and e["fullColor"] != QUIET_EDGE for e in quiet)
    # the critical transitions and the most travelled edges are the strong ones
    assert set(data["legible"]["edges"]) <= {e["id"] for e in strong}
    counts = graph.edges["count"].to_numpy()
    quiet_rows = [int(e["id"][1:]) for e in quiet]
    strong_rows = [int(e["id"][1:]) for e in strong if e["id"] not in data["legible"]["edges"]]
    assert counts[quiet_rows].max() <= counts[strong_rows].min()
    # a highlighted trajectory: its own edges full, the rest faded (none quiet)
    path = trajectory_highlight(graph, [str(graph.steps["traj_id"].iloc[0])])
    lit = network_data(graph, path, success_reward=10.0)
    assert not any(e.get("quiet") for e in lit["edges"])
