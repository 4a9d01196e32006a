import numpy as np
import pandas as pd
import pytest

from g2po import compute_advantages
from g2po.analysis.alarms import SHOWN, alarm_counts, credit_alarms, group_signals
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.g2po.analysis.groups import (
    ALL_FAILED,
    ALL_SUCCEEDED,
    NOTHING,
    cut_group,
    hub_group,
    random_walks,
)
from tests.g2po.builders import THREE, trajectories

REQUIRED = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
            "is_action_valid"]


def frame(rows, **extra):
    out = pd.DataFrame(rows, columns=["traj_id", "t", "state_key", "action", "episode_reward",
                                      "is_action_valid"])
    return out.assign(group_id="g", **extra)


def kinds(alarms):
    return {a.kind: a for a in alarms}


def test_penalty_amplification_in_an_all_failed_group():
    rows = [("a", 0, "s0", "go", 0.0, True), ("a", 1, "s1", "bad", 0.0, False),
            ("b", 0, "s0", "go", 0.0, True), ("b", 1, "s2", "look", 0.0, True)]
    found = kinds(credit_alarms(state_graph(frame(rows), rule=OutcomeRule()), rule=OutcomeRule()))
    alarm = found["penalty_amplification"]
    assert alarm.count == 1 and list(map(tuple, alarm.steps.to_numpy())) == [("a", 1)]
    assert "fail" in alarm.detail and "unit size" in alarm.detail
    # issue 27: the penalty is the only signal under mean_norm too (no longer unit-sized)
    mean_norm = G2POParams(mode="mean_norm")
    alarm = kinds(credit_alarms(state_graph(frame(rows), rule=OutcomeRule(), params=mean_norm),
                                rule=OutcomeRule(), params=mean_norm))["penalty_amplification"]
    assert "unit size" not in alarm.detail
    # every figure with its unit: the penalty a reward, the advantages as the mode makes them
    assert "p = 0.1 reward units" in alarm.detail
    assert "(in reward units (mode mean_norm))" in alarm.detail
    # an all-success group is not penalty-only (G2PO's edge term ranks its steps)
    won = [(*r[:4], 10.0, r[5]) for r in rows]
    found = kinds(credit_alarms(state_graph(frame(won), rule=OutcomeRule()), rule=OutcomeRule()))
    assert "penalty_amplification" not in found and found["all_success"].count == 2


# -- aliasing: the same (key, action) leading on to different next states ---------------------

#: A stochastic policy in a deterministic room graph: outcomes mixed at every state, values
#: spread widely, but every (key, action) leads to one next state.
HEALTHY = [("a", 0, "entrance", "go east", 10.0, True), ("a", 1, "hall", "go north", 10.0, True),
           ("a", 2, "kitchen", "go north", 10.0, True),
           ("b", 0, "entrance", "go east", 0.0, True), ("b", 1, "hall", "go north", 0.0, True),
           ("b", 2, "kitchen", "go east", 0.0, True),
           ("c", 0, "entrance", "go south", 0.0, True), ("c", 1, "corridor", "go east", 0.0, True),
           ("c", 2, "kitchen", "go east", 0.0, True),
           ("d", 0, "entrance", "go south", 10.0, True),
           ("d", 1, "corridor", "go east", 10.0, True), ("d", 2, "kitchen", "go north", 10.0, True)]


def aliased_rows():
    """HEALTHY with hall and corridor sharing one key, and "go north" from it leading on to
    the kitchen (from the hall) and the entrance (from the corridor)."""
    rows = [(r[0], r[1], "dark room" if r[2] in ("hall", "corridor") else r[2], *r[3:])
            for r in HEALTHY]
    return rows + [("e", 0, "entrance", "go south", 0.0, True),
                   ("e", 1, "dark room", "go north", 0.0, True),
                   ("e", 2, "entrance", "look", 0.0, True)]


def test_a_healthy_stochastic_group_raises_no_aliasing():
    graph = state_graph(frame(HEALTHY), rule=OutcomeRule())
    sig = group_signals(frame(HEALTHY), rule=OutcomeRule())
    assert sig.mixed.any() and sig.wide.any()  # the policy's randomness is there …
    assert not sig.split.any()  # … and is no aliasing
    assert alarm_counts(frame(HEALTHY), rule=OutcomeRule())["aliased"][0] == 0
    assert "aliased" not in kinds(credit_alarms(graph, rule=OutcomeRule()))


def test_a_group_with_one_aliased_key_raises_aliasing_with_evidence():
    steps = frame(aliased_rows())
    graph = state_graph(steps, rule=OutcomeRule())
    alarm = kinds(credit_alarms(graph, rule=OutcomeRule()))["aliased"]
    dark = int(graph.steps.loc[graph.steps["state_key"] == "dark room", "node"].iloc[0])
    assert alarm.nodes == (dark,) and alarm.count == 1
    assert "'dark room' + go north → kitchen (2×) | entrance (1×)" in alarm.detail
    # declared stochastic, the split says nothing: no aliasing alarm
    assert "aliased" not in kinds(credit_alarms(graph, rule=OutcomeRule(), stochastic=True))
    assert alarm_counts(steps, rule=OutcomeRule(), stochastic=True)["aliased"][0] == 0


def test_identical_wins_converged_identical_losses_collapsed():
    """Issue 36: solved is not broken. Eight identical wins are the policy's progress (said
    with the discount's artifact on G2PO's advantages); eight identical losses a collapse."""
    path = [("entrance", "go east"), ("hall", "go north"), ("kitchen", "go north")]
    rows = [(f"r{i}", t, k, a, 10.0, True) for i in range(8) for t, (k, a) in enumerate(path)]
    found = kinds(credit_alarms(state_graph(frame(rows), rule=OutcomeRule()),
                                rule=OutcomeRule()))
    assert "collapsed" not in found
    alarm = found["converged"]
    assert alarm.count == 8 and "converged" in alarm.detail
    assert "G2PO's A from" in alarm.detail and "discount alone" in alarm.detail
    assert "in standard deviations (mode mean_std_norm)" in alarm.detail
    first = compute_advantages(frame(rows), "g2po")["adv"][frame(rows)["t"] == 0].mean()
    assert f"the first step gets {first:+.2f}" in alarm.detail and first < 0
    lost = [(r[0], r[1], r[2], r[3], 0.0, r[5]) for r in rows]
    found = kinds(credit_alarms(state_graph(frame(lost), rule=OutcomeRule()),
                                rule=OutcomeRule()))
    assert found["collapsed"].count == 8 and "losing path" in found["collapsed"].detail
    assert "converged" not in found
    # one rollout differing by one action: neither
    rows[-1] = ("r7", 2, "kitchen", "go east", 10.0, True)
    found = kinds(credit_alarms(state_graph(frame(rows), rule=OutcomeRule()),
                                rule=OutcomeRule()))
    assert not {"collapsed", "converged"} & set(found)
    assert "collapsed" not in kinds(credit_alarms(state_graph(frame(HEALTHY), rule=OutcomeRule()),
                                                  rule=OutcomeRule()))


def test_truncation_and_no_merging():
    rows = [(f"r{i}", t, f"s{i}-{t}", "go", 0.0, True) for i in range(3) for t in range(5)]
    done = [t == 4 and i > 0 for i in range(3) for t in range(5)]
    found = kinds(
        credit_alarms(state_graph(frame(rows, done=done), rule=OutcomeRule()), rule=OutcomeRule())
    )
    assert found["truncation"].count == 1
    assert list(map(tuple, found["truncation"].steps.to_numpy())) == [("r0", 4)]
    assert found["no_merging"].count == 15


# -- no training signal, per estimator -------------------------------------------------------

def test_no_signal_when_every_rollout_failed_without_an_invalid_action():
    graph = state_graph(trajectories(ALL_FAILED), rule=OutcomeRule())
    found = kinds(credit_alarms(graph, rule=OutcomeRule()))
    alarm = found["no_signal"]
    assert alarm.title == "No training signal: G2PO and GRPO"
    assert alarm.count == len(graph.steps) == len(alarm.steps)
    assert "reward 0" in alarm.detail and "no action was invalid" in alarm.detail
    # the estimators agree: every advantage is 0
    steps = trajectories(ALL_FAILED)
    assert np.abs(compute_advantages(steps, "g2po")["adv"]).max() <= 1e-6
    assert np.abs(compute_advantages(steps, "grpo")["adv"]).max() <= 1e-6


def test_no_signal_is_said_per_estimator_for_an_all_success_group():
    steps = trajectories(ALL_SUCCEEDED)
    g2po = compute_advantages(steps, "g2po")
    assert np.abs(compute_advantages(steps, "grpo")["adv"]).max() == 0.0
    assert np.abs(g2po["adv"]).max() > 0.1  # the TD term ranks the steps
    alarm = kinds(credit_alarms(state_graph(steps, rule=OutcomeRule()), rule=OutcomeRule()))[
        "no_signal"
    ]
    assert alarm.title == "No training signal: GRPO"
    assert "G2PO still ranks its steps" in alarm.detail
    assert f"{np.abs(g2po['adv_ec']).mean():.3g}" in alarm.detail
    assert "; in standard deviations (mode mean_std_norm))" in alarm.detail


def test_a_group_with_a_signal_raises_no_such_alarm():
    assert "no_signal" not in kinds(
        credit_alarms(state_graph(trajectories(THREE), rule=OutcomeRule()), rule=OutcomeRule())
    )


# -- aliased states ranked, hubs -------------------------------------------------------------

def test_aliased_states_are_ranked_by_the_credit_the_merge_moves():
    steps = random_walks(groups=1, invalid_rate=0.1, seed=3)
    graph = state_graph(steps, rule=OutcomeRule())
    alarm = kinds(credit_alarms(graph, rule=OutcomeRule()))["aliased"]
    ranking = alarm.ranking
    assert list(ranking["node"]) == list(alarm.nodes) and len(ranking) == alarm.count
    assert (np.diff(ranking["credit_moved"].to_numpy()) <= 1e-12).all()
    # credit moved = Σ |v − V(node)| over the node's steps, from the estimator's own columns
    cols = compute_advantages(graph.steps[REQUIRED], "g2po")
    moved = (cols["step_value"] - cols["node_value"]).abs().groupby(graph.steps["node"]).sum()
    top = int(ranking["node"].iloc[0])
    assert ranking["credit_moved"].iloc[0] == pytest.approx(moved[top])
    assert moved[top] == pytest.approx(moved[list(alarm.nodes)].max())
    # the detail names the top few and how many more
    assert f"node {top} " in alarm.detail and f"; {alarm.count - SHOWN} more" in alarm.detail
    # the credit moved is said with its unit, each time (it was "moves 96.8")
    shown = alarm.detail.rpartition("in reward units: ")[2]
    assert shown.count(" reward units") == SHOWN
    assert f"moves {ranking['credit_moved'].iloc[0]:.3g} reward units" in alarm.detail


def test_a_state_reached_mostly_through_invalid_actions_is_a_hub():
    graph = state_graph(hub_group(), rule=OutcomeRule())
    hub = graph.nodes.index[graph.nodes["state_key"] == NOTHING][0]
    alarm = kinds(credit_alarms(graph, rule=OutcomeRule()))["hub"]
    assert alarm.nodes == (int(hub),)
    row = alarm.ranking.iloc[0]
    assert row["in_sources"] == 5 and row["invalid_arrival_share"] == 1.0
    assert set(alarm.steps["t"]) == {2, 4}  # its occurrences
    assert "Nothing happens" in alarm.detail


def test_random_invalid_actions_make_no_hub():
    steps = random_walks(groups=6, invalid_rate=0.3)
    sig = group_signals(steps, rule=OutcomeRule())
    assert alarm_counts(steps, rule=OutcomeRule())["hub"].sum() == 0
    assert (sig.invalid_arrival_share[sig.in_sources >= 3] >= 0.5).any()  # by share alone,
    # some would have qualified: chance explains them


# -- truncation without a done column, and the critical transitions it explains --------------

def test_truncation_by_the_rule_links_the_cut_steps_transitions():
    steps = cut_group()
    graph = state_graph(steps, rule=OutcomeRule())
    assert "truncation" not in kinds(
        credit_alarms(graph, rule=OutcomeRule())
    )  # no done, no rule: failures
    alarm = kinds(credit_alarms(graph, rule=OutcomeRule(truncate_at=4)))["truncation"]
    assert alarm.count == 3
    assert sorted(alarm.steps["traj_id"]) == ["long0", "long1", "long2"]
    assert set(alarm.steps["t"]) == {3}
    edges = graph.edges.loc[list(alarm.edges)]
    last = graph.steps[graph.steps["traj_id"].str.startswith("long") & (graph.steps["t"] == 3)]
    assert set(edges["source"]) == set(last["node"])
    td = edges["td_error"].abs().to_numpy()
    assert (np.diff(td) <= 1e-12).all()  # largest |TD error| first
    top = graph.edges["td_error"].abs().max()
    where = "the largest in the group" if td[0] >= top - 1e-12 else "number"
    assert f"{edges['td_error'].iloc[0]:+.4g} reward units" in alarm.detail
    assert where in alarm.detail


def test_alarm_counts_of_many_groups_equal_each_groups_alarms():
    steps = pd.concat([trajectories(THREE, "three"), trajectories(ALL_FAILED, "failed"),
                       trajectories(ALL_SUCCEEDED, "won"), hub_group(), cut_group(),
                       random_walks(groups=2)], ignore_index=True)
    rule = OutcomeRule(truncate_at=4)
    table = alarm_counts(steps, rule=rule, params=G2POParams(mode="mean_std_norm"))
    ids = sorted(steps["group_id"].unique())
    assert len(table) == len(ids)
    for code, gid in enumerate(ids):
        one = credit_alarms(
            state_graph(steps[steps["group_id"] == gid], rule=OutcomeRule()), rule=rule
        )
        assert {a.kind: a.count for a in one} == \
            {k: int(v) for k, v in table.iloc[code].items() if v}, gid
