"""Unusual for this run, as a check: a group against its peers in the groups table, judged
over the whole table (not per batch), ranked with the others by its score; quiet on alike
groups; said in the explorer where the group's row is given."""

from __future__ import annotations

import pandas as pd
import pytest

from g2po.analysis.alarms import credit_alarms
from g2po.analysis.findings import recount
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import run_findings, sort_groups, triage_groups, triage_log
from g2po.analysis.unusual import THRESHOLD, unusual_groups
from g2po.outcomes import OutcomeRule
from loaders import RunWriter, open_log
from tests.g2po.analysis.checks.examples import HEALTHY
from tests.g2po.analysis.test_unusual import walks
from tests.g2po.builders import trajectories

RULE = OutcomeRule()


def alike(n: int, extra: dict | None = None) -> pd.DataFrame:
    """``n`` groups of HEALTHY's four rollouts, and ``extra`` (group id → rollouts)."""
    parts = [trajectories(HEALTHY, f"h{i}") for i in range(n)]
    parts += [trajectories(spec, gid) for gid, spec in (extra or {}).items()]
    return pd.concat(parts, ignore_index=True)


#: Each of HEALTHY's rollouts three times: 12 rollouts repeating each other, beside 4.
THRICE = {f"{k}{i}": v for k, v in HEALTHY.items() for i in range(3)}

EXAMPLES = {"unusual": (alike(11, {"odd": THRICE}), RULE, ["odd"])}


@pytest.fixture(scope="module")
def healthy() -> pd.DataFrame:
    return pd.concat([walks(s) for s in range(4)], ignore_index=True)


def test_the_check_is_the_librarys_score_on_the_whole_table(healthy):
    steps = healthy.copy()
    history = steps["group_id"] == "s3g5"  # a key that carries the history
    steps.loc[history, "state_key"] = steps[history].groupby("traj_id")["state_key"] \
        .transform(lambda keys: keys.cumsum())
    table = triage_groups(steps, rule=RULE)
    library = unusual_groups(table, steps).set_index("group_id")
    got = table.set_index("group_id")
    assert got.loc["s3g5", "alarm_unusual"] > 0
    assert got.loc["s3g5", "unusual_score"] == pytest.approx(library.loc["s3g5", "unusual"])
    assert got.loc["s3g5", "unusual_evidence"] == library.loc["s3g5", "reason"]
    fired = got.index[got["alarm_unusual"] > 0].tolist()
    assert fired == library.index[library["severity"] > 0].tolist() == ["s3g5"]
    assert sort_groups(table)["group_id"].iloc[0] == "s3g5"
    assert got.loc["s3g5", "reason"].startswith("unusual for this run: ")


def test_alike_groups_stay_quiet_and_the_score_needs_the_run(healthy):
    table = triage_groups(healthy, rule=RULE)
    assert (table["alarm_unusual"] == 0).all() and (table["unusual_score"] < THRESHOLD).all()
    assert not [f for f in run_findings(table) if f.kind == "unusual"]
    one = triage_groups(healthy[healthy["train_step"] == 0].head(200), rule=RULE)
    assert (one["alarm_unusual"] == 0).all()  # a few groups: too few to tell what is usual


def test_judged_over_the_whole_run_not_per_batch(tmp_path, healthy):
    steps = healthy[~((healthy["group_id"] == "s2g3") & healthy["traj_id"].isin(
        [f"r{i}" for i in range(3, 8)]))]  # 3 of 8 rollouts: partial, and unusual
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    for step, rows in steps.groupby("train_step"):
        writer.write_step(int(step) + 1, rows.drop(columns="train_step"))
    log = open_log(tmp_path / "run")
    whole = triage_log(log, cache=False)
    small = triage_log(log, cache=False, batch_rows=10)  # one training step per batch
    pd.testing.assert_frame_equal(small, whole)
    assert whole.loc[whole["alarm_unusual"] > 0, "group_id"].tolist() == ["s2g3"]
    # a table cut to one training step is judged against that step's groups only
    assert (recount(whole[whole["train_step"] == 3])["unusual_score"] <
            whole.loc[whole["train_step"] == 3, "unusual_score"].max() + 1e-9).all()


def test_the_explorer_says_it_with_the_groups_row():
    steps = alike(11, {"odd": THRICE})
    table = triage_groups(steps, rule=RULE).set_index("group_id")
    graph = state_graph(steps[steps["group_id"] == "odd"], rule=RULE)
    assert "unusual" not in [a.kind for a in credit_alarms(graph, rule=RULE)]
    row = table.loc["odd"].to_dict()
    (alarm,) = [a for a in credit_alarms(graph, rule=RULE, row=row) if a.kind == "unusual"]
    assert alarm.count == row["alarm_unusual"] and row["unusual_evidence"] in alarm.detail
    assert "rollouts 12 (peers' usual 4)" in alarm.detail and "Fix:" in alarm.detail
