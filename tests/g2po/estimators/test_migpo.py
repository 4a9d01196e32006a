"""MiGPO: milestone rewards and segments by hand, equal to ZJU-REAL/BEACON's original on random
groups fed the way its trainer feeds them, and present everywhere an estimator appears with no
file but its own module naming it."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2po import compute_advantages
from g2po.analysis.compare import compare_estimators, contributions, explain_disagreements
from g2po.errors import StepTableError
from g2po.estimators import estimator_params, get_spec, list_estimators
from g2po.outcomes import OutcomeRule
from tests.g2po.builders import THREE, TWO, trajectories

EPS = 1e-6


# ---- the original's semantics, transcribed loop by loop -------------------------------------
#
# BEACON's trainer gathers a batch trajectory by trajectory, each in step order
# (TrajectoryCollector.gather_rollout_data), computes the step rewards from the per-step
# milestone flags (compute_migpo_step_rewards_dynamic), subtracts the invalid-action penalty
# from each step reward and from each row's episode score (apply_invalid_action_penalty), and
# calls compute_migpo_advantage(..., milestone_achieved=flags): episode_norm_reward over the
# uid's rows, segment_norm_reward over the (uid, segment) groups of build_segment_groups_dynamic.

def _batch_rows(steps: pd.DataFrame) -> list[dict]:
    """The table's rows in the original's batch order: trajectory by trajectory (each one of a
    ``(train_step, group_id)`` uid), each in step order."""
    keys = [c for c in ("train_step", "group_id", "traj_id") if c in steps.columns]
    ordered = steps.sort_values([*keys, "t"], kind="stable")
    rows = []
    for label, row in ordered.iterrows():
        uid = tuple(row[k] for k in keys[:-1])
        rows.append({"label": label, "uid": uid, "traj": (*uid, row["traj_id"]),
                     "reward": float(row["episode_reward"]),
                     "invalid": 0.0 if bool(row["is_action_valid"]) else 1.0,
                     "achieved": bool(row["milestone_achieved"])})
    return rows


def _step_rewards(rows: list[dict], gamma: float, reward: float) -> list[float]:
    """compute_migpo_step_rewards_dynamic: per trajectory, the steps from the segment's start
    to each milestone get reward·γ^(milestone − step); the steps after the last one keep 0."""
    out = [0.0] * len(rows)
    for traj in dict.fromkeys(r["traj"] for r in rows):
        where = [i for i, r in enumerate(rows) if r["traj"] == traj]
        milestones = [k for k, i in enumerate(where) if rows[i]["achieved"]]
        start = 0
        for m in milestones:
            for k in range(start, m + 1):
                out[where[k]] = (gamma ** (m - k)) * reward
            start = m + 1
    return out


def _segments(rows: list[dict]) -> list[tuple]:
    """build_segment_groups_dynamic: (uid, the flagged rows of the same trajectory before)."""
    return [(r["uid"], sum(1 for j in range(i) if rows[j]["traj"] == r["traj"]
                          and rows[j]["achieved"]))
            for i, r in enumerate(rows)]


def _normalise(values: list[float], keys: list, remove_std: bool, lone_mean_zero: bool
               ) -> list[float]:
    """The original's id2mean / id2std normalisation (torch.std: the unbiased std); a key of one
    row has std 1 and mean 0 (episode_norm_reward) or its own value (segment_norm_reward)."""
    by_key: dict = {}
    for key, v in zip(keys, values, strict=True):
        by_key.setdefault(key, []).append(v)
    stats = {}
    for key, vs in by_key.items():
        if len(vs) == 1:
            stats[key] = (0.0 if lone_mean_zero else vs[0], 1.0)
        else:
            stats[key] = (sum(vs) / len(vs), statistics.stdev(vs))
    out = []
    for key, v in zip(keys, values, strict=True):
        mean, std = stats[key]
        out.append(v - mean if remove_std else (v - mean) / (std + EPS))
    return out


def migpo_original(steps: pd.DataFrame, gamma: float = 0.99, omega: float = 1.0,
                   mode: str = "mean_norm", penalty: float = 0.1,
                   milestone_reward: float = 10.0) -> pd.DataFrame:
    """adv, adv_ep and adv_step of every row (indexed as ``steps``), as the original computes
    them in float64."""
    rows = _batch_rows(steps)
    remove_std = mode == "mean_norm"
    step = [r - penalty * row["invalid"]
            for r, row in zip(_step_rewards(rows, gamma, milestone_reward), rows, strict=True)]
    scores = [row["reward"] - penalty * row["invalid"] for row in rows]
    episode = _normalise(scores, [r["uid"] for r in rows], remove_std, lone_mean_zero=True)
    segment = _normalise(step, _segments(rows), remove_std, lone_mean_zero=False)
    adv = [e + omega * s for e, s in zip(episode, segment, strict=True)]
    return pd.DataFrame({"adv": adv, "adv_ep": episode, "adv_step": segment},
                        index=[r["label"] for r in rows]).loc[steps.index]


# ---- by hand ---------------------------------------------------------------------------------

def with_flags(spec: dict, flags: list[bool], group: str = "g") -> pd.DataFrame:
    return trajectories(spec, group).assign(milestone_achieved=flags)


def test_two_trajectories_by_hand():
    """a: s0 s1 (R 10), milestones at both steps; b: s0 s2 s1 (R 0), a milestone at step 1."""
    steps = with_flags(TWO, [True, True, False, True, False])  # rows a0 a1 b0 b1 b2
    out = compute_advantages(steps, "migpo", gamma=0.5)
    assert out["return"].tolist() == [10.0, 10.0, 5.0, 10.0, 0.0]
    assert out["segment"].tolist() == [0, 1, 0, 0, 1]
    assert out["to_milestone"].tolist() == [0, 0, 1, 0, -1]
    # segment 0: a0 10, b0 5, b1 10 (mean 25/3); segment 1: a1 10, b2 0 (mean 5)
    m0 = 25 / 3
    assert out["adv_step"].tolist() == pytest.approx([10 - m0, 5, 5 - m0, 10 - m0, -5])
    assert out["adv_ep"].tolist() == pytest.approx([6, 6, -4, -4, -4])  # mean 4, mean_norm
    assert out["adv"].tolist() == pytest.approx((out["adv_ep"] + out["adv_step"]).tolist())
    std = compute_advantages(steps, "migpo", gamma=0.5, mode="mean_std_norm", omega=0.5)
    s1 = statistics.stdev([10, 0])
    assert std["adv_step"].iloc[1] == pytest.approx(5 / (s1 + EPS))
    assert std["adv"].iloc[4] == pytest.approx(std["adv_ep"].iloc[4] - 0.5 * 5 / (s1 + EPS))


def test_penalty_steps_without_milestones_and_a_lone_step():
    spec = {"a": (10, [("s0", "x", False), ("s1", "y", True)]),
            "b": (0, [("s0", "x", True)])}
    out = compute_advantages(with_flags(spec, [False, False, False]), "migpo")
    # no milestone: every reward is 0 - 0.1·invalid, all in segment 0
    assert out["return"].tolist() == pytest.approx([-0.1, 0.0, 0.0])
    assert out["adv_step"].tolist() == pytest.approx([-0.1 + 0.1 / 3, 0.1 / 3, 0.1 / 3])
    lone = trajectories({"a": (10, [("s0", "x", False)])}).assign(milestone_achieved=True)
    alone = compute_advantages(lone, "migpo")
    # a group of one step row: the episode score itself (mean 0, std 1), no milestone term
    assert alone["adv_ep"].tolist() == [pytest.approx(9.9)]
    assert alone["adv_step"].tolist() == [0.0] and alone["return"].tolist() == [9.9]
    assert compute_advantages(lone, "migpo", mode="mean_std_norm")["adv"].tolist() == \
        [pytest.approx(9.9 / (1 + EPS))]


def test_gamma_zero_rewards_the_milestone_step_alone():
    steps = with_flags(TWO, [False, True, False, False, True])
    out = compute_advantages(steps, "migpo", gamma=0.0, penalty=0.0)
    assert out["return"].tolist() == [0.0, 10.0, 0.0, 0.0, 10.0]


# ---- equal to the original on random groups -------------------------------------------------

@st.composite
def flagged_tables(draw, max_groups: int = 3):
    """Random groups: one or several trajectories of one or more steps, rewards often equal,
    states that repeat (self-loops), invalid actions, milestones anywhere (none, every step),
    sometimes two training steps, rows in any order."""
    rows = []
    steps = draw(st.sampled_from([None, [1], [1, 2]]))
    for ts in steps or [None]:
        for g in range(draw(st.integers(1, max_groups))):
            p_flag = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
            for i in range(draw(st.integers(1, 4))):
                reward = draw(st.sampled_from([0.0, 10.0, 3.5, -2.0]))
                for t in range(draw(st.integers(1, 6))):
                    row = {"group_id": f"g{g}", "traj_id": f"r{i}", "t": t,
                           "state_key": draw(st.sampled_from(["s0", "s1", "s2"])),
                           "action": "x", "episode_reward": reward,
                           "is_action_valid": draw(st.booleans()),
                           "milestone_achieved": draw(st.floats(0, 1)) < p_flag}
                    rows.append(row if ts is None else {**row, "train_step": ts})
    frame = pd.DataFrame(rows)
    return frame.sample(frac=1.0, random_state=draw(st.integers(0, 1000)))


PARAMS = [{}, {"mode": "mean_std_norm"}, {"gamma": 0.95, "omega": 0.5, "penalty": 1.0},
          {"gamma": 0.5, "mode": "mean_std_norm", "penalty": 0.0, "milestone_reward": 1.0},
          {"gamma": 1.0, "omega": 2.0}, {"gamma": 0.0, "mode": "mean_std_norm"}]


@settings(max_examples=60, deadline=None)
@given(flagged_tables(), st.sampled_from(PARAMS))
def test_equals_the_original_on_random_groups(steps, params):
    """The spec asks 1e-4 in float64; the two agree to rounding."""
    got = compute_advantages(steps, "migpo", **params)
    want = migpo_original(steps, **params)
    for column in ("adv", "adv_ep", "adv_step"):
        np.testing.assert_allclose(got[column], want[column], rtol=1e-9, atol=1e-9,
                                   err_msg=column)


def test_equals_the_original_on_the_edge_shapes():
    tables = [
        trajectories({"a": (10, [("s0", "x", True)])}).assign(milestone_achieved=True),
        trajectories({"a": (0, [("s0", "x", True)]), "b": (0, [("s0", "x", False)])})
        .assign(milestone_achieved=[True, False]),  # one-step trajectories, equal rewards
        trajectories({"a": (10, [("s0", "x", True)] * 4), "b": (10, [("s0", "x", True)] * 2)})
        .assign(milestone_achieved=[False, True, True, False, False, False]),  # self-loops
        trajectories(THREE).assign(milestone_achieved=True),
        trajectories(THREE).assign(milestone_achieved=False),
    ]
    for steps in tables:
        for params in PARAMS:
            got = compute_advantages(steps, "migpo", **params)
            want = migpo_original(steps, **params)
            np.testing.assert_allclose(got["adv"], want["adv"], rtol=1e-9, atol=1e-9)
            assert np.isfinite(got.select_dtypes("number").to_numpy(dtype=float)).all()


# ---- checks ------------------------------------------------------------------------------------

def test_parameters_out_of_range_and_a_missing_column_are_clear_errors():
    steps = with_flags(TWO, [True] * 5)
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="parameter 'gamma' must be in \\[0, 1\\]"):
            compute_advantages(steps, "migpo", gamma=bad)
    with pytest.raises(ValueError, match="parameter 'milestone_reward' must be at most 1e\\+150"):
        compute_advantages(steps, "migpo", milestone_reward=1e200)
    for bad in (math.nan, "0.5", None):
        with pytest.raises(ValueError, match="parameter 'omega'"):
            compute_advantages(steps, "migpo", omega=bad)
    with pytest.raises(StepTableError, match="estimator 'migpo' needs the step column "
                                             "'milestone_achieved' \\(bool: True on the step "
                                             "whose action achieved a milestone"):
        compute_advantages(trajectories(TWO), "migpo")
    with pytest.raises(StepTableError, match="'milestone_achieved' is not boolean"):
        compute_advantages(trajectories(TWO).assign(milestone_achieved="maybe"), "migpo")


def test_huge_rewards_in_another_group_change_nothing():
    alone = with_flags(THREE, [True, False, False, True, True, False, True, False])
    other = with_flags(TWO, [True] * 5, group="h").assign(episode_reward=1e150)
    together = compute_advantages(pd.concat([alone, other], ignore_index=True), "migpo")
    pd.testing.assert_frame_equal(together.iloc[:len(alone)],
                                  compute_advantages(alone, "migpo"), check_exact=True)
    assert np.isfinite(together.select_dtypes("number").to_numpy(dtype=float)).all()


# ---- present everywhere, declared in its own module -----------------------------------------

def test_it_is_registered_with_every_declaration():
    spec = get_spec("migpo")
    assert "migpo" in list_estimators() and spec.title == "MiGPO"
    assert set(spec.params) == set(estimator_params("migpo"))
    assert [c.name for c in spec.columns] == ["milestone_achieved"]
    assert [p.label for p in spec.parts] == ["A^EP", "A^M"]
    assert "ZJU-REAL/BEACON migpo/core_migpo.py" in spec.original


def test_the_cli_computes_and_describes_it(tmp_path, capsys):
    from g2po.cli import main

    path = tmp_path / "steps.csv"
    with_flags(TWO, [True, True, False, True, False]).to_csv(path, index=False)
    assert main(["advantages", str(path), "-e", "migpo", "-e", "grpo", "--full"]) == 0
    printed = capsys.readouterr().out
    assert "migpo/adv" in printed and "migpo/adv_step" in printed
    assert main(["estimators", "migpo"]) == 0
    said = capsys.readouterr().out
    assert "needs the step column milestone_achieved (bool)" in said
    assert "part A^M (adv_step, × omega): milestone term" in said


def test_the_comparison_shows_and_explains_its_parts():
    steps = with_flags(THREE, [False, True, False, True, False, True, False, True])
    result = compare_estimators(steps, ["migpo", "grpo"], rule=OutcomeRule())
    assert result.parts["migpo"].columns.tolist() == ["A^EP", "A^M"]
    # rows by trajectory: a (F T), b (T F T), c (F T F)
    assert result.peer_sets["migpo"]["segment"].tolist() == [0, 0, 0, 1, 1, 0, 0, 1]
    shares = contributions(result, "migpo")
    np.testing.assert_allclose(shares.sum(axis=1), result.table["migpo"])
    why = explain_disagreements(result, "migpo", "grpo", result.table[["traj_id", "t"]])
    said = " ".join(why["why"])
    assert "milestone term A^M" in said
    assert "other steps with as many milestones behind them" in said


def test_both_trainers_accept_it():
    from g2po.trainers.config import TrainConfig
    from g2po.trainers.verl_backend.settings import estimator_settings, library_estimator

    local = TrainConfig(estimator="migpo", estimator_params={"omega": 0.5}).estimator_kwargs()
    assert local == {"penalty": 0.1, "omega": 0.5}  # γ 0.99 is MiGPO's own, not G2PO's
    assert library_estimator("migpo") == "migpo"
    settings_ = estimator_settings("migpo", {"migpo": {"gamma": 0.95, "omega": 1.0}})
    assert settings_.kwargs() == {"penalty": 0.1, "gamma": 0.95, "omega": 1.0}
    with pytest.raises(ValueError, match="parameter 'gamma' must be in"):
        estimator_settings("migpo", {"migpo": {"gamma": 2.0}})
