"""Graph value iteration by hand, including a cycle."""

from __future__ import annotations

import pytest

from g2po import compute_advantages
from tests.g2po.builders import CYCLE, TWO, trajectories, z

G = 0.95


def test_two_trajectories():
    out = compute_advantages(trajectories(TWO), "value_iteration")  # rows a0 a1 b0 b1 b2
    v_s1 = G * (10 + 0) / 2  # s1 -> success | failure
    v_s2 = G * v_s1  # s2 -> s1
    v_s0 = G * (v_s1 + v_s2) / 2  # s0 -> s1 | s2
    assert out["node_value"].tolist() == pytest.approx([v_s0, v_s1, v_s0, v_s2, v_s1])
    td = [G * v_s1 - v_s0, G * 10 - v_s1, G * v_s2 - v_s0, G * v_s1 - v_s2, 0 - v_s1]
    assert out["td_error"].tolist() == pytest.approx(td)
    assert out["adv"].tolist() == pytest.approx(z(td))


def test_cycle_converges_to_the_fixed_point():
    out = compute_advantages(trajectories(CYCLE), "value_iteration")  # rows a0 a1 a2 a3 b0 b1
    # s0 -> s1 always; s1 -> s0 | success | failure, a third each:
    # V1 = γ/3 (γ V1 + 10)  =>  V1 = (10γ/3) / (1 - γ²/3)
    v_s1 = (10 * G / 3) / (1 - G**2 / 3)
    v_s0 = G * v_s1
    assert out["node_value"].tolist() == pytest.approx([v_s0, v_s1, v_s0, v_s1, v_s0, v_s1])


def test_gamma_one_is_refused():
    with pytest.raises(ValueError, match="gamma"):
        compute_advantages(trajectories(CYCLE), "value_iteration", gamma=1.0)


def test_graph_gae_by_hand():
    lam = 0.5
    out = compute_advantages(trajectories(TWO), "graph_gae", lam=lam)  # rows a0 a1 b0 b1 b2
    d = out["td_error"].tolist()
    k = G * lam
    gae = [d[0] + k * d[1], d[1], d[2] + k * d[3] + k * k * d[4], d[3] + k * d[4], d[4]]
    assert out["gae"].tolist() == pytest.approx(gae)
    assert out["adv"].tolist() == pytest.approx(z(gae))
    vi = compute_advantages(trajectories(TWO), "value_iteration")
    assert d == pytest.approx(vi["td_error"].tolist())


def test_graph_gae_lambda_zero_is_the_one_step_td():
    steps = trajectories(CYCLE)
    zero = compute_advantages(steps, "graph_gae", lam=0.0)
    vi = compute_advantages(steps, "value_iteration")
    assert zero["adv"].tolist() == pytest.approx(vi["adv"].tolist(), abs=1e-12)


def test_graph_gae_one_step_and_one_trajectory():
    one = compute_advantages(trajectories({"a": (10, [("s0", "x", True)])}), "graph_gae")
    assert one["gae"].tolist() == pytest.approx([G * 10 - G * 10])  # V(s0) = γ·10: δ = 0
    assert one["adv"].tolist() == [0.0]
    lone = compute_advantages(trajectories({"a": TWO["a"]}), "graph_gae", lam=1.0)
    assert lone["gae"].tolist() == pytest.approx([0.0, 0.0], abs=1e-12)  # V is exact there


def test_graph_gae_lambda_is_checked():
    with pytest.raises(ValueError, match="lam"):
        compute_advantages(trajectories(TWO), "graph_gae", lam=1.5)


def test_graph_gae_self_loop_and_a_state_that_cannot_reach_success():
    spec = {"a": (10, [("s0", "x", True)]), "c": (0, [("s3", "look", False), ("s3", "x", True)])}
    out = compute_advantages(trajectories(spec), "graph_gae", lam=0.5)  # rows a0 c0 c1
    # V(s0) = γ·10; s3 -> s3 | failure, half each: V(s3) = γ/2·V(s3) => 0
    assert out["node_value"].tolist() == pytest.approx([G * 10, 0.0, 0.0])
    assert out["td_error"].tolist() == pytest.approx([0.0, 0.0, 0.0])
    assert out["adv"].tolist() == [0.0, 0.0, 0.0]
