"""Truncation: a step limit blamed only where the task needs about the limit, not where an
untrained policy wandered (issue 37: limit 8, task won in 2)."""

from __future__ import annotations

import pandas as pd

from g2po.analysis.triage import run_findings, triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import beside_healthy
from tests.g2po.analysis.groups import cut_by_done
from tests.g2po.builders import trajectories

EXAMPLES = {"truncation": (beside_healthy(cut_by_done("cut")), OutcomeRule(), ["cut"])}


def wandering(group: str) -> pd.DataFrame:
    """Two rollouts win in 2 steps; two wander 8 steps and are cut at the limit of 8."""
    spec = {f"w{i}": (10, [("room", "go east", True), ("hall", "take coin", True)])
            for i in range(2)}
    spec.update({f"c{i}": (0, [("room", "look", True)] * 8) for i in range(2)})
    steps = trajectories(spec, group)
    last = steps["t"] == steps.groupby("traj_id")["t"].transform("max")
    return steps.assign(done=last & steps["traj_id"].str.startswith("w"))


def test_cuts_of_a_policy_that_wandered_are_not_the_limits_fault():
    table = triage_groups(pd.concat([wandering(f"g{i}") for i in range(6)]),
                          rule=OutcomeRule())
    assert (table["alarm_truncation"] == 2).all() and (table["severity"] == 0).all()
    (said,) = [f for f in run_findings(table) if f.kind == "truncation"]
    assert said.level == "note" and "wandered" in said.text and "nothing for the limit" in \
        said.fix
    # a task that needs the whole limit: the limit is the cause, and it ranks
    tight = triage_groups(beside_healthy(cut_by_done("cut")), rule=OutcomeRule())
    cut = tight.set_index("group_id").loc["cut"]
    assert cut["severity"] > 0 and "the task's shortest win takes 4" in cut["reason"]
