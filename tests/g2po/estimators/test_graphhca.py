"""GraphHCA by hand: success probabilities on the graph, log potentials, the weighted credit."""

from __future__ import annotations

import math

import pytest

from g2po import compute_advantages
from g2po.estimators.graphhca import PHI_FLOOR
from tests.g2po.builders import CYCLE, TWO, trajectories, z

G = 0.95


def phi(p: float) -> float:
    return math.log((p + PHI_FLOOR) / (1 + PHI_FLOOR))


def test_two_trajectories():
    out = compute_advantages(trajectories(TWO), "graphhca")  # rows a0 a1 b0 b1 b2
    p1 = G * (1 + 0) / 2  # s1 -> success | failure
    p2 = G * p1
    p0 = G * (p1 + p2) / 2
    assert out["success_prob"].tolist() == pytest.approx([p0, p1, p0, p2, p1])
    credit = [phi(p1) - phi(p0), phi(1) - phi(p1), phi(p2) - phi(p0), phi(p1) - phi(p2),
              phi(0) - phi(p1)]
    assert out["credit"].tolist() == pytest.approx(credit)
    grpo = compute_advantages(trajectories(TWO), "grpo")["adv"].tolist()
    assert out["adv"].tolist() == pytest.approx([g + c for g, c in zip(grpo, z(credit))])


def test_a_state_that_cannot_reach_success_and_a_self_loop():
    spec = {"a": (10, [("s0", "x", True)]), "c": (0, [("s3", "look", False), ("s3", "x", True)])}
    out = compute_advantages(trajectories(spec), "graphhca")  # rows a0 c0 c1
    assert out["success_prob"].tolist() == pytest.approx([G, 0.0, 0.0])
    assert out["potential"].tolist() == pytest.approx([phi(G), phi(0), phi(0)])
    assert out["credit"].tolist() == pytest.approx([phi(1) - phi(G), 0.0, 0.0])  # finite log


def test_cycle_and_gamma_one():
    out = compute_advantages(trajectories(CYCLE), "graphhca", gamma=1.0)  # a0..a3 b0 b1
    # s0 -> s1 always; s1 -> s0 | success | failure: p1 = (p0 + 1 + 0) / 3, p0 = p1 => p1 = 1/2
    assert out["success_prob"].tolist() == pytest.approx([0.5] * 6)


def test_weight_zero_is_grpo_and_one_step():
    steps = trajectories(TWO)
    assert compute_advantages(steps, "graphhca", w=0.0)["adv"].tolist() == \
        compute_advantages(steps, "grpo")["adv"].tolist()
    one = compute_advantages(trajectories({"a": (10, [("s0", "x", True)])}), "graphhca")
    assert one["adv"].tolist() == [0.0]


def test_one_trajectory():
    out = compute_advantages(trajectories({"a": TWO["a"]}), "graphhca")  # s0 -> s1 -> success
    assert out["success_prob"].tolist() == pytest.approx([G * G, G])
    credit = [phi(G) - phi(G * G), phi(1) - phi(G)]
    assert out["credit"].tolist() == pytest.approx(credit)
    assert out["adv"].tolist() == pytest.approx(z(credit))  # GRPO of a lone trajectory: 0
