"""scripts/defect_runs_b.py plants what it says: each kind checked on the rows themselves (no
detection code involved), the recorded advantage right on healthy groups and broken as named,
and the run written where the loaders read it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.estimators import compute_advantages
from g2po.params import G2POParams
from loaders import LoadWarning, open_log, report_of
from tests.scripts import load_script

gen = load_script("defect_runs_b")


def paths(rows: pd.DataFrame) -> list[tuple]:
    """Each trajectory's (state, action) sequence."""
    return [tuple(zip(r["state_key"], r["action"], strict=True))
            for _, r in rows.sort_values("t").groupby("traj_id", sort=True)]


def ends(rows: pd.DataFrame) -> pd.DataFrame:
    """Each trajectory's last row."""
    return rows.sort_values("t").groupby("traj_id").tail(1)


@pytest.fixture(scope="module", params=gen.GRAPHS)
def run(request):
    return gen.make_run(3, train_steps=2, groups_per_step=17, group_size=8,
                        graph=request.param, scale="binary10", converged=0.3)


def groups_of(run, kind: str):
    steps, truth = run
    for row in truth[truth["kind"] == kind].itertuples():
        yield steps[(steps["train_step"] == row.train_step)
                    & (steps["group_id"] == row.group_id)]


def test_the_run_holds_every_kind_once_and_says_how_it_was_drawn(run):
    steps, truth = run
    assert sorted(truth.loc[~truth["family"].eq("healthy"), "kind"]) == sorted(gen.KINDS)
    assert (truth["kind"] == "converged").sum() == round(0.3 * (34 - len(gen.KINDS)))
    assert truth.attrs["run"]["group_size"] == 8 and truth.attrs["run"]["rule"].success_reward \
        == 10.0
    assert len(truth) == 34 and not truth.duplicated(["train_step", "group_id"]).any()
    for rows in groups_of(run, "healthy"):
        won = (ends(rows)["episode_reward"] == 10.0).sum()
        assert rows["traj_id"].nunique() == 8 and 0 < won < 8


def test_each_alarm_kind_is_in_the_rows(run):
    for rows in groups_of(run, "converged"):
        assert len(set(paths(rows))) == 1 and (rows["episode_reward"] == 10).all()
    for rows in groups_of(run, "collapsed_losing"):
        assert len(set(paths(rows))) == 1 and (rows["episode_reward"] == 0).all()
    for kind in ("no_signal", "penalty_only"):
        for rows in groups_of(run, kind):
            assert rows["episode_reward"].nunique() == 1 and (rows["episode_reward"] == 0).all()
            assert rows["is_action_valid"].all() == (kind == "no_signal")
    for rows in groups_of(run, "aliased"):
        ordered = rows.sort_values(["traj_id", "t"])
        nxt = ordered.groupby("traj_id")["state_key"].shift(-1)
        dark = ordered.assign(nxt=nxt)[ordered["state_key"] == "You are somewhere dark."]
        assert (dark.dropna().groupby("action")["nxt"].nunique() > 1).any()
    for rows in groups_of(run, "hub"):
        ordered = rows.sort_values(["traj_id", "t"])
        after_invalid = ~ordered.groupby("traj_id")["is_action_valid"].shift(1, fill_value=True)
        hub = ordered["state_key"] == "Nothing happens."
        assert hub.sum() >= 2 and (hub == after_invalid).all()
    for rows in groups_of(run, "truncation"):
        last = ends(rows)
        assert (~last["done"] & (last["episode_reward"] == 0)).sum() > 4
    for rows in groups_of(run, "no_merging"):
        assert rows["state_key"].is_unique


def test_each_integrity_kind_is_in_the_rows(run):
    for rows in groups_of(run, "mixed_tasks"):
        assert rows.loc[rows["t"] == 0, "state_key"].nunique() == 2
    for rows in groups_of(run, "history_key"):
        ordered = rows.sort_values(["traj_id", "t"])
        prev = ordered.groupby("traj_id")["state_key"].shift(1)
        later = prev.notna()
        assert all(k.startswith(p + " > ") for k, p in zip(ordered["state_key"][later],
                                                            prev[later], strict=True))
    for rows in groups_of(run, "partial_group"):
        assert rows["traj_id"].nunique() == 3
    for rows in groups_of(run, "duplicate_rows"):
        found = paths(rows)
        assert len(found) == 9 and len(set(found)) < 9
    for rows in groups_of(run, "length_weighted"):
        last = ends(rows).assign(length=lambda f: f["t"] + 1).sort_values("length")
        long, short = last.tail(2), last.head(6)  # 8 // 4 long rollouts, lost
        assert (long["episode_reward"] == 0).all() and (short["episode_reward"] == 10).sum() >= 4
        assert long["length"].min() >= 2 * short["length"].max()


def test_the_recorded_advantage_is_right_except_where_planted(run):
    steps, truth = run
    right = compute_advantages(steps, "g2po", **G2POParams().for_estimator(
        "g2po", truth.attrs["run"]["rule"]))["adv"].to_numpy()
    key = steps["train_step"].astype(str) + "|" + steps["group_id"]
    family = key.map(dict(zip(truth["train_step"].astype(str) + "|" + truth["group_id"],
                              truth["kind"], strict=True)))
    recorded = steps["advantage"].to_numpy()
    fine = ~family.str.startswith("rec_").to_numpy()
    np.testing.assert_array_equal(recorded[fine], right[fine].astype(np.float32))
    for kind, check in {
        "rec_sign": lambda r, c, last: np.allclose(r, -c, atol=1e-5),
        "rec_zeroed": lambda r, c, last: (r[~last] == 0).all() and np.allclose(r[last], c[last],
                                                                                 atol=1e-5),
        "rec_misaligned": lambda r, c, last: np.allclose(r, np.roll(c, 1), atol=1e-5),
        "rec_broadcast": lambda r, c, last: not np.allclose(r, c, atol=1e-3),
        "rec_other_estimator": lambda r, c, last: not np.allclose(r, c, atol=1e-3),
    }.items():
        rows = np.flatnonzero((family == kind).to_numpy())
        rows = rows[np.lexsort((steps["t"].to_numpy()[rows], steps["traj_id"].to_numpy()[rows]))]
        traj = steps["traj_id"].to_numpy()[rows]
        last = np.r_[traj[1:] != traj[:-1], True]
        assert check(recorded[rows], right[rows], last), kind


def test_written_runs_open_with_the_loaders(tmp_path):
    steps, truth = gen.make_run(5, train_steps=2, groups_per_step=6, group_size=4,
                                kinds=("partial_group", "duplicate_rows", "rec_sign"),
                                graph="grid", scale="score")
    rule = truth.attrs["run"]["rule"]
    assert rule.success_threshold == 0.8
    log = open_log(gen.write_run(steps, tmp_path / "run", rule=rule, estimator="g2po"))
    assert log.train_steps() == [0, 1] and log.rule() == rule
    assert log.manifest["estimator"] == "g2po"
    assert len(log.load()) == len(steps)
    table = gen.write_run(steps, tmp_path / "run.csv", rule=rule, format="csv", truth=truth)
    with pytest.warns(LoadWarning, match="exact duplicate of an earlier row"):
        loaded = open_log(table).load()
    assert len(loaded) == len(steps)  # the verbatim copies are dropped …
    assert report_of(loaded).n_skipped > 0  # … and reported
    np.testing.assert_allclose(np.sort(loaded["advantage"]), np.sort(steps["advantage"]))
