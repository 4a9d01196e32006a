import numpy as np
import pandas as pd

from g2po.analysis.layout import (
    BAND_GAP,
    columns_per_band,
    count_crossings,
    layered_layout,
    wrap_bands,
)
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps


def crossings(graph, pos) -> int:
    edges = graph.edges[graph.edges["source"] != graph.edges["target"]]
    where = pd.Series(np.arange(len(pos)), index=pos.index)
    return count_crossings(pos["column"].to_numpy(), pos["rank"].to_numpy(dtype=float),
                           where[edges["source"]].to_numpy(), where[edges["target"]].to_numpy())


def test_columns_follow_depth_without_wrapping_and_positions_are_distinct():
    steps = pd.DataFrame({"group_id": "g", "traj_id": "a", "t": range(60),
                          "state_key": [f"s{i}" for i in range(60)], "action": "go",
                          "episode_reward": 10.0, "is_action_valid": True})
    graph = state_graph(steps, rule=OutcomeRule())
    pos = layered_layout(graph.nodes, graph.edges)
    states = graph.nodes["kind"] == "state"
    # one column per depth, left to right, never wrapped into bands
    assert (np.diff(pos.loc[states, "x"].to_numpy()) > 0).all()
    assert pos.loc[states, "y"].nunique() == 1
    assert not pos[["x", "y"]].duplicated().any()


def test_sweeps_reduce_crossings_and_the_layout_is_deterministic():
    steps = synthetic_steps(3000, rollouts=16, max_len=30, states_per_task=60, key_chars=10,
                            seed=4)
    graph = state_graph(steps[steps["group_id"] == steps["group_id"].iloc[0]], rule=OutcomeRule())
    before = crossings(graph, layered_layout(graph.nodes, graph.edges, sweeps=0))
    pos = layered_layout(graph.nodes, graph.edges)
    after = crossings(graph, pos)
    assert after < before
    pd.testing.assert_frame_equal(pos, layered_layout(graph.nodes, graph.edges))
    assert np.isfinite(pos[["x", "y"]].to_numpy()).all()


def test_a_crossing_pair_is_uncrossed():
    # a0 -> b1 and a1 -> b0 cross in first-seen order; one sweep puts them straight
    nodes = pd.DataFrame({"depth": [0, 0, 1, 1]})
    edges = pd.DataFrame({"source": [0, 1], "target": [3, 2], "count": 1})
    pos = layered_layout(nodes, edges)
    assert count_crossings(pos["column"].to_numpy(), pos["rank"].to_numpy(dtype=float),
                           np.array([0, 1]), np.array([3, 2])) == 0


def test_empty_graph():
    pos = layered_layout(pd.DataFrame({"depth": []}, dtype=int),
                         pd.DataFrame({"source": [], "target": [], "count": []}, dtype=int))
    assert pos.empty


def test_wrapped_bands_fill_the_aspect_and_keep_the_reading_order():
    steps = synthetic_steps(3000, rollouts=16, max_len=40, states_per_task=300, key_chars=10,
                            seed=2)
    graph = state_graph(steps[steps["group_id"] == steps["group_id"].iloc[0]], rule=OutcomeRule())
    flat = layered_layout(graph.nodes, graph.edges)
    for aspect in (1.35, 2.4):
        pos = wrap_bands(flat, aspect)
        assert pos["band"].max() > 0  # a long strip is wrapped
        width = pos["x"].max() - pos["x"].min() + 210.0
        height = pos["y"].max() - pos["y"].min() + 95.0
        assert abs(np.log(width / height / aspect)) < abs(np.log(
            (flat["x"].max() + 210.0) / (flat["y"].max() - flat["y"].min() + 95.0) / aspect))
        # read band by band, left to right, columns come in depth order; bands do not overlap
        reading = pos["band"] * 1e6 + pos["x"]
        order = np.argsort(pos["column"].to_numpy(), kind="stable")
        assert (np.diff(reading.to_numpy()[order]) >= 0).all()
        lows = pos.groupby("band")["y"].min().to_numpy()
        highs = pos.groupby("band")["y"].max().to_numpy()
        assert (lows[1:] - highs[:-1] >= BAND_GAP * 95.0 - 1e-9).all()
        assert not pos[["x", "y"]].duplicated().any()
        pd.testing.assert_series_equal(pos["rank"], flat["rank"])  # one crossing reduction
    assert layered_layout(graph.nodes, graph.edges, aspect=2.4).equals(wrap_bands(flat, 2.4))


def test_bands_are_balanced_and_none_is_a_stub():
    # 41 columns: never 40 in one band and the terminals' column alone in the next
    per_band = columns_per_band([8] * 40 + [2], aspect=2.4)
    bands = -(-41 // per_band)
    assert 41 - per_band * (bands - 1) >= per_band - bands
    assert columns_per_band([1] * 10, aspect=100.0) == 10  # wide enough: one band


def test_the_terminals_stand_right_of_every_band_at_the_middle_of_their_height():
    steps = synthetic_steps(3000, rollouts=16, max_len=40, states_per_task=80, key_chars=10,
                            seed=2)
    graph = state_graph(steps[steps["group_id"] == steps["group_id"].iloc[0]], rule=OutcomeRule())
    flat = layered_layout(graph.nodes, graph.edges)
    pos = wrap_bands(flat, 2.05, last_apart=True)
    terminal = (graph.nodes["kind"] != "state").to_numpy()
    states = pos[~terminal]
    assert states["band"].max() > 0  # wrapped: the terminals would be in the last band
    assert (pos.loc[terminal, "x"] > states["x"].max()).all()  # right of every band
    middle = (states["y"].min() + states["y"].max()) / 2
    assert abs(pos.loc[terminal, "y"].mean() - middle) < 95.0
    assert (pos.loc[terminal, "band"] == states["band"].max() + 1).all()  # read last
    # two rows apart (the bands are tall enough): room for each terminal's label
    assert np.diff(np.sort(pos.loc[terminal, "y"].to_numpy())).min() == 2 * 95.0
    # the states wrap as without it, and the order inside every column is kept
    plain = wrap_bands(flat, 2.05)
    assert states["band"].max() <= plain["band"].max()
    pd.testing.assert_series_equal(pos["rank"], flat["rank"])
    assert not pos[["x", "y"]].duplicated().any()
