"""GiGPO: by hand, and equal to verl-agent's implementation on random step tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po import compute_advantages
from g2po.estimators.gigpo import discounted_returns
from g2po.index import index_steps
from tests.g2po import reference
from tests.g2po.builders import CYCLE, THREE, TWO, trajectories

G = 0.95


def test_two_trajectories_mean_norm():
    out = compute_advantages(trajectories(TWO), "gigpo")  # rows a0 a1 b0 b1 b2
    assert out["return"].tolist() == pytest.approx([G * 10, 10, 0, 0, 0])
    # anchors: s0 = {a0: 9.5, b0: 0}, s1 = {a1: 10, b2: 0}, s2 = {b1}
    assert out["adv_step"].tolist() == pytest.approx([4.75, 5, -4.75, 0, -5])
    assert out["adv_ep"].tolist() == pytest.approx([6, 6, -4, -4, -4])
    assert out["adv"].tolist() == pytest.approx([10.75, 11, -8.75, -4, -9])


def test_penalty_comes_after_discounting():
    """verl-agent discounts the environment rewards, then subtracts p from each step's own
    return; a later invalid action does not lower earlier steps."""
    spec = {"a": (10, [("s0", "x", True), ("s1", "y", False), ("s2", "z", True)])}
    out = compute_advantages(trajectories(spec), "gigpo")
    assert out["return"].tolist() == pytest.approx([G**2 * 10, G * 10 - 0.1, 10])
    old = compute_advantages(trajectories(spec), "gigpo", penalty_in_return=True)
    # the old reading: r = (0, -0.1, 10) discounted: the penalty reaches step 0 as well
    assert old["return"].tolist() == pytest.approx([G**2 * 10 - G * 0.1, G * 10 - 0.1, 10])


def test_self_loop_and_three_trajectories():
    out = compute_advantages(trajectories(THREE), "gigpo")  # rows a0 a1 c0 c1 c2 b0 b1 b2
    # c0 is an invalid self-loop: its own return is 0 - 0.1; c1, c2 are untouched
    assert out["return"].tolist() == pytest.approx([G * 10, 10, -0.1, 0, 0, 0, 0, 0])
    s0 = [G * 10, -0.1, 0, 0]  # a0 c0 c1 b0
    mean = sum(s0) / 4
    assert out["adv_step"].iloc[[0, 2, 3, 5]].tolist() == pytest.approx([v - mean for v in s0])


def test_one_trajectory_and_one_step():
    out = compute_advantages(trajectories({"a": TWO["a"]}), "gigpo")
    assert out["adv"].tolist() == [0.0, 0.0]  # every anchor a singleton, equal scores
    one = compute_advantages(trajectories({"a": (10, [("s0", "x", True)])}), "gigpo")
    assert one["adv"].tolist() == [10.0]  # the episode term's single row: mean 0


def test_omega_and_mode():
    steps = trajectories(TWO)
    out = compute_advantages(steps, "gigpo", omega=0.5, mode="mean_std_norm")
    r2 = 1 / np.sqrt(2)
    assert out["adv_step"].tolist() == pytest.approx([r2, r2, -r2, 0, -r2], abs=1e-6)
    assert out["adv"].tolist() == pytest.approx(
        (out["adv_ep"] + 0.5 * out["adv_step"]).tolist())


def test_discounted_returns_do_not_leak_between_trajectories():
    steps = pd.concat([trajectories(CYCLE), trajectories(TWO, group="h")], ignore_index=True)
    steps = steps.sample(frac=1.0, random_state=3)  # any row order
    ix = index_steps(steps)
    rewards = np.arange(len(steps), dtype=float)
    rewards[0] = 1e308  # a huge reward in one trajectory stays there
    got = pd.Series(discounted_returns(ix, rewards, 0.9), index=steps.index)
    frame = steps.assign(r=rewards)
    for _, traj in frame.groupby(["group_id", "traj_id"]):
        traj = traj.sort_values("t")
        expected, acc = [], 0.0
        for r in reversed(traj["r"].tolist()):
            acc = r + 0.9 * acc
            expected.append(acc)
        assert got.loc[traj.index].tolist() == pytest.approx(expected[::-1])


def test_a_huge_reward_elsewhere_does_not_flip_signs():
    """Issue 12: with 3.3e16 in another group, a group with rewards 1 and 0 got flipped signs."""
    small = trajectories({"a": (1, [("s0", "x", True), ("s1", "y", True)]),
                          "b": (0, [("s0", "z", True), ("s1", "y", True)])})
    huge = trajectories({"a": (3.3e16, [("s0", "x", True)] * 1)}, group="h")
    alone = compute_advantages(small, "gigpo")
    together = compute_advantages(pd.concat([huge, small], ignore_index=True), "gigpo")
    assert together["adv"].iloc[1:].tolist() == alone["adv"].tolist()
    assert alone["adv"].iloc[0] > 0 > alone["adv"].iloc[2]


@pytest.mark.parametrize("mode, omega, penalty", [("mean_norm", 1.0, 0.1),
                                                  ("mean_std_norm", 1.0, 0.1),
                                                  ("mean_norm", 0.5, 0.0),
                                                  ("mean_std_norm", 2.0, 0.3)])
def test_equals_verl_agent_on_random_tables(mode, omega, penalty):
    for seed in range(12):
        steps = reference.random_steps(seed)
        got = compute_advantages(steps, "gigpo", mode=mode, omega=omega, penalty=penalty)
        want = reference.gigpo_original(steps, mode=mode, omega=omega, penalty=penalty)
        np.testing.assert_allclose(got["adv"], want.loc[steps.index], rtol=1e-9, atol=1e-9,
                                   err_msg=f"seed {seed}")


def test_similarity_equals_are_similar_and_ignores_row_order():
    for seed in range(4):
        steps = reference.random_steps(seed, long_keys=True, max_traj=4, max_len=5)
        want = reference.gigpo_original(steps, similarity=0.95)
        got = compute_advantages(steps, "gigpo", state_key="similarity")
        np.testing.assert_allclose(got["adv"], want.loc[steps.index], rtol=1e-9, atol=1e-9)
        shuffled = steps.sample(frac=1.0, random_state=seed)
        again = compute_advantages(shuffled, "gigpo", state_key="similarity")
        np.testing.assert_allclose(again["adv"].loc[steps.index], got["adv"], rtol=0, atol=0)


def test_similarity_uses_difflib_autojunk():
    """Keys of 200+ characters: the original's ratio (autojunk on) decides, not autojunk=False."""
    from difflib import SequenceMatcher

    a = ("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
         "cabinet 2, a countertop 1, a drawer 1, a fridge 1, a garbagecan 1, a microwave 1, a "
         "shelf 1, a sinkbasin 1, a stoveburner 1, and a toaster 1. Your task is to: put a "
         "clean mug in the coffeemachine.")
    b = a.replace("cabinet 2", "cabinet 3").replace("clean mug", "hot apple").replace(
        "toaster 1", "toaster 2")
    with_junk = SequenceMatcher(None, b, a).ratio()
    without = SequenceMatcher(None, b, a, autojunk=False).ratio()
    assert with_junk != without
    threshold = (with_junk + without) / 2
    steps = trajectories({"p": (10, [(a, "go", True)]), "q": (0, [(b, "go", True)])})
    merged = compute_advantages(steps, "gigpo", state_key=f"similarity:{threshold}")
    want = reference.gigpo_original(steps, similarity=threshold)
    np.testing.assert_allclose(merged["adv"], want.loc[steps.index], atol=1e-12)
    assert merged["adv_step"].tolist() == [0.0, 0.0]  # autojunk's lower ratio: not merged


def test_logged_step_rewards_as_verl_agent():
    for seed in range(6):
        steps = reference.random_steps(seed)
        steps["step_reward"] = np.random.default_rng(seed).choice([0.0, 0.5, 1.0], len(steps))
        got = compute_advantages(steps, "gigpo", step_rewards=True, mode="mean_std_norm")
        want = reference.gigpo_original(steps, step_rewards=True, mode="mean_std_norm")
        np.testing.assert_allclose(got["adv"], want.loc[steps.index], rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="needs a 'step_reward' column"):
        compute_advantages(trajectories(TWO), "gigpo", step_rewards=True)
