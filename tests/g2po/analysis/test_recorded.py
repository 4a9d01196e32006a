"""Recorded against recomputed credit: a trainer that recorded our recomputation is healthy
(float32 storage included); each way of breaking it is named, counted and fitted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.recorded import (
    CAUSES,
    GROUP_COLUMNS,
    KINDS,
    STEP_COLUMNS,
    NoRecordedAdvantageError,
    audit_recorded,
    step_words,
)
from g2po.estimators import compute_advantages, list_estimators, step_columns
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.synthetic import with_step_columns
from tests.g2po.analysis.groups import random_walks

RULE = OutcomeRule()
PARAMS = G2POParams()


@pytest.fixture(scope="module")
def walks() -> pd.DataFrame:
    steps = random_walks(groups=8, rollouts=6, length=6, invalid_rate=0.1, seed=3)
    # every column a registered estimator reads (MiGPO's milestones), so each can recompute
    steps = with_step_columns(steps, {c.name: c.dtype for c in step_columns().values()})
    # as a trainer records it: float32 (read back as float64)
    steps["advantage"] = compute_advantages(steps, "g2po")["adv"].to_numpy(np.float32) \
        .astype(np.float64)
    return steps


def audit(steps: pd.DataFrame, **kw):
    return audit_recorded(steps, rule=RULE, params=PARAMS, **kw)


def rows_of(steps: pd.DataFrame, group: str) -> np.ndarray:
    """The group's rows in trajectory, step order."""
    sub = steps[steps["group_id"] == group].sort_values(["traj_id", "t"])
    return sub.index.to_numpy()


def test_the_recomputation_stored_as_float32_is_healthy(walks):
    found = audit(walks)
    assert list(found.groups.columns) == GROUP_COLUMNS
    assert (found.groups["severity"] == 0).all() and (found.groups["kind"] == "").all()
    assert found.findings.empty and found.steps["matches"].all()
    assert found.run_text() == ["the recorded advantage equals g2po's recomputation on all 8 "
                                "groups"]
    # float32 arithmetic in a trainer (relative ~1e-6) passes too; a 1 % error does not
    noisy = walks.assign(advantage=walks["advantage"] * (1 + 2e-6))
    assert audit(noisy, fit=False).findings.empty
    off = walks.assign(advantage=walks["advantage"] * 1.01)
    assert len(audit(off, fit=False).findings) > 0


def test_each_breakage_is_named_with_its_evidence(walks):
    steps = walks.copy()
    adv = steps["advantage"].to_numpy(copy=True)
    traj = steps["traj_id"].to_numpy()
    g0 = rows_of(steps, "g0")  # zero all but each trajectory's last step (SkyRL #1507)
    last = np.r_[traj[g0][1:] != traj[g0][:-1], True]
    adv[g0[~last]] = 0.0
    g1 = rows_of(steps, "g1")
    adv[g1] = -adv[g1]
    g2 = rows_of(steps, "g2")  # shifted by one row: each row carries the previous row's value
    adv[g2] = np.roll(adv[g2], 1)
    g3 = rows_of(steps, "g3")  # each trajectory's last value on all its steps
    ends = pd.Series(adv[g3][np.r_[traj[g3][1:] != traj[g3][:-1], True]],
                     index=traj[g3][np.r_[traj[g3][1:] != traj[g3][:-1], True]])
    adv[g3] = ends.loc[traj[g3]].to_numpy()
    g4 = rows_of(steps, "g4")
    adv[g4[:3]] = np.inf
    steps["advantage"] = adv
    found = audit(steps, fit=False)
    kind = dict(zip(found.groups["group_id"], found.groups["kind"], strict=True))
    assert kind == {"g0": "zeroed", "g1": "negated", "g2": "misaligned", "g3": "broadcast",
                    "g4": "nonfinite", "g5": "", "g6": "", "g7": ""}
    row = found.groups.set_index("group_id")
    assert row.loc["g0", "zeroed"] == (~last & (np.abs(walks["advantage"].to_numpy()[g0])
                                                > 1e-4)).sum()
    assert row.loc["g1", "severity"] == pytest.approx(1.0)
    assert row.loc["g1", "sign_flips"] == row.loc["g1", "negated"] > 0
    assert row.loc["g2", "shift"] == "previous row" and row.loc["g2", "misaligned"] > 0
    assert row.loc["g3", "broadcast_trajs"] > 0
    assert row.loc["g4", "severity"] == 1.0 and row.loc["g4", "nonfinite"] == 3
    assert 0 < row.loc["g0", "severity"] < 1 and 0 < row.loc["g3", "severity"] < 1
    # worst first; the healthy groups last, with nothing to say
    assert list(found.groups["severity"]) == sorted(found.groups["severity"], reverse=True)
    assert (found.groups.tail(3)["reason"] == "").all()
    assert "recorded as 0" in row.loc["g0", "reason"] and row.loc["g0", "fix"]
    # per step: recorded beside recomputed, in the input's order and index
    assert list(found.steps.columns) == STEP_COLUMNS
    assert found.steps.index.equals(steps.index)
    np.testing.assert_array_equal(found.steps["recorded"], adv)
    assert set(found.steps.loc[g1, "cause"]) <= {"negated", ""}
    assert (found.steps.loc[g2, "neighbour"].isin([-1, 0])).all()


def test_a_shift_the_other_way_is_the_next_row(walks):
    steps = walks.copy()
    g2 = rows_of(steps, "g2")
    adv = steps["advantage"].to_numpy(copy=True)
    adv[g2] = np.roll(adv[g2], -1)
    found = audit(steps.assign(advantage=adv), fit=False).groups.set_index("group_id")
    assert found.loc["g2", "kind"] == "misaligned" and found.loc["g2", "shift"] == "next row"


def test_another_estimator_is_recognised_and_nothing_explains_noise(walks):
    steps = walks.copy()
    g5 = rows_of(steps, "g5")
    steps.loc[g5, "advantage"] = compute_advantages(steps.loc[g5], "gigpo")["adv"].to_numpy()
    g6 = rows_of(steps, "g6")
    steps.loc[g6, "advantage"] = np.random.default_rng(0).normal(size=len(g6))
    found = audit(steps).groups.set_index("group_id")
    assert found.loc["g5", "kind"] == "other_estimator" and found.loc["g5", "explained"]
    assert found.loc["g5", "best_fit"].startswith("gigpo(gamma=0.95, omega=1, mode=mean_norm")
    assert found.loc["g6", "kind"] == "differs" and not found.loc["g6", "explained"]
    assert "no registered estimator explains it" in found.loc["g6", "reason"]
    assert pd.isna(found.loc["g0", "best_fit"])  # healthy groups are not fitted


def test_a_run_trained_with_other_parameters_is_said_once(walks):
    steps = walks.assign(advantage=compute_advantages(walks, "g2po", gamma=0.9)["adv"])
    found = audit(steps)
    assert (found.groups["kind"] == "other_estimator").all()
    assert found.groups["best_fit"].str.startswith("g2po(gamma=0.9,").all()
    said = found.run_text()
    assert "on 8 of 8 groups" in said[0]
    assert said[1].startswith("most groups are reproduced by g2po(gamma=0.9,")
    # audited with the run's parameters, it is healthy
    again = audit_recorded(steps, rule=RULE, params=G2POParams(gamma=0.9))
    assert again.findings.empty


def test_estimator_parameters_and_missing_records(walks):
    steps = walks.assign(advantage=compute_advantages(walks, "gigpo", omega=0.5)["adv"])
    steps.loc[steps["group_id"] == "g7", "advantage"] = np.nan  # not recorded there
    found = audit(steps, estimator="gigpo", estimator_params={"omega": 0.5})
    assert found.findings.empty and found.params["omega"] == 0.5
    assert found.groups.set_index("group_id").loc["g7", "recorded"] == 0
    with pytest.raises(NoRecordedAdvantageError, match="no 'advantage' column"):
        audit(walks.drop(columns="advantage"))
    with pytest.raises(NoRecordedAdvantageError, match="every row null"):
        audit(walks.assign(advantage=np.nan))
    with pytest.raises(ValueError, match="'advantage' is not numeric"):
        audit(walks.assign(advantage="x"))


def test_row_order_does_not_change_the_findings(walks):
    steps = walks.copy()
    g1 = rows_of(steps, "g1")
    steps.loc[g1[::2], "advantage"] = 0.0
    want = audit(steps, fit=False).groups
    shuffled = steps.sample(frac=1.0, random_state=4)
    got = audit(shuffled, fit=False)
    pd.testing.assert_frame_equal(got.groups, want)
    assert got.steps.index.equals(shuffled.index)


def test_every_kind_and_cause_has_its_words():
    assert set(CAUSES) <= set(KINDS)
    for kind in KINDS.values():
        assert kind.title and kind.fix and kind.step and kind.evidence in GROUP_COLUMNS
        words = step_words({"cause": kind.name, "recorded": 0.5, "recomputed": -0.25})
        assert "0.5" in words and "0.25" in words
    assert step_words({"cause": "", "recorded": 1.0, "recomputed": 1.0}) == ""


@pytest.mark.parametrize("name", list_estimators())
def test_every_estimators_own_record_is_healthy(walks, name):
    params = G2POParams().for_estimator(name, RULE)
    steps = walks.assign(advantage=compute_advantages(walks, name, **params)["adv"]
                         .to_numpy(np.float32).astype(np.float64))
    found = audit(steps, estimator=name, fit=False)
    assert found.findings.empty and (found.groups["severity"] == 0).all()
