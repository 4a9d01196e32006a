import numpy as np

from app.graph import (
    layout_positions,
    network_data,
)
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import group_steps


def test_layout_is_layered_by_depth_and_cached_by_structure():
    graph = state_graph(
        group_steps(rows=400)[lambda d: d["group_id"] == "task-0"], rule=OutcomeRule()
    )
    pos = layout_positions(graph)
    assert layout_positions(graph) is pos  # same structure: the cached layout
    assert np.isfinite(pos[["x", "y"]].to_numpy()).all()
    depth = graph.nodes["depth"].to_numpy()
    # read band by band, left to right, the columns follow the depth
    order = np.argsort(depth, kind="stable")
    reading = pos["band"].to_numpy()[order] * 1e6 + pos["x"].to_numpy()[order]
    assert (np.diff(reading) >= 0).all()
    assert not pos[["x", "y"]].duplicated().any()


def _drawn_paths(data: dict, layout: dict):
    """Node centres, radii, edge ends and sampled paths of one of the data's drawings, as
    vis-network draws them (the routed curves of that drawing)."""
    from g2po.analysis.geometry import CCW, CW, STRAIGHT, edge_paths

    ids = [n["id"] for n in data["nodes"]]
    where = {i: k for k, i in enumerate(ids)}
    xy = np.column_stack([layout["x"], layout["y"]])
    radius = np.array([n["size"] for n in data["nodes"]], dtype=float)
    src = np.array([where[e["from"]] for e in data["edges"]])
    dst = np.array([where[e["to"]] for e in data["edges"]])
    kinds = {"curvedCW": CW, "curvedCCW": CCW}
    kind = np.array([kinds.get(s.get("type"), STRAIGHT) if s.get("enabled") else STRAIGHT
                     for s in layout["smooth"]])
    roundness = np.array([s.get("roundness", 0.0) for s in layout["smooth"]])
    return xy, radius, src, dst, edge_paths(xy[src], xy[dst], kind, roundness)


def test_coin_collectors_critical_transitions_cross_no_node():
    """The bundled coin_collector, training step 1, group s1: transition "Basement →
    truncated" was drawn through the success star and the failure square (read "Basement →
    success → failure → truncated"). In every drawing the page may choose, no critical
    transition (and no edge drawn at all) crosses a node it does not touch."""
    import loaders
    from app.options import SAMPLE_DIR
    from g2po.analysis.geometry import edges_through_nodes

    log = loaders.open_log(SAMPLE_DIR / "coin_collector")
    graph = state_graph(log.load_group(1, "coin_collector-level10-s1"), rule=OutcomeRule())
    data = network_data(graph, success_reward=10.0)
    critical = [i for i, e in enumerate(data["edges"]) if e["id"] in data["legible"]["edges"]]
    kinds = graph.nodes["kind"]
    into_terminal = [i for i in critical if kinds.loc[data["edges"][i]["to"]] != "state"]
    assert into_terminal  # the case of the issue: a critical transition into a terminal
    straight_through = 0
    for layout in data["layouts"]:
        xy, radius, src, dst, paths = _drawn_paths(data, layout)
        straight = edges_through_nodes(paths[:, [0, -1]], xy, radius, src, dst)
        straight_through += int(straight[critical].sum())
        through = edges_through_nodes(paths, xy, radius, src, dst)
        shown = ~np.array(layout["blocked"]) | np.array([not e.get("quiet")
                                                         for e in data["edges"]])
        assert not through[critical].any(), layout["aspect"]
        assert not (through & shown).any(), layout["aspect"]
    assert straight_through  # drawn straight, a critical transition would cross a node
