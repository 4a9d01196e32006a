"""Solved is not broken: converged groups (identical shortest wins) are progress, said once
with the share per training step and what G2PO's discount does to them; identical losses, or
identical wins longer than the task's shortest, are a collapse."""

from __future__ import annotations

import pandas as pd
import pytest

from g2po import compute_advantages
from g2po.analysis.triage import run_findings, sort_groups, triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import HEALTHY, beside_healthy
from tests.g2po.analysis.groups import ALL_SUCCEEDED
from tests.g2po.builders import trajectories

PATH = [("entrance", "go east", True), ("hall", "go north", True), ("kitchen", "go north", True)]
DETOUR = [("entrance", "go east", True), ("hall", "go west", True), ("entrance", "go east", True),
          ("hall", "go north", True), ("kitchen", "go north", True)]


def same(path, reward: float, group: str, n: int = 4) -> pd.DataFrame:
    return trajectories({f"r{i}": (reward, path) for i in range(n)}, group)


EXAMPLES = {
    "collapsed": (beside_healthy(same(PATH, 0, "same")), OutcomeRule(), ["same"]),
    "converged": (beside_healthy(same(PATH, 10, "solved")), OutcomeRule(), ["solved"]),
    "all_success": (beside_healthy(trajectories(ALL_SUCCEEDED, "won").pipe(
        lambda s: pd.concat([s, s.assign(traj_id=s["traj_id"] + "2")]))), OutcomeRule(),
        ["won"]),
}


def learning_run() -> pd.DataFrame:
    """Three training steps of one task: mixed, then converged on the 3-step win twice (two
    groups a step); and a second task whose rollouts all take the same 5-step detour while the
    first step of that task saw the 3-step win."""
    return pd.concat([
        trajectories(HEALTHY, "t1").assign(train_step=1, task="garden"),
        same(PATH, 10, "t1").assign(train_step=2, task="garden"),
        same(PATH, 10, "t1b").assign(train_step=2, task="garden"),
        same(PATH, 10, "t1").assign(train_step=3, task="garden"),
        same(PATH, 10, "t1b").assign(train_step=3, task="garden"),
        trajectories(HEALTHY, "t2").assign(train_step=1, task="cellar"),
        same(DETOUR, 10, "t2").assign(train_step=2, task="cellar"),
        same(PATH, 0, "t3").assign(train_step=3, task="attic"),
    ], ignore_index=True)


def test_converged_groups_are_progress_and_collapse_onto_a_detour_or_a_loss_is_not():
    table = triage_groups(learning_run(), rule=OutcomeRule()).set_index(["train_step",
                                                                          "group_id"])
    assert (table.loc[[(2, "t1"), (3, "t1"), (3, "t1b")], "severity"] == 0).all()
    detour = table.loc[(2, "t2")]
    assert detour["reason"].startswith("collapsed: 4 identical wins by a 5-step path; the "
                                       "task's shortest win takes 3")
    lost = table.loc[(3, "t3")]
    assert lost["alarm_collapsed"] == 4 and lost["severity"] > 0.5
    from g2po.analysis.checks import get_check

    said = get_check("collapsed").reason(table.reset_index(),
                                         [table.index.get_loc((3, "t3"))], "g2po")
    assert said == ["collapsed: 4 identical rollouts onto a losing path"]
    # the loss first, the detour (2 of its 5 steps wasted) next, then the rest
    assert list(sort_groups(table.reset_index())["group_id"][:2]) == ["t3", "t2"]
    findings = {f.kind: f for f in run_findings(table.reset_index())}
    converged = findings["converged"]
    assert converged.level == "note" and converged.groups == 4
    assert "per training step: 0% at step 1 → 67% at step 2 → 67% at step 3" in \
        converged.text


def test_the_discounts_artifact_on_converged_groups_is_said_with_the_first_step():
    steps = same(PATH, 10, "solved", n=8)
    first = compute_advantages(steps, "g2po")["adv"][steps["t"] == 0].mean()
    table = triage_groups(beside_healthy(*(steps.assign(group_id=f"s{i}") for i in range(4))),
                          rule=OutcomeRule())
    (said,) = [f for f in run_findings(table) if f.kind == "converged"]
    assert f"the first step of the optimal path gets A = {first:+.2f}" in said.text
    assert first == pytest.approx(-1.19, abs=0.01)  # the fact the design notes record
    assert "pushed away from the step that starts the win" in said.text
    assert "mean_norm" in said.fix
    grpo = [f for f in run_findings(table, "grpo") if f.kind == "converged"]
    assert "discount" not in grpo[0].text  # GRPO gives them 0: nothing to say of G2PO
