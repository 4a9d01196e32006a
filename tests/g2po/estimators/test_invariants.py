"""Properties every registered estimator keeps (found through the registry, so a new estimator is
covered without touching this file: every table carries a synthetic value in each step column an
estimator declares), and agreement with the loop-by-loop references."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2po import compute_advantages, estimator_params, list_estimators, register_estimator
from g2po.errors import StepTableError
from g2po.estimators import registry
from g2po.index import MAX_ABS_REWARD
from tests.g2po import reference
from tests.g2po.builders import CYCLE, THREE, TWO, with_declared_columns
from tests.g2po.builders import trajectories as plain_trajectories


def trajectories(spec: dict, group: str = "g") -> pd.DataFrame:
    """:func:`tests.g2po.builders.trajectories` with every declared step column."""
    return with_declared_columns(plain_trajectories(spec, group))

BUILT_IN = ["g2po", "g2po_nc", "g2po_ec", "g2po_ep", "grpo", "grpo_steps", "rloo", "gigpo",
            "graphgpo", "value_iteration", "graph_gae", "graphhca", "hgpo"]
ALL = list_estimators()


@st.composite
def step_tables(draw, max_groups: int = 3, rewards=st.sampled_from([0.0, 10.0])):
    rows = []
    for g in range(draw(st.integers(1, max_groups))):
        for i in range(draw(st.integers(1, 4))):
            reward = draw(rewards)
            for t in range(draw(st.integers(1, 6))):
                rows.append({
                    "group_id": f"g{g}", "traj_id": f"r{i}", "t": t,
                    "state_key": draw(st.sampled_from(["s0", "s1", "s2", "s3"])),
                    "action": draw(st.sampled_from(["go", "take", "look"])),
                    "episode_reward": reward,
                    "is_action_valid": draw(st.booleans()),
                })
    return with_declared_columns(pd.DataFrame(rows))


finite_rewards = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
fast = settings(max_examples=40, deadline=None)


def _all(steps: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {name: compute_advantages(steps, name) for name in ALL}


def _numeric(frame: pd.DataFrame) -> np.ndarray:
    return frame.select_dtypes("number").to_numpy(dtype=float)


# ---- agreement with the spec's transcriptions ------------------------------------------------

@fast
@given(step_tables(), st.sampled_from(["mean_std_norm", "mean_norm"]),
       st.sampled_from([0.8, 1.0]), st.sampled_from(["binary", "reward"]))
def test_g2po_matches_reference(steps, mode, w, terminal):
    got = compute_advantages(steps, mode=mode, w=w, terminal=terminal)
    want = reference.g2po(steps, mode=mode, w=w, terminal=terminal)
    for col in want.columns:
        np.testing.assert_allclose(got[col], want[col], rtol=1e-9, atol=1e-9, err_msg=col)


@fast
@given(step_tables(rewards=finite_rewards))
def test_outcome_peers_match_reference(steps):
    np.testing.assert_allclose(compute_advantages(steps, "grpo")["adv"], reference.grpo(steps),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(compute_advantages(steps, "rloo")["adv"], reference.rloo(steps),
                               rtol=1e-9, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(step_tables())
def test_graph_values_match_reference(steps):
    got = compute_advantages(steps, "value_iteration")
    want = reference.value_iteration(steps)
    np.testing.assert_allclose(got["node_value"], want["node_value"], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(got["adv"], want["adv"], rtol=1e-6, atol=1e-6)
    gae, want_gae = compute_advantages(steps, "graph_gae", lam=0.7), reference.graph_gae(steps,
                                                                                         lam=0.7)
    np.testing.assert_allclose(gae["gae"], want_gae["gae"], rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(gae["adv"], want_gae["adv"], rtol=1e-5, atol=1e-5)
    hca, want_hca = compute_advantages(steps, "graphhca", w=0.5), reference.graphhca(steps, w=0.5)
    np.testing.assert_allclose(hca["credit"], want_hca["credit"], rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(hca["adv"], want_hca["adv"], rtol=1e-5, atol=1e-5)


# ---- invariants, for every registered estimator ----------------------------------------------

def test_every_built_in_is_registered():
    assert set(BUILT_IN) <= set(ALL)


@fast
@given(step_tables(rewards=finite_rewards), st.randoms(use_true_random=False))
def test_row_order_does_not_change_any_result(steps, rnd):
    shuffled = steps.sample(frac=1.0, random_state=rnd.randint(0, 2**31))
    for name, out in _all(steps).items():
        again = compute_advantages(shuffled, name).loc[steps.index]
        pd.testing.assert_frame_equal(out, again, check_exact=False, rtol=1e-9, atol=1e-9,
                                      obj=name)


@fast
@given(step_tables(max_groups=3))
def test_groups_do_not_influence_each_other(steps):
    together = _all(steps)
    for _, alone_steps in steps.groupby("group_id"):
        for name, out in _all(alone_steps).items():
            pd.testing.assert_frame_equal(out, together[name].loc[alone_steps.index],
                                          check_exact=False, rtol=1e-9, atol=1e-9, obj=name)


@fast
@given(step_tables(rewards=finite_rewards))
def test_never_nan_or_inf(steps):
    for name, out in _all(steps).items():
        assert np.isfinite(_numeric(out)).all(), name


@pytest.mark.parametrize("name", ALL)
def test_special_shapes_stay_finite(name):
    """One step, one trajectory, all-equal rewards, a self-loop, a cycle."""
    tables = [trajectories({"a": (10, [("s0", "x", True)])}),
              trajectories({"a": TWO["a"]}),
              trajectories({k: (10, v[1]) for k, v in TWO.items()}),
              trajectories(THREE), trajectories(CYCLE)]
    for steps in tables:
        assert np.isfinite(_numeric(compute_advantages(steps, name))).all()


def _two_groups(reward_h: float) -> pd.DataFrame:
    return pd.concat([trajectories(THREE),
                      trajectories({k: (reward_h * (v[0] > 0), v[1]) for k, v in TWO.items()},
                                   group="h")], ignore_index=True)


@pytest.mark.parametrize("name", ALL)
def test_a_huge_reward_in_another_group_changes_nothing(name):
    """Groups are independent exactly: compare bit for bit, not to a tolerance."""
    alone = compute_advantages(trajectories(THREE), name)
    for huge in (3.3e16, 1e150):
        together = compute_advantages(_two_groups(huge), name).iloc[:len(alone)]
        pd.testing.assert_frame_equal(together, alone, check_exact=True, obj=name)
        assert np.isfinite(_numeric(compute_advantages(_two_groups(huge), name))).all()


@pytest.mark.parametrize("name", ALL)
def test_mixed_magnitudes_do_not_depend_on_row_order(name):
    steps = pd.concat([trajectories({"a": (-1e16, [("s0", "x", True), ("s1", "y", True)]),
                                     "b": (10, [("s0", "z", True)]),
                                     "c": (1e16, [("s1", "x", False), ("s0", "y", True)])}),
                       trajectories(TWO, group="h")], ignore_index=True)
    out = compute_advantages(steps, name)
    for seed in range(3):
        again = compute_advantages(steps.sample(frac=1.0, random_state=seed), name)
        pd.testing.assert_frame_equal(again.loc[steps.index], out, check_exact=True, obj=name)


def _scale_free(name: str) -> dict | None:
    """Parameters under which an estimator's ``adv`` does not change when rewards are scaled;
    None where the success reward or the raw scale enters the formula."""
    params = estimator_params(name)
    if name == "rloo" or "success_reward" in params:
        return None
    chosen: dict = {"penalty": 0.0} if "penalty" in params else {}
    if "mode" in params:
        chosen["mode"] = "mean_std_norm"
    return chosen


@pytest.mark.parametrize("name", ALL)
def test_rewards_up_to_the_bound_stay_finite(name):
    spec = {"a": (1.0, [("s0", "x", True), ("s1", "y", True)]),
            "b": (-0.5, [("s0", "z", False), ("s2", "w", True), ("s1", "y", True)]),
            "c": (0.25, [("s1", "q", True)])}
    small = trajectories(spec)
    for scale in (1e100, MAX_ABS_REWARD):
        big = small.assign(episode_reward=small["episode_reward"] * scale)
        out = compute_advantages(big, name)
        assert np.isfinite(_numeric(out)).all(), (name, scale)
        params = _scale_free(name)
        if params is not None:
            np.testing.assert_allclose(compute_advantages(big, name, **params)["adv"],
                                       compute_advantages(small, name, **params)["adv"],
                                       rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", ALL)
def test_rewards_beyond_the_bound_are_a_clear_error(name):
    steps = trajectories(TWO).assign(episode_reward=lambda f: f["episode_reward"] * 1e300)
    with pytest.raises(StepTableError, match="'episode_reward' exceeds the supported magnitude"):
        compute_advantages(steps, name)


BAD_NUMBERS = [math.inf, -math.inf, math.nan, "x", None, complex(1, 1), True, [1.0]]


@pytest.mark.parametrize("name", ALL)
def test_bad_parameters_are_a_clear_error_naming_the_parameter(name):
    steps = trajectories(TWO)
    for key, default in estimator_params(name).items():
        if isinstance(default, bool):
            bad = ["yes", 1.0, None]
        elif isinstance(default, (int, float)):
            bad = BAD_NUMBERS
        elif isinstance(default, str):
            bad = [3, None, "no-such-choice"]
        else:
            continue
        for value in bad:
            with pytest.raises(ValueError, match=f"parameter '{key}'"):
                compute_advantages(steps, name, **{key: value})


def test_user_registered_estimators_get_the_same_checks():
    @register_estimator("user_scaled", overwrite=True)
    def user_scaled(ix, scale: float = 1.0, flag: bool = False):
        return {"adv": np.full(ix.n_steps, scale)}

    try:
        steps = trajectories(TWO)
        assert compute_advantages(steps, "user_scaled", scale=2)["adv"].tolist() == [2.0] * 5
        for value in (math.inf, math.nan, "2", None, complex(2, 0)):
            with pytest.raises(ValueError, match="parameter 'scale'"):
                compute_advantages(steps, "user_scaled", scale=value)
        with pytest.raises(ValueError, match="parameter 'flag'"):
            compute_advantages(steps, "user_scaled", flag="false")

        @register_estimator("user_overflow", overwrite=True)
        def user_overflow(ix):
            return {"adv": np.full(ix.n_steps, np.inf)}

        with pytest.raises(ValueError, match="non-finite values in column 'adv'"):
            compute_advantages(steps, "user_overflow")
    finally:
        registry._REGISTRY.pop("user_scaled", None)
        registry._REGISTRY.pop("user_overflow", None)


def test_parameters_keep_their_types():
    steps = trajectories(TWO)
    a = compute_advantages(steps, "g2po", w=np.float32(0.5), gamma=np.float64(0.9))
    b = compute_advantages(steps, "g2po", w=0.5, gamma=0.9)
    pd.testing.assert_frame_equal(a, b)
    assert compute_advantages(steps, "gigpo", penalty_in_return=np.bool_(True)) is not None


@fast
@given(step_tables(rewards=finite_rewards), st.sampled_from(["mean_std_norm", "mean_norm"]))
def test_g2po_with_w_zero_is_its_episode_term(steps, mode):
    out = compute_advantages(steps, w=0.0, mode=mode)
    np.testing.assert_array_equal(out["adv"], out["adv_ep"])


def test_train_steps_are_separate_groups():
    """The same group_id at two training steps is two groups."""
    base = pd.DataFrame({"group_id": "g", "traj_id": ["a", "b"], "t": 0, "state_key": "s",
                         "action": "x", "episode_reward": [10.0, 0.0], "is_action_valid": True})
    two = pd.concat([base.assign(train_step=1),
                     base.assign(train_step=2, episode_reward=[0.0, 10.0])], ignore_index=True)
    out = compute_advantages(two, "grpo")
    assert out["adv"].round(4).tolist() == [0.7071, -0.7071, -0.7071, 0.7071]


@pytest.mark.parametrize("name", ALL)
def test_empty_table_gives_empty_columns(name):
    steps = pd.DataFrame({"group_id": [], "traj_id": [], "t": [], "state_key": [], "action": [],
                          "episode_reward": [], "is_action_valid": []})
    assert len(compute_advantages(with_declared_columns(steps), name)) == 0


SUCCESS_RULED = [n for n in ALL if "success_reward" in estimator_params(n)]


def test_every_estimator_with_a_success_reward_takes_the_threshold_rule():
    assert {"g2po", "graphgpo", "value_iteration", "graph_gae", "graphhca"} <= set(SUCCESS_RULED)
    for name in SUCCESS_RULED:
        assert estimator_params(name)["success_threshold"] is None, name


@fast
@given(step_tables(), st.sampled_from(SUCCESS_RULED), st.sampled_from([0.5, 5.0, 10.0]))
def test_a_threshold_between_the_two_rewards_changes_nothing(steps, name, threshold):
    pd.testing.assert_frame_equal(compute_advantages(steps, name),
                                  compute_advantages(steps, name, success_threshold=threshold))


@pytest.mark.parametrize("name", SUCCESS_RULED)
def test_the_threshold_makes_a_lower_reward_a_success(name):
    low = trajectories(TWO)
    low["episode_reward"] = low["episode_reward"].replace(10.0, 8.0)
    assert set(low["episode_reward"]) == {0.0, 8.0}
    as_ten = trajectories(TWO)
    by_threshold = compute_advantages(low, name, success_threshold=8.0)
    changed = not compute_advantages(low, name).equals(by_threshold)
    assert changed == (name != "g2po_ep")  # the episode term reads R_i, not the success flag
    # the columns that depend on the outcome only through the success flag are those of R = 10
    flag_only = [c for c in ("adv_step", "return", "distance", "success_prob", "potential",
                             "credit", "adv_credit") if c in by_threshold.columns]
    pd.testing.assert_frame_equal(by_threshold[flag_only],
                                  compute_advantages(as_ten, name)[flag_only])
    for bad in ("8", True, math.inf):
        with pytest.raises(ValueError, match="success_threshold"):
            compute_advantages(low, name, success_threshold=bad)
