import numpy as np

from g2po.analysis.geometry import (
    CCW,
    CW,
    ROUTE_CLEARANCE,
    STRAIGHT,
    check_drawing,
    check_view,
    control_points,
    edge_paths,
    edges_through_nodes,
    overlapping_nodes,
    route_edges,
    to_screen,
)


def test_a_curve_bends_to_the_side_its_kind_names_and_straight_stays_on_the_chord():
    start, end = np.array([[0.0, 0.0]] * 3), np.array([[100.0, 0.0]] * 3)
    via = control_points(start, end, np.array([STRAIGHT, CW, CCW]), np.array([0.0, 0.5, 0.5]))
    assert via[0].tolist() == [50.0, 0.0]
    assert via[1, 1] * via[2, 1] < 0  # the two curves bulge to opposite sides
    assert abs(abs(via[1, 1]) - abs(via[2, 1])) < 1e-9
    paths = edge_paths(start, end, np.array([STRAIGHT, CW, CCW]), np.array([0.0, 0.5, 0.5]))
    assert np.allclose(paths[:, 0], start) and np.allclose(paths[:, -1], end)


def test_an_edge_is_through_a_node_only_if_it_passes_within_its_radius():
    xy = np.array([[0.0, 0.0], [100.0, 0.0], [200.0, 0.0], [100.0, 40.0]])
    radius = np.full(4, 10.0)
    paths = edge_paths(xy[[0, 0, 1]], xy[[2, 3, 2]], np.zeros(3, int), np.zeros(3))
    through = edges_through_nodes(paths, xy, radius, np.array([0, 0, 1]), np.array([2, 3, 2]))
    # 0→2 crosses node 1; 0→3 and 1→2 touch only their own ends
    assert through.tolist() == [True, False, False]


def test_routing_clears_every_node_and_keeps_parallel_edges_apart():
    rng = np.random.default_rng(0)
    xy = np.stack(np.meshgrid(np.arange(5) * 200.0, np.arange(4) * 95.0), -1).reshape(-1, 2)
    radius = rng.uniform(8, 30, len(xy))
    src = np.array([0, 0, 0, 4, 15, 19, 3])
    dst = np.array([4, 4, 19, 0, 0, 10, 18])
    kind = np.array([CW, CW, STRAIGHT, CW, STRAIGHT, STRAIGHT, STRAIGHT])
    rnd = np.array([0.15, 0.3, 0.0, 0.15, 0.0, 0.0, 0.0])
    before = edges_through_nodes(edge_paths(xy[src], xy[dst], kind, rnd), xy, radius, src, dst)
    assert before.sum() >= 3
    near = edges_through_nodes(edge_paths(xy[src], xy[dst], kind, rnd), xy, radius, src, dst,
                               ROUTE_CLEARANCE)
    k2, r2 = route_edges(xy, radius, src, dst, kind, rnd)
    paths = edge_paths(xy[src], xy[dst], k2, r2)
    assert not edges_through_nodes(paths, xy, radius, src, dst).any()
    mids = paths[:3, paths.shape[1] // 2]  # the three edges between nodes 0 and 4 stay apart
    pair = [0, 1, 3]
    gaps = [np.hypot(*(paths[i, 12] - paths[j, 12])) for i in pair for j in pair if i < j]
    assert min(gaps) > 5, (mids, gaps)
    assert (r2[~near] == rnd[~near]).all()  # edges that were clear keep their shape


def test_overlaps_and_the_check_of_a_drawing_read_back_from_a_page():
    assert overlapping_nodes(np.array([[0.0, 0.0], [10.0, 0.0], [50.0, 0.0]]),
                             np.array([6.0, 6.0, 6.0])) == 1
    page = {"nodes": [{"id": 1, "x": 0, "y": 0, "r": 10, "labelPx": 11, "hasLabel": True},
                      {"id": 2, "x": 100, "y": 0, "r": 10, "labelPx": 0, "hasLabel": True},
                      {"id": 3, "x": 200, "y": 0, "r": 10, "labelPx": 14, "hasLabel": True}],
            "edges": [{"id": "e0", "from": 1, "to": 3, "points": [[0, 0], [200, 0]],
                       "strong": True, "labelPx": 12},
                      {"id": "e1", "from": 1, "to": 3, "points": [[0, 0], [200, 0]],
                       "strong": False, "labelPx": 0, "hidden": True},
                      {"id": "e2", "from": 2, "to": 2, "points": [], "strong": False,
                       "labelPx": 0}]}
    check = check_drawing(page)
    assert check.through == ("e0",)  # a hidden edge is not drawn, a self-loop never counts
    assert check.smallest_label_px == 11 and check.labels_drawn == 3
    assert check.labels_hidden == 1 and check.full_strength == 1 and check.edges == 3


def test_a_view_counts_what_it_shows_and_a_number_beside_another_nodes_label_is_stray():
    nodes = [{"id": 0, "x": 0, "y": 0, "r": 10, "shape": "diamond", "label": "0: start",
              "labelPx": 14, "labelBox": [-30, 12, 60, 16]},
             {"id": 31, "x": 200, "y": 0, "r": 10, "shape": "dot", "label": "31",
              "labelPx": 11, "labelBox": [190, 12, 20, 14]},
             {"id": 2, "x": 400, "y": 0, "r": 10, "shape": "star", "label": "success"},
             {"id": 3, "x": 900, "y": 0, "r": 10, "shape": "square", "label": "failure"}]
    on_edge = {"id": "e0", "from": 0, "to": 2, "strong": True, "critical": 1,
               "points": [[0, 0], [200, -60], [400, 0]], "labelBox": [190, -70, 20, 16]}
    beside = {"id": "e1", "from": 0, "to": 2, "strong": True, "critical": 2,
              "points": [[0, 0], [200, 60], [400, 0]], "labelBox": [212, 14, 20, 14]}
    leaving = {"id": "e2", "from": 31, "to": 2, "strong": True,
               "points": [[200, 0], [300, 400], [400, 0]]}
    geometry = {"view": {"x": 250, "y": 0}, "scale": 1.0, "width": 600, "height": 300,
                "nodes": nodes, "edges": [on_edge, beside, leaving]}
    view = check_view(geometry)
    assert (view.nodes_inside, view.nodes, view.terminals_inside, view.terminals) == (3, 4, 1, 2)
    # "#2" right of node 31's label reads "31#2", and is not on its own edge
    assert (view.labels_on_own_edge, view.critical_labels, view.stray_labels) == (1, 2, ("e1",))
    assert (view.critical_arcs_inside, view.critical_arcs, view.arcs_leaving) == (2, 2, 1)
    assert (view.worded_labels, view.states) == (1, 2)  # "0: start" has words, "31" not
    assert to_screen(geometry, np.array([[250.0, 0.0]])).tolist() == [[300.0, 150.0]]
