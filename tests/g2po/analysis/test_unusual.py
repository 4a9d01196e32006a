"""What is unusual for this run: a group unlike its peers rises with the measure that makes it
so; healthy groups, solved ones and a run's later steps do not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.triage import triage_groups
from g2po.analysis.unusual import (
    MEASURES,
    STEP_MEASURES,
    UNUSUAL_COLUMNS,
    run_findings,
    step_features,
    unusual_groups,
)
from g2po.outcomes import OutcomeRule
from tests.g2po.builders import THREE, trajectories


def walks(step: int, groups: int = 8, rollouts: int = 8, length: int = 8,
          seed: int = 0) -> pd.DataFrame:
    """Healthy groups of one training step: rollouts from one start over a few rooms, mixed
    outcomes, a few invalid actions."""
    rng = np.random.default_rng(seed * 1000 + step)
    rows = []
    for g in range(groups):
        for r in range(rollouts):
            reward = 10.0 if r % 2 else 0.0
            for t in range(int(rng.integers(max(length - 3, 1), length + 1))):
                room = 0 if t == 0 else int(rng.integers(6))
                rows.append({"train_step": step, "group_id": f"s{step}g{g}", "traj_id": f"r{r}",
                             "t": t, "state_key": f"task {g} room {room}",
                             "action": f"go {rng.integers(3)}", "episode_reward": reward,
                             "is_action_valid": bool(rng.random() > 0.05)})
    return pd.DataFrame(rows)


def score(steps: pd.DataFrame, **kw) -> pd.DataFrame:
    return unusual_groups(triage_groups(steps, rule=OutcomeRule()), steps, **kw)


def fired(out: pd.DataFrame) -> list[str]:
    return sorted(out.loc[out["severity"] > 0, "group_id"])


@pytest.fixture(scope="module")
def healthy() -> pd.DataFrame:
    return pd.concat([walks(s) for s in range(4)], ignore_index=True)


def test_healthy_groups_stay_quiet(healthy):
    out = score(healthy)
    assert list(out.columns) == UNUSUAL_COLUMNS and len(out) == 32
    assert fired(out) == []
    assert run_findings(out) == []


def test_a_partial_group_rises_with_its_rollouts_as_the_reason(healthy):
    steps = healthy[~((healthy["group_id"] == "s2g3") & healthy["traj_id"].isin(
        [f"r{i}" for i in range(3, 8)]))]
    out = score(steps)
    assert fired(out) == ["s2g3"]
    top = out.iloc[0]
    assert (top["measure"], top["value"], top["usual"]) == ("rollouts", 3.0, 8.0)
    assert top["reason"].startswith("rollouts 3 (peers' usual 8)")
    assert "group id" in top["fix"] and 0 < top["severity"] < 1
    assert run_findings(out) == ["1 of 32 groups stand out from their peers (by their most "
                                 "unusual measure: rollouts 1)"]


def test_two_tasks_under_one_id_and_a_history_key_rise(healthy):
    steps = healthy.copy()
    mixed = (steps["group_id"] == "s1g0") & steps["traj_id"].isin(["r0", "r1", "r2", "r3"])
    steps.loc[mixed, "state_key"] = steps.loc[mixed, "state_key"].str.replace("task 0",
                                                                               "task 9")
    history = steps["group_id"] == "s3g5"
    steps.loc[history, "state_key"] = steps[history].groupby("traj_id")["state_key"] \
        .transform(lambda keys: keys.cumsum())
    out = score(steps).set_index("group_id")
    assert fired(out.reset_index()) == ["s1g0", "s3g5"]
    assert out.loc["s1g0", "measure"] == "start_states" and out.loc["s1g0", "value"] == 2
    assert out.loc["s3g5", "measure"] in ("merge_rate", "branching")
    # the groups table carries the step measures itself (the triage's unusual check): the
    # same answer without the step table; a table without them does not know the starts
    table = triage_groups(steps, rule=OutcomeRule())
    plain = unusual_groups(table).set_index("group_id")
    assert plain.loc["s1g0", "measure"] == "start_states" and \
        plain.loc["s1g0", "severity"] == out.loc["s1g0", "severity"]
    blind = unusual_groups(table.drop(columns=list(STEP_MEASURES))).set_index("group_id")
    assert blind.loc["s1g0", "severity"] == 0 and blind["z_start_states"].eq(0).all()


def test_a_run_that_learns_is_compared_with_itself_at_the_same_stage():
    # long rollouts for two steps, short ones after: the policy learned the way
    steps = pd.concat([walks(s, groups=16, length=20 if s < 2 else 5) for s in range(5)],
                      ignore_index=True)
    assert fired(score(steps)) == []
    over_the_run = score(steps, window_groups=10_000)  # early against late: lengths differ
    assert len(fired(over_the_run)) > 0
    assert set(over_the_run.loc[over_the_run["severity"] > 0, "measure"]) == {"mean_length"}


def test_a_solved_task_is_compared_with_solved_ones(healthy):
    solved = trajectories({f"r{i}": (10, [("start", "go", True), ("hall", "take", True)])
                           for i in range(8)}, "s2g9").assign(train_step=2)
    out = score(pd.concat([healthy, solved], ignore_index=True)).set_index("group_id")
    assert out.loc["s2g9", "severity"] == 0
    assert out.loc["s2g9", "z_distinct_paths"] == 0 and out.loc["s2g9", "z_merge_rate"] == 0


def test_too_few_groups_say_nothing():
    steps = walks(0, groups=4)
    steps = steps[~((steps["group_id"] == "s0g0") & (steps["traj_id"] != "r0"))]
    assert fired(score(steps)) == []


def test_step_features_count_starts_branching_and_paths():
    spec = {**THREE, "d": THREE["a"]}  # d repeats a's path
    steps = pd.concat([trajectories(spec, "g"),
                       trajectories({"x": (0, [("t0", "a", True)]),
                                     "y": (0, [("t1", "a", True)])}, "h")], ignore_index=True)
    got = step_features(steps).set_index("group_id")
    assert got.loc["g", "start_states"] == 1 and got.loc["h", "start_states"] == 2
    # g: s0 leads to s1 and s0 (the invalid step stays) and s2; s2 to s1
    assert got.loc["g", "branching"] == pytest.approx(4 / 2)
    assert got.loc["g", "distinct_paths"] == pytest.approx(3 / 4)
    assert got.loc["h", "branching"] == 1.0 and got.loc["h", "distinct_paths"] == 1.0
    assert [m.name for m in MEASURES][:2] == ["rollouts", "start_states"]
