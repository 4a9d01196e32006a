"""Merging that does nothing: no merging at all, and a key that makes the graph a prefix tree
(history in the key)."""

from __future__ import annotations

import pandas as pd

from g2po.analysis.alarms import credit_alarms
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import HEALTHY, beside_healthy
from tests.g2po.builders import trajectories

#: Three rollouts of five steps, no two steps with one key: 15 nodes for 15 steps.
CHAINS = {f"r{i}": (10 * (i == 0), [(f"s{i}-{t}", "go", True) for t in range(5)])
          for i in range(3)}


def keyed(spec: dict, key, group: str) -> pd.DataFrame:
    """``spec``'s rollouts with each state key made by ``key(rooms so far, t)``."""
    return trajectories({tid: (r, [(key([s for s, _, _ in steps[:t + 1]], t), a, v)
                                   for t, (_, a, v) in enumerate(steps)])
                         for tid, (r, steps) in spec.items()}, group)


def transcript(rooms, t):
    return " > ".join(rooms)


def past_moves(rooms, t):
    return f"{rooms[-1]} (by way of {', '.join(rooms[:-1]) or 'nowhere'})"


#: HEALTHY with one more rollout each way, so that paths part at two states.
WIDER = {**HEALTHY, "e": (0, [("entrance", "go east", True), ("hall", "go west", True),
                              ("entrance", "go south", True)])}

EXAMPLES = {
    "no_merging": (beside_healthy(trajectories(CHAINS, "chains")), OutcomeRule(), ["chains"]),
    "prefix_tree": (beside_healthy(keyed(WIDER, transcript, "history")), OutcomeRule(),
                    ["history"]),
}


def test_a_key_that_carries_the_history_makes_a_prefix_tree():
    table = triage_groups(pd.concat([keyed(WIDER, transcript, "transcript"),
                                     keyed(WIDER, past_moves, "moves"),
                                     trajectories(WIDER, "plain")], ignore_index=True),
                          rule=OutcomeRule()).set_index("group_id")
    # the plain key: the kitchen reached from the hall and the corridor, the entrance again
    assert table.loc["plain", "rejoins"] > 0 and table.loc["plain", "alarm_prefix_tree"] == 0
    # a transcript key: each key the one before with more, nothing reached two ways
    transcript_row = table.loc["transcript"]
    assert transcript_row["rejoins"] == 0 and transcript_row["key_grows"] == 1.0
    assert transcript_row["reason"].startswith("state key carries the history: each key is the "
                                               "one before with more appended")
    assert transcript_row["merge_rate"] > 0.3  # rollouts share their start: merging "looks" fine
    # the rooms passed through, after the room: no key grows, but paths part and never meet
    moves = table.loc["moves"]
    assert moves["key_grows"] == 0 and moves["alarm_prefix_tree"] == 2
    assert moves["reason"].startswith("state key carries the history: paths part at 2 states")
    alarm = {a.kind: a for a in credit_alarms(
        state_graph(keyed(WIDER, transcript, "g"), rule=OutcomeRule()), rule=OutcomeRule())}
    assert "the key is the transcript" in alarm["prefix_tree"].detail


def test_chains_do_not_merge():
    found = {a.kind: a for a in credit_alarms(
        state_graph(trajectories(CHAINS), rule=OutcomeRule()), rule=OutcomeRule())}
    assert found["no_merging"].count == 15
