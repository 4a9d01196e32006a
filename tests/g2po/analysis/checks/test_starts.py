"""Mixed starts: one group id over rollouts of different tasks (prime-rl #600)."""

from __future__ import annotations

import pandas as pd

from g2po.analysis.triage import run_findings, sort_groups, triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import HEALTHY, beside_healthy
from tests.g2po.builders import trajectories


def two_tasks(group: str = "mixed", first: int = 2, second: int = 2) -> pd.DataFrame:
    """``first`` rollouts from the entrance, ``second`` from another task's kitchen start."""
    spec = {f"a{i}": HEALTHY["abcd"[i % 4]] for i in range(first)}
    spec.update({f"b{i}": (0, [("garden gate", "open gate", True), ("garden", "dig", True)])
                 for i in range(second)})
    return trajectories(spec, group)


EXAMPLES = {"mixed_start": (beside_healthy(two_tasks()), OutcomeRule(), ["mixed"])}


def test_the_starts_are_named_with_their_counts_and_an_even_split_ranks_first():
    table = triage_groups(beside_healthy(two_tasks(first=2, second=2)), rule=OutcomeRule())
    mixed = table.set_index("group_id").loc["mixed"]
    assert mixed["alarm_mixed_start"] == 2
    assert mixed["start_evidence"] == "2 starts: 'entrance' (2×), 'garden gate' (2×)"
    assert mixed["severity"] > 0.5 and mixed["reason"].startswith(
        "rollouts do not share a start: 2 starts: 'entrance' (2×)")
    assert sort_groups(table)["group_id"].iloc[0] == "mixed"
    # one stray rollout of four: a quarter off the main start, half the severity
    lopsided = triage_groups(two_tasks(first=3, second=1), rule=OutcomeRule())
    assert lopsided["start_minority"].iloc[0] == 0.25
    assert lopsided["start_evidence"].iloc[0] == "2 starts: 'entrance' (3×), 'garden gate' (1×)"


def test_rollouts_carrying_two_tasks_fire_even_from_one_start():
    """agent-lightning #489: turns of different prompts in one group, the same first screen."""
    steps = trajectories(HEALTHY, "g").assign(task=["cook the egg"] * 6 + ["fry the egg"] * 6)
    row = triage_groups(steps, rule=OutcomeRule()).iloc[0]
    assert row["alarm_mixed_start"] == 2
    assert row["start_evidence"] == "2 tasks: 'cook the egg' (2×), 'fry the egg' (2×)"


def test_a_run_whose_every_group_mixes_starts_is_told_once():
    steps = pd.concat([two_tasks(f"m{i}") for i in range(6)], ignore_index=True)
    table = triage_groups(steps, rule=OutcomeRule())
    (said,) = [f for f in run_findings(table) if f.kind == "mixed_start"]
    assert said.groups == 6 and "group key mixes tasks" in said.text
    assert "uid" in said.fix
    assert table["run_wide"].str.contains("mixed_start").all()


def test_every_rollout_its_own_start_is_rather_a_key_with_an_id():
    """defect_runs_b's no-merging key (a request id in every observation) gives each rollout a
    start of its own: named, trimmed to what differs, at half the weight of a task mix."""
    spec = {f"r{i}": (10 * (i % 2), [(f"Room 0 on floor 0. (request {i}{t:03x})", "go", True)
                                     for t in range(5)]) for i in range(4)}
    row = triage_groups(trajectories(spec, "ids"), rule=OutcomeRule()).iloc[0]
    assert row["alarm_mixed_start"] == 4 and row["alarm_no_merging"] > 0
    assert row["start_evidence"] == "4 starts: '…0000)' (1×), '…1000)' (1×), '…2000)' (1×), " \
                                    "1 more"
    assert row["reason"].startswith("no merging: merge rate 0%")
