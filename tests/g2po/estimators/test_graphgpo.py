"""GraphGPO: distances by hand (self-loop, cycle, a state that cannot reach success, one
trajectory, one step), and equal to verl-agent's recipe on random step tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from g2po import compute_advantages
from tests.g2po import reference
from tests.g2po.builders import CYCLE, TWO, trajectories

R2 = 1 / math.sqrt(2)
# s3 cannot reach success: an invalid self-loop, then failure.
UNREACHABLE = {"a": (10, [("s0", "x", True), ("s1", "y", True)]),
               "c": (0, [("s3", "look", False), ("s3", "x", True)])}


def test_two_trajectories():
    out = compute_advantages(trajectories(TWO), "graphgpo")  # rows a0 a1 b0 b1 b2
    # d(success)=0, d(s1)=1, d(s0)=d(s2)=2; failure cannot reach success: largest finite + 1 = 3
    assert out["distance"].tolist() == [1, 0, 2, 1, 3]
    assert out["return"].tolist() == pytest.approx([1, 10, 0.1, 1, 0.01])
    # anchors s0 = {a0, b0}, s1 = {a1, b2}; s2 = {b1} alone
    assert out["adv_step"].tolist() == pytest.approx([R2, R2, -R2, 0, -R2], abs=1e-5)
    ep = [6 / math.sqrt(30)] * 2 + [-4 / math.sqrt(30)] * 3
    assert out["adv_ep"].tolist() == pytest.approx(ep, rel=1e-5)
    assert out["adv"].tolist() == pytest.approx(
        [e + s for e, s in zip(ep, out["adv_step"])], rel=1e-5)


def test_unreachable_state_and_self_loop():
    out = compute_advantages(trajectories(UNREACHABLE), "graphgpo")  # rows a0 a1 c0 c1
    assert out["distance"].tolist() == [1, 0, 3, 3]
    assert out["return"].tolist() == pytest.approx([1, 10, 0.01 - 0.1, 0.01])
    norm = compute_advantages(trajectories(UNREACHABLE), "graphgpo", normalize_distance=True)
    # exponent d(s') - d(s) + 1: a0 1-2+1, a1 0-1+1, c0 3-3+1 (minus the penalty), c1 3-3+1
    assert norm["return"].tolist() == pytest.approx([10, 10, 0.9, 1])


def test_cycle():
    out = compute_advantages(trajectories(CYCLE), "graphgpo", gamma=0.5)  # a0..a3 b0 b1
    assert out["distance"].tolist() == [1, 2, 1, 0, 1, 3]
    assert out["return"].tolist() == pytest.approx([5, 2.5, 5, 10, 5, 1.25])
    # s0's anchor group {a0, a2, b0} all lead to s1: equal returns, advantage 0
    assert out["adv_step"].iloc[[0, 2, 4]].tolist() == [0.0, 0.0, 0.0]


def test_one_failed_trajectory_and_one_step():
    out = compute_advantages(trajectories({"a": (0, [("s0", "x", True), ("s1", "y", True)])}),
                             "graphgpo")
    assert out["distance"].tolist() == [1, 1]  # nothing reaches success: 0 + 1
    assert out["adv"].tolist() == [0.0, 0.0]
    one = compute_advantages(trajectories({"a": (10, [("s0", "x", True)])}), "graphgpo")
    assert one["return"].tolist() == [10.0]
    assert one["adv"].tolist() == [pytest.approx(10 / (1 + 1e-6), rel=1e-12)]


def test_weights():
    steps = trajectories(TWO)
    base = compute_advantages(steps, "graphgpo")
    out = compute_advantages(steps, "graphgpo", omega_e=0.0, omega_s=2.0)
    np.testing.assert_allclose(out["adv"], 2 * base["adv_step"])


def test_similarity_merges_the_graph_but_not_the_anchor_groups():
    spec = {"a": (10, [("room one", "x", True), ("room two", "y", True)]),
            "b": (0, [("room one!", "x", False), ("room two!", "y", True)])}
    exact = compute_advantages(trajectories(spec), "graphgpo")
    merged = compute_advantages(trajectories(spec), "graphgpo", state_key="similarity:0.9")
    assert exact["distance"].tolist() == [1, 0, 3, 3]
    # "room one!" and "room two!" merge into "room one" and "room two" in the graph
    assert merged["distance"].tolist() == [1, 0, 1, 3]
    assert merged["return"].tolist() == pytest.approx([1, 10, 0.9, 0.01])
    # a0 (1) and b0 (0.9) would differ in a merged anchor group; exact anchors keep them alone
    assert merged["adv_step"].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("params", [{}, {"mode": "mean_norm"}, {"normalize_distance": True},
                                    {"gamma": 0.2, "omega_e": 0.5, "penalty": 0.0}])
def test_equals_the_original_on_random_tables(params):
    for seed in range(12):
        steps = reference.random_steps(seed)
        got = compute_advantages(steps, "graphgpo", **params)
        want = reference.graphgpo_original(steps, **params)
        np.testing.assert_allclose(got["adv"], want.loc[steps.index], rtol=1e-9, atol=1e-9,
                                   err_msg=f"seed {seed}")
