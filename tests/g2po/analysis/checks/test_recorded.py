"""Recorded credit as a check: the trainer's recorded advantage against the recomputation, in
the groups table, ranked by the share of the group's credit that differs; the run's stated
estimator and parameters where its manifest has them, else the estimator the user trains with;
silent where nothing was recorded; the same answer whatever the batching."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.alarms import credit_alarms
from g2po.analysis.checks.recorded import credit_column
from g2po.analysis.recorded import StatedCredit, audit_recorded, stated_credit
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import run_findings, sort_groups, triage_groups, triage_log
from g2po.estimators import compute_advantages
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders import RunWriter, open_log
from tests.g2po.analysis.checks.examples import HEALTHY, beside_healthy
from tests.g2po.analysis.groups import random_walks
from tests.g2po.builders import trajectories

RULE = OutcomeRule()


def recorded(steps: pd.DataFrame, estimator: str = "g2po", **params) -> pd.DataFrame:
    """``steps`` with ``estimator``'s advantage recorded as a trainer stores it (float32)."""
    adv = compute_advantages(steps, estimator, **params)["adv"].to_numpy(np.float32)
    return steps.assign(advantage=adv.astype(np.float64))


def zeroed(steps: pd.DataFrame, group: str) -> pd.DataFrame:
    """The group's recorded advantages 0 on every step but each trajectory's last."""
    last = steps["t"] == steps.groupby("traj_id")["t"].transform("max")
    return steps.assign(advantage=steps["advantage"].where(
        (steps["group_id"] != group) | last, 0.0))


EXAMPLES = {
    "recorded_credit": (zeroed(recorded(beside_healthy(trajectories(HEALTHY, "bad"))), "bad"),
                        RULE, ["bad"]),
}


@pytest.fixture(scope="module")
def walks() -> pd.DataFrame:
    return recorded(random_walks(groups=8, rollouts=6, length=6, invalid_rate=0.1, seed=3))


def test_a_zeroed_record_ranks_first_with_the_audits_words(walks):
    steps = zeroed(walks, "g3")
    table = sort_groups(triage_groups(steps, rule=RULE))
    top = table.iloc[0]
    assert top["group_id"] == "g3" and top["credit_kind"] == "zeroed"
    want = audit_recorded(steps, rule=RULE, params=G2POParams()).groups.set_index("group_id")
    assert top["credit_share"] == pytest.approx(want.loc["g3", "severity"])
    assert top["reason"].startswith("recorded credit: " + want.loc["g3", "reason"])
    assert top["alarm_recorded_credit"] == want.loc["g3", "mismatched"] > 0
    assert (table["recorded_steps"] == table["steps"]).all()
    assert (table.loc[table["group_id"] != "g3", "alarm_recorded_credit"] == 0).all()
    # in the explorer, on the group's own graph: the differing steps
    graph = state_graph(steps[steps["group_id"] == "g3"], rule=RULE)
    (alarm,) = [a for a in credit_alarms(graph, rule=RULE) if a.kind == "recorded_credit"]
    assert alarm.count == top["alarm_recorded_credit"] == len(alarm.steps)
    assert "recorded as 0" in alarm.detail and "Fix:" in alarm.detail


def test_no_record_no_finding(walks):
    table = triage_groups(walks.drop(columns="advantage"), rule=RULE)
    assert (table["recorded_steps"] == 0).all() and (table["alarm_recorded_credit"] == 0).all()
    assert (table["credit_kind"] == "").all() and (table["credit_kind_grpo"] == "").all()
    healthy = triage_groups(walks, rule=RULE)
    assert (healthy["credit_kind"] == "").all() and (healthy["credit_share"] == 0).all()


def test_without_a_stated_estimator_the_one_the_user_trains_with_is_audited(walks):
    """A log recording G2PO's credit, judged for GRPO: every group differs, which is said once
    for the run with the estimator that reproduces it, never ranked."""
    table = triage_groups(walks, rule=RULE, estimator="grpo")
    assert (table[credit_column("credit_kind", "grpo")] != "").all()
    assert (table["credit_kind"] == "").all()  # as G2PO is judged: healthy
    (said,) = [f for f in run_findings(table, "grpo") if f.kind == "recorded_credit"]
    assert said.groups == 8 and "of the 8 groups with a recorded advantage, against GRPO's " \
        "recomputation: 8 computed with another estimator" in said.text
    assert "reproduced by g2po(" in said.text
    assert table["severity"].max() < 0.2 and table["run_wide"].str.contains(
        "recorded_credit").all()


def test_the_runs_stated_estimator_parameters_and_state_key(tmp_path, walks):
    """A GiGPO run (ω 0.5) keyed by normalised observations records GiGPO's credit: audited
    with what the run states, whatever the triage's own parameters; one group broken."""
    keys = walks["state_key"].where(walks["traj_id"].str[-1].isin(["1", "3"]),
                                    walks["state_key"].str.upper() + "  ")
    steps = walks.assign(state_key=keys)  # the same state written two ways
    kwargs = {**G2POParams().for_estimator("gigpo", RULE), "omega": 0.5}  # as trainers write
    adv = compute_advantages(steps, "gigpo", state_key="normalized", **kwargs)["adv"]
    steps = zeroed(steps.assign(advantage=adv), "g5")
    manifest = {"estimator": "gigpo", "state_key": "normalized", "estimator_params": kwargs,
                "config": {"success_reward": 10.0}}
    writer = RunWriter(tmp_path / "run", manifest)
    for step in (1, 2):
        writer.write_step(step, steps.assign(group_id=steps["group_id"] + f"s{step}"))
    log = open_log(tmp_path / "run")
    assert stated_credit(log.manifest) == StatedCredit("gigpo", kwargs, "normalized")
    table = triage_log(log, cache=False, params=G2POParams(gamma=0.9))
    fired = table.loc[table["credit_kind"] != "", "group_id"].tolist()
    assert sorted(fired) == ["g5s1", "g5s2"] and (table["credit_stated"] == "gigpo").all()
    assert (table["credit_kind_grpo"] == table["credit_kind"]).all()  # one audit for both
    exact = audit_recorded(steps, rule=RULE, params=G2POParams(), estimator="gigpo",
                           estimator_params=kwargs, fit=False)  # the keys as they are
    assert len(exact.findings) > 1  # so the run's own key is what made the others healthy
    assert "where gigpo gives credit" in table.set_index("group_id").loc["g5s1", "reason"]
    # a few training steps at a time (the cache's batches), or all at once: the same
    small = triage_log(log, cache=False, params=G2POParams(gamma=0.9), batch_rows=10)
    pd.testing.assert_frame_equal(small, table)


def test_a_manifest_the_estimator_cannot_take_is_named(tmp_path, walks):
    writer = RunWriter(tmp_path / "run", {"estimator": "gigpo",
                                          "estimator_params": {"nonsense": 1}})
    writer.write_step(1, walks)
    with pytest.raises(ValueError, match="the run's manifest states estimator 'gigpo' with "
                                         "estimator_params"):
        triage_log(open_log(tmp_path / "run"), cache=False)
