"""G2PO against numbers worked out by hand from docs/estimators.md."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from g2po import compute_advantages
from tests.g2po.builders import CYCLE, THREE, TWO, trajectories, z

G = 0.95
EPS = 1e-6


def col(frame: pd.DataFrame, name: str) -> list[float]:
    return frame[name].tolist()


def test_two_trajectories_sharing_states():
    out = compute_advantages(trajectories(TWO))  # rows: a0 a1 b0 b1 b2
    # step values: a0 = γ²·10, a1 = γ·10, b = 0; nodes s0 = {a0, b0}, s1 = {a1, b2}, s2 = {b1}
    v_s0, v_s1, v_s2 = 9.025 / 2, 9.5 / 2, 0.0
    assert col(out, "step_value") == pytest.approx([9.025, 9.5, 0, 0, 0])
    assert col(out, "node_value") == pytest.approx([v_s0, v_s1, v_s0, v_s2, v_s1])
    next_value = [v_s1, 10.0, v_s2, v_s1, 0.0]
    assert col(out, "next_value") == pytest.approx(next_value)
    td = [v_s1 - v_s0, 10 - v_s1, v_s2 - v_s0, v_s1 - v_s2, 0 - v_s1]
    assert col(out, "td_error") == pytest.approx(td)
    # node-centric: s0 compares a0 (4.75) with b0 (0); s1 compares a1 (10) with b2 (0)
    r2 = 1 / math.sqrt(2)
    assert col(out, "adv_nc") == pytest.approx([r2, r2, -r2, 0.0, -r2], abs=1e-6)
    assert col(out, "adv_ec") == pytest.approx(z(td))
    ep = z([10, 10, 0, 0, 0])
    assert ep[0] == pytest.approx(6 / math.sqrt(30), rel=1e-5)
    assert col(out, "adv_ep") == pytest.approx(ep)
    combined = [e + n + c for e, n, c in zip(ep, col(out, "adv_nc"), z(td))]
    assert col(out, "adv") == pytest.approx(combined)


def test_invalid_action_self_loop_and_three_trajectories():
    out = compute_advantages(trajectories(THREE))  # rows: a0 a1 c0 c1 c2 b0 b1 b2
    v_s0 = 9.025 / 4  # a0 = γ²·10, c0 = c1 = b0 = 0
    v_s1 = 9.5 / 3  # a1 = γ·10, c2 = b2 = 0
    v_s2 = 0.0
    nxt = [v_s1, 10.0, v_s0, v_s1, 0.0, v_s2, v_s1, 0.0]
    assert col(out, "next_value") == pytest.approx(nxt)
    # s0's reference set: a0, c0 (invalid: minus the penalty), c1, b0
    s0 = z([v_s1, v_s0 - 0.1, v_s1, v_s2])
    s1 = z([10.0, 0.0, 0.0])
    assert col(out, "adv_nc") == pytest.approx([s0[0], s1[0], s0[1], s0[2], s1[1], s0[3], 0.0,
                                               s1[2]])
    node = [v_s0, v_s1, v_s0, v_s0, v_s1, v_s0, v_s2, v_s1]
    assert col(out, "adv_ec") == pytest.approx(z([n - v for n, v in zip(nxt, node)]))
    assert col(out, "adv_ep") == pytest.approx(z([10, 10, -0.1, 0, 0, 0, 0, 0]))


def test_cycle():
    out = compute_advantages(trajectories(CYCLE))  # rows: a0 a1 a2 a3 b0 b1
    a = [G**4 * 10, G**3 * 10, G**2 * 10, G * 10]
    v_s0 = (a[0] + a[2] + 0) / 3
    v_s1 = (a[1] + a[3] + 0) / 3
    assert col(out, "node_value") == pytest.approx([v_s0, v_s1, v_s0, v_s1, v_s0, v_s1])
    nxt = [v_s1, v_s0, v_s1, 10.0, v_s1, 0.0]
    assert col(out, "next_value") == pytest.approx(nxt)
    s0 = z([v_s1, v_s1, v_s1])  # all equal: 0
    assert s0 == [0.0, 0.0, 0.0]
    s1 = z([v_s0, 10.0, 0.0])
    assert col(out, "adv_nc") == pytest.approx([0, s1[0], 0, s1[1], 0, s1[2]], abs=1e-9)


def test_group_of_one_trajectory():
    out = compute_advantages(trajectories({"a": TWO["a"]}))
    # every node is a singleton; the episode term sees two equal scores
    assert col(out, "adv_nc") == [0.0, 0.0]
    assert col(out, "adv_ep") == [0.0, 0.0]
    td = [9.5 - 9.025, 10 - 9.5]
    assert col(out, "adv_ec") == pytest.approx(z(td))
    assert col(out, "adv") == pytest.approx(z(td))


@pytest.mark.parametrize("mode, expected", [("mean_std_norm", 10 / (1 + EPS)),
                                            ("mean_norm", 10.0)])
def test_single_step_row_uses_mean_zero_std_one(mode, expected):
    out = compute_advantages(trajectories({"a": (10, [("s0", "x", True)])}), mode=mode)
    assert out["adv_ep"].tolist() == [pytest.approx(expected, rel=1e-12)]
    assert out["adv_nc"].tolist() == [0.0]
    assert out["adv_ec"].tolist() == [0.0]
    assert out["adv"].tolist() == [pytest.approx(expected, rel=1e-12)]


def test_trajectory_of_one_step_beside_a_longer_one():
    spec = {"a": (10, [("s0", "x", True)]), "b": (0, [("s0", "z", True), ("s1", "y", True)])}
    out = compute_advantages(trajectories(spec))  # rows: a0 b0 b1
    v_s0 = (G * 10 + 0) / 2
    assert col(out, "next_value") == pytest.approx([10.0, 0.0, 0.0])
    assert col(out, "td_error") == pytest.approx([10 - v_s0, 0 - v_s0, 0.0])
    assert col(out, "adv_nc") == pytest.approx([1 / math.sqrt(2), -1 / math.sqrt(2), 0.0],
                                               abs=1e-6)


def test_all_rewards_equal():
    spec = {k: (10, v[1]) for k, v in TWO.items()}
    out = compute_advantages(trajectories(spec))
    assert np.allclose(out["adv_ep"], 0.0)
    assert np.isfinite(out["adv"]).all()


def test_mean_norm_mode_and_weight():
    steps = trajectories(TWO)
    out = compute_advantages(steps, mode="mean_norm", w=0.8)
    v_s0, v_s1 = 9.025 / 2, 9.5 / 2
    td = [v_s1 - v_s0, 10 - v_s1, 0 - v_s0, v_s1 - 0, 0 - v_s1]
    mean_td = sum(td) / 5
    assert col(out, "adv_ec") == pytest.approx([d - mean_td for d in td])
    assert col(out, "adv_nc") == pytest.approx([v_s1 / 2, 5.0, -v_s1 / 2, 0.0, -5.0])
    assert col(out, "adv_ep") == pytest.approx([6, 6, -4, -4, -4])
    assert col(out, "adv") == pytest.approx(
        [e + 0.8 * (n + c) for e, n, c in zip(col(out, "adv_ep"), col(out, "adv_nc"),
                                              col(out, "adv_ec"))]
    )


def test_terminal_reward_rule_uses_the_episode_reward():
    spec = {"a": (0.6, [("s0", "x", True)]), "b": (0.2, [("s0", "y", True)])}
    binary = compute_advantages(trajectories(spec))
    reward = compute_advantages(trajectories(spec), terminal="reward")
    assert binary["next_value"].tolist() == [0.0, 0.0]
    assert reward["next_value"].tolist() == [0.6, 0.2]


def test_terminal_rules_agree_on_binary_rewards():
    steps = trajectories(THREE)
    a = compute_advantages(steps, terminal="binary")
    b = compute_advantages(steps, terminal="reward")
    pd.testing.assert_frame_equal(a, b)


def test_reference_defaults():
    """Defaults are the authors' implementation: γ 0.95, w 1, mean_std_norm, p 0.1, success 10."""
    steps = trajectories(THREE)
    explicit = compute_advantages(steps, gamma=0.95, w=1.0, mode="mean_std_norm", penalty=0.1,
                                  success_reward=10.0, terminal="binary")
    pd.testing.assert_frame_equal(compute_advantages(steps), explicit)


def test_success_reward_changes_the_terminal():
    spec = {"a": (1, [("s0", "x", True)]), "b": (0, [("s0", "y", True)])}
    out = compute_advantages(trajectories(spec), success_reward=1.0)
    assert out["next_value"].tolist() == [1.0, 0.0]
    assert out["success"].tolist() == [True, False]


@pytest.mark.parametrize("bad", [{"gamma": 0.0}, {"gamma": 1.5}, {"mode": "zscore"},
                                 {"terminal": "other"}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        compute_advantages(trajectories(TWO), **bad)


@pytest.mark.parametrize("mode", ["mean_std_norm", "mean_norm"])
def test_equals_the_authors_implementation(mode):
    """Nala-YN/G2PO's core_g2po.py on random tables, w from 0 to 2; where it returns NaN (a group
    of one step row) we return the finite value of the spec."""
    from tests.g2po import reference

    nan_seen = 0
    for seed in range(16):
        steps = reference.random_steps(seed)
        for w in (0.0, 0.8, 2.0):
            got = compute_advantages(steps, mode=mode, w=w)["adv"]
            want = reference.g2po_original(steps, w=w, mode=mode).loc[steps.index]
            nan = want.isna().to_numpy()
            nan_seen += int(nan.sum())
            np.testing.assert_allclose(got[~nan], want[~nan], rtol=1e-9, atol=5e-8)
            assert np.isfinite(got).all()
    single = trajectories({"a": (10, [("s0", "x", True)])})
    assert reference.g2po_original(single).isna().all()
    assert compute_advantages(single)["adv"].tolist() == [pytest.approx(10 / (1 + EPS))]
