"""Group sizes against the run's usual size: partial groups (rLLM-style splits), and groups of
one rollout said once for the run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.alarms import credit_alarms
from g2po.analysis.checks.sizes import usual_size
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import run_findings, sort_groups, triage_groups
from g2po.outcomes import OutcomeRule
from tests.g2po.analysis.checks.examples import HEALTHY
from tests.g2po.builders import trajectories


def run(sizes: dict[str, int]) -> pd.DataFrame:
    """One group per id, of that many of HEALTHY's rollouts (cycled)."""
    return pd.concat([trajectories({f"r{i}": HEALTHY["abcd"[i % 4]] for i in range(n)}, gid)
                      for gid, n in sizes.items()], ignore_index=True)


EXAMPLES = {
    "partial_group": (run({"a": 8, "b": 8, "c": 8, "short": 3}), OutcomeRule(), ["short"]),
    "singleton": (run({"a": 4, "b": 4, "c": 4, "one": 1}), OutcomeRule(), ["one"]),
}


def test_a_group_holding_3_of_8_rollouts_ranks_with_its_missing_share():
    table = triage_groups(run({"a": 8, "b": 8, "c": 8, "d": 8, "short": 3}), rule=OutcomeRule())
    short = table.set_index("group_id").loc["short"]
    assert short["alarm_partial_group"] == 5  # the missing rollouts
    assert short["reason"] == "partial group: 3 of the run's usual 8 rollouts"
    # its missing share, weighed as one group of five in the run: (1 - 1/9)²
    assert short["severity"] == pytest.approx(5 / 8 * (1 - 1 / 9) ** 2)
    assert sort_groups(table)["group_id"].iloc[0] == "short"
    assert (table.set_index("group_id").drop(index="short")["alarm_partial_group"] == 0).all()


def test_no_usual_size_no_partial_group():
    """Groups of every size: nothing to hold one against."""
    table = triage_groups(run({"a": 2, "b": 3, "c": 4, "d": 5}), rule=OutcomeRule())
    assert usual_size(table) == 0 and (table["alarm_partial_group"] == 0).all()


def test_every_rollout_its_own_group_is_said_once_and_ranks_nothing():
    """rLLM #605 / #924: a group key per rollout makes every group one."""
    table = triage_groups(run({f"g{i}": 1 for i in range(30)}), rule=OutcomeRule())
    (said,) = [f for f in run_findings(table) if f.kind == "singleton"]
    assert said.groups == 30 and said.text.startswith("One rollout on 30 of 30 groups")
    assert "every group holds a single rollout" in said.text and "one per rollout" in said.text
    assert (table["severity"] < 0.05).all() and (table["run_wide"].str.contains("singleton")).all()
    # in the explorer, said on the group itself
    graph = state_graph(run({"g": 1}), rule=OutcomeRule())
    assert [a.kind for a in credit_alarms(graph, rule=OutcomeRule())
            if a.kind == "singleton"] == ["singleton"]


def test_a_few_groups_of_one_among_groups_of_eight_rank_high():
    table = triage_groups(run({**{f"g{i}": 8 for i in range(6)}, "one": 1}), rule=OutcomeRule())
    one = table.set_index("group_id").loc["one"]
    assert one["alarm_singleton"] == 1 and one["alarm_partial_group"] == 7
    assert sort_groups(table)["group_id"].iloc[0] == "one"
    assert np.isclose(one["severity"], table["severity"].max())


def test_a_verl_dump_with_a_partial_group(tmp_path):
    """Integrity on a verl dump, through the same triage: a uid that lost two sessions."""
    from g2po.analysis.triage import triage_log
    from loaders import open_log
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    entries = agent_loop_entries(1, prompts=3, sessions=4)
    short = entries[0]["uid"].rsplit("_", 2)[0]
    entries = [e for e in entries if not (e["uid"].startswith(short) and
                                          e["uid"].rsplit("_", 2)[1] in ("2", "3"))]
    write_verl_dump(tmp_path / "dump", 1, entries)
    table = triage_log(open_log(tmp_path / "dump"), cache=False).set_index("group_id")
    assert table.loc[short, "reason"].startswith("partial group: 2 of the run's usual 4")
    assert (table.drop(index=short)["alarm_partial_group"] == 0).all()
