"""GRPO and RLOO by hand."""

from __future__ import annotations

import math

import pytest

from g2po import compute_advantages
from tests.g2po.builders import THREE, TWO, trajectories


def test_grpo_two_trajectories():
    out = compute_advantages(trajectories(TWO), "grpo")  # rows a0 a1 b0 b1 b2
    r2 = 1 / math.sqrt(2)  # (10 - 5) / std(10, 0) with std = 5·√2
    assert out["adv"].tolist() == pytest.approx([r2, r2, -r2, -r2, -r2], rel=1e-5)


def test_grpo_three_trajectories_weighs_trajectories_not_steps():
    out = compute_advantages(trajectories(THREE), "grpo")  # a: 10; c, b: 0
    mean, std = 10 / 3, math.sqrt(((20 / 3) ** 2 + 2 * (10 / 3) ** 2) / 2)
    assert out["adv"].iloc[0] == pytest.approx((10 - mean) / (std + 1e-6))
    assert out["adv"].iloc[-1] == pytest.approx((0 - mean) / (std + 1e-6))


def test_grpo_lone_trajectory_and_equal_rewards_get_zero():
    assert compute_advantages(trajectories({"a": TWO["a"]}), "grpo")["adv"].tolist() == [0, 0]
    equal = {k: (10, v[1]) for k, v in TWO.items()}
    assert compute_advantages(trajectories(equal), "grpo")["adv"].abs().max() == 0


def test_grpo_mean_norm():
    out = compute_advantages(trajectories(TWO), "grpo", mode="mean_norm")
    assert out["adv"].tolist() == [5, 5, -5, -5, -5]


def test_rloo():
    out = compute_advantages(trajectories(THREE), "rloo")  # a: 10 - 0; c, b: 0 - 5
    assert out["adv"].tolist() == [10, 10, -5, -5, -5, -5, -5, -5]
    lone = compute_advantages(trajectories({"a": TWO["a"]}), "rloo")
    assert lone["adv"].tolist() == [0, 0]


def test_grpo_steps_is_verl_agents_multi_turn_baseline():
    """One row per step, score R - p·invalid over all step rows: long trajectories weigh more."""
    out = compute_advantages(trajectories(THREE), "grpo_steps")  # a0 a1 c0 c1 c2 b0 b1 b2
    scores = [10, 10, -0.1, 0, 0, 0, 0, 0]
    mean = sum(scores) / 8
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / 7)
    assert out["adv"].tolist() == pytest.approx([(s - mean) / (std + 1e-6) for s in scores])
    ep = compute_advantages(trajectories(THREE), "g2po_ep")["adv"]
    assert out["adv"].tolist() == ep.tolist()


def test_grpo_steps_single_row_and_mean_norm():
    one = compute_advantages(trajectories({"a": (10, [("s0", "x", True)])}), "grpo_steps")
    assert one["adv"].tolist() == [pytest.approx(10 / (1 + 1e-6), rel=1e-12)]  # as verl: R/(1+ε)
    out = compute_advantages(trajectories(TWO), "grpo_steps", mode="mean_norm", penalty=0.0)
    assert out["adv"].tolist() == pytest.approx([6, 6, -4, -4, -4])
