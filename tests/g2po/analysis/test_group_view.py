"""One group's computed view: every part equals the analysis it comes from, the estimator runs
once, and a recorded advantage is audited step by step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import g2po.analysis.signals as signals
import g2po.analysis.state_graph as state_graph_module
from g2po.analysis.alarms import credit_alarms
from g2po.analysis.critical import critical_transitions
from g2po.analysis.group_view import (
    RECORDED_STEP_COLUMNS,
    compute_group,
    explain_group,
    graph_structure,
)
from g2po.analysis.state_graph import state_graph
from g2po.estimators import compute_advantages
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.g2po.analysis.groups import cut_group, random_walks

RULE = OutcomeRule()
PARAMS = G2POParams(gamma=0.9, penalty=0.2)


def walks() -> pd.DataFrame:
    return random_walks(groups=1, length=4).assign(group_id="walks")


def test_each_part_is_the_analysis_it_comes_from():
    steps = walks()
    view = compute_group(steps, rule=RULE, params=PARAMS)
    fresh = state_graph(steps, rule=RULE, params=PARAMS)
    pd.testing.assert_frame_equal(view.graph.steps, fresh.steps)
    pd.testing.assert_frame_equal(view.critical, critical_transitions(fresh))
    assert view.outcome == RULE.check(steps)
    assert view.success_rate == view.outcome.n_success / view.outcome.n_traj
    # the alarms read the graph's own G2PO run; computed afresh they say the same
    afresh = credit_alarms(replace(fresh, estimated=None), rule=RULE, params=PARAMS)
    assert [(a.kind, a.title, a.detail) for a in view.alarms] == \
        [(a.kind, a.title, a.detail) for a in afresh]
    assert view.alarms, "the random walks raise alarms"
    assert view.recorded is None


def test_the_estimator_runs_once_per_view(monkeypatch):
    calls = []
    for module in (state_graph_module, signals):
        real = module.estimate

        def counted(*args, real=real, **kwargs):
            calls.append(args[1] if len(args) > 1 else kwargs.get("estimator"))
            return real(*args, **kwargs)
        monkeypatch.setattr(module, "estimate", counted)
    compute_group(cut_group(), rule=RULE.with_changes(truncate_at=4), params=PARAMS)
    assert calls == ["g2po"]
    # a graph built under other parameters is not reused: the alarms run G2PO themselves
    graph = state_graph(cut_group(), rule=RULE, params=PARAMS)
    calls.clear()
    credit_alarms(graph, rule=RULE, params=replace(PARAMS, gamma=0.5))
    assert calls == ["g2po"]


def test_the_structure_is_kept_under_other_numbers_not_another_key():
    steps = walks()
    base = graph_structure(state_graph(steps, rule=RULE, params=PARAMS))
    assert graph_structure(state_graph(steps, rule=RULE, params=replace(PARAMS, w=0.3))) == base
    cased = steps.assign(state_key=np.where(steps.index % 2 == 0,
                                            steps["state_key"].str.upper(), steps["state_key"]))
    assert graph_structure(state_graph(cased, rule=RULE, params=PARAMS)) != base


def recorded_steps() -> pd.DataFrame:
    """Walks whose trainer recorded G2PO's advantage, but 0 on two steps that have credit,
    and nothing on one trajectory's steps."""
    steps = walks()
    adv = compute_advantages(steps, "g2po", gamma=PARAMS.gamma, penalty=PARAMS.penalty)["adv"]
    steps["advantage"] = adv.to_numpy()
    zeroed = np.flatnonzero(np.abs(steps["advantage"].to_numpy()) > 0.1)[:2]
    steps.loc[steps.index[zeroed], "advantage"] = 0.0
    missing = steps["traj_id"] == steps["traj_id"].iloc[-1]
    steps.loc[missing, "advantage"] = np.nan
    return steps, zeroed, missing.to_numpy()


def test_a_recorded_advantage_is_audited_step_by_step():
    steps, zeroed, missing = recorded_steps()
    view = compute_group(steps, rule=RULE, params=PARAMS)
    rec = view.recorded
    assert list(rec.steps.columns) == RECORDED_STEP_COLUMNS
    assert rec.steps.index.equals(view.graph.steps.index)
    cause = rec.steps["cause"].to_numpy()
    assert set(cause[zeroed]) == {"zeroed"}
    assert set(cause[missing]) == {"none"}
    rest = np.ones(len(steps), dtype=bool)
    rest[zeroed] = False
    assert set(cause[rest & ~missing]) == {""}
    np.testing.assert_allclose(rec.steps["recomputed"], view.graph.steps["adv"])
    assert rec.steps["words"].iloc[zeroed[0]].endswith(": no credit")
    assert (rec.steps["words"].to_numpy()[rest] == "").all()
    assert rec.summary.startswith("2 step(s) recorded as 0 where g2po gives credit")
    assert "Fix: the trainer gave these steps no credit" in rec.summary
    assert rec.fitted and "closest: " in rec.summary
    # without the search: the same steps, the group's words without the closest estimator
    quick = compute_group(steps, rule=RULE, params=PARAMS, fit=False).recorded
    pd.testing.assert_frame_equal(quick.steps, rec.steps)
    assert not quick.fitted and "closest" not in quick.summary
    # a trainer that recorded exactly the recomputation: said in one line
    exact = steps.assign(advantage=view.graph.steps["adv"].to_numpy())
    same = compute_group(exact, rule=RULE, params=PARAMS).recorded
    assert same.summary == f"the recorded advantage equals g2po's recomputation on all " \
                           f"{len(steps)} recorded steps"
    assert explain_group(view)[-1] == "recorded advantage (the trainer's) against g2po's " \
                                      f"recomputation: {rec.summary}"


@pytest.mark.parametrize("k", [2, 5])
def test_explain_names_each_critical_transition_and_alarm(k):
    view = compute_group(cut_group(), rule=RULE.with_changes(truncate_at=4), params=PARAMS,
                         critical=k)
    lines = explain_group(view, limit=12)
    ranked = [line for line in lines if line.startswith("  #")]
    assert len(ranked) == len(view.critical) == min(k, len(view.critical))
    for line, row in zip(ranked, view.critical.itertuples(), strict=True):
        assert line.startswith(f"  #{row.rank} ") and f"TD error {row.td_error:+.3g}" in line
        assert ("credit" if row.td_error > 0 else "blame") in line
    assert lines[0].startswith(f"{view.outcome.n_traj} rollouts (")  # with its cut ones
    said = [line for line in lines if line.startswith("  - ")]
    assert said == [f"  - {a.title}: {a.detail}" for a in view.alarms] and said


def test_the_view_audits_and_judges_as_the_groups_table_does():
    """A GiGPO run with ω 0.5: the view audits the recorded advantage against what the run's
    manifest states (estimator and exact arguments), as the groups table's check does, not
    against GiGPO's defaults; given the group's row of the run's table, the checks that judge
    a group against the run speak in the explorer too."""
    from g2po.analysis.recorded import stated_credit
    from g2po.analysis.triage import triage_groups

    steps = walks()
    steps["advantage"] = compute_advantages(steps, "gigpo", omega=0.5)["adv"]
    credit = stated_credit({"estimator": "gigpo", "estimator_params": {"omega": 0.5}})
    stated = compute_group(steps, rule=RULE, params=G2POParams(), credit=credit)
    assert stated.credit == credit and stated.recorded.estimator == "gigpo"
    assert stated.recorded.group["kind"] == ""  # the record is the run's own credit
    defaults = compute_group(steps, rule=RULE, params=G2POParams(), estimator="gigpo")
    assert defaults.recorded.group["kind"] != ""  # against ω 1 it differs

    # a partial group (3 of the run's usual 6 rollouts) is said once the run's row is given
    run = pd.concat([random_walks(groups=5, rollouts=6, length=4, seed=1),
                     random_walks(groups=1, rollouts=3, length=4, seed=2)
                     .assign(group_id="partial")], ignore_index=True)
    table = triage_groups(run, rule=RULE)
    row = table[table["group_id"] == "partial"].iloc[0].to_dict()
    partial = run[run["group_id"] == "partial"]
    kinds = {a.kind for a in compute_group(partial, rule=RULE, params=G2POParams(),
                                           row=row).alarms}
    alone = {a.kind for a in compute_group(partial, rule=RULE, params=G2POParams()).alarms}
    assert row["alarm_partial_group"] > 0
    assert "partial_group" in kinds and "partial_group" not in alone
