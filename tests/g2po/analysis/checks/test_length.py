"""Length weighting: step rows weigh rollouts by their length (NeMo RL labs-molt #65)."""

from __future__ import annotations

from g2po.analysis.triage import run_findings, triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.builders import trajectories

#: Two quick wins, two long failures: half the rollouts won, a fifth of the rows are wins.
SKEWED = {
    "w0": (10, [("s0", "go", True), ("s1", "win", True)]),
    "w1": (10, [("s0", "go", True), ("s1", "win", True)]),
    "f0": (0, [("s0", "look", True)] + [(f"a{t}", "wait", True) for t in range(7)]),
    "f1": (0, [("s0", "look", True)] + [(f"a{t}", "wait", True) for t in range(7)]),
}

EXAMPLES = {"length_weighting": (beside_healthy(trajectories(SKEWED, "skewed")),
                                 OutcomeRule(), ["skewed"])}


def test_the_gap_between_rows_and_rollouts_is_said_once_never_ranked():
    table = triage_groups(beside_healthy(*(trajectories(SKEWED, f"skewed{i}") for i in range(4))),
                          rule=OutcomeRule())
    skewed = table.set_index("group_id").loc["skewed0"]
    assert skewed["row_success_rate"] == 4 / 20 and skewed["success_rate"] == 0.5
    assert skewed["alarm_length_weighting"] == 1
    assert "length" not in skewed["reason"]  # information, not a defect of the group
    (said,) = [f for f in run_findings(table) if f.kind == "length_weighting"]
    assert said.level == "note" and "per rollout" in said.fix
    assert "over this run's step rows" in said.text and said.groups == 4
    # a run where it fires on fewer groups than that says nothing of it
    few = triage_groups(beside_healthy(trajectories(SKEWED, "skewed")), rule=OutcomeRule())
    assert "length_weighting" not in [f.kind for f in run_findings(few)]
