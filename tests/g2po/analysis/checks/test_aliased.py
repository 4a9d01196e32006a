"""Aliased states, and what separates the next states (issue 37): a key that drops where the
agent came from, a strategy that merged keys of the log, or hidden world state (partial
observability), which no key strategy over the observation can fix."""

from __future__ import annotations

import pandas as pd

from g2po.analysis.alarms import credit_alarms
from g2po.analysis.checks import get_check
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import run_findings, triage_groups
from g2po.analysis.words import same_place
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import aliased_group
from tests.g2po.builders import trajectories

EXAMPLES = {"aliased": (beside_healthy(aliased_group("dark")), OutcomeRule(), ["dark"])}

STUDIO = "-= Studio =-\nYou are in a studio. A passage leads east."


def door(state: str) -> str:
    return f"-= Kitchen =-\nYou are in a kitchen. There is {state} door leading south."


def hidden_group(group: str = "door") -> pd.DataFrame:
    """TextWorld-like: four rollouts walk hall → studio → kitchen alike; two opened the
    kitchen's door in an earlier episode step the studio does not show, so the same (studio,
    go east) leads on to the kitchen with a closed or an open door."""
    spec = {}
    for i, opened in enumerate([False, False, True, True]):
        before = [("hall", "open door" if opened else "look", True)]
        spec[f"r{i}"] = (10 * opened, [*before, ("hall", "go west", True),
                                       (STUDIO, "go east", True),
                                       (door("an open" if opened else "a closed"), "go south",
                                        True)])
    return trajectories(spec, group)


def test_hidden_state_is_said_as_partial_observability_and_weighs_a_third():
    table = triage_groups(pd.concat([hidden_group(), aliased_group("dark")],
                                    ignore_index=True), rule=OutcomeRule()).set_index("group_id")
    hidden, dark = table.loc["door"], table.loc["dark"]
    assert hidden["alarm_aliased"] >= 1 and hidden["aliased_hidden"] == 1.0
    assert "(hidden state: the same observation, another world)" in hidden["reason"]
    assert dark["aliased_hidden"] == 0 and not dark["aliased_merged"]
    assert dark["reason"].startswith("key merges states: 'dark room' + go north")
    # the words for the run and the explorer say partial observability, not "use a regex"
    only_hidden = triage_groups(pd.concat([hidden_group(f"d{i}") for i in range(5)]),
                                rule=OutcomeRule())
    (said,) = [f for f in run_findings(only_hidden) if f.kind == "aliased"]
    assert "partial observability" in said.text and "regex" not in said.fix
    alarm = {a.kind: a for a in credit_alarms(state_graph(hidden_group(), rule=OutcomeRule()),
                                              rule=OutcomeRule())}["aliased"]
    assert "partial observability" in alarm.detail


def test_a_strategy_that_merged_the_logs_keys_is_told_to_be_finer():
    rooms = {"a": (10, [("kitchen 1", "go", True), ("garden", "win", True)]),
             "b": (0, [("kitchen 2", "go", True), ("cellar", "lose", True)])}
    params = G2POParams(state_key="regex:(kitchen|garden|cellar)")
    table = triage_groups(trajectories(rooms), rule=OutcomeRule(), params=params)
    assert table["aliased_merged"].iloc[0] and table["alarm_aliased"].iloc[0] == 1
    assert "(the strategy merged keys that differ)" in table["reason"].iloc[0]
    check = get_check("aliased")
    assert "finer state-key strategy" in check.fix(table, check.fired(table), "g2po")


def test_same_place_reads_the_start_the_next_states_share():
    assert same_place([door("a closed"), door("an open")])
    assert not same_place(["You are in the kitchen.", "You are in the entrance."])
    assert not same_place(["-= Kitchen =- You are in the kitchen.",
                           "-= Entrance =- You are in the entrance."])
