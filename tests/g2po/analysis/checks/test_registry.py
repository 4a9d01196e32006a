"""The registry walked: every registered check has every part, and each part answers on the
check's own example (``EXAMPLES`` in its test module, ``test_<module>.py`` beside this one).
A check registered without a part, or without an example where it fires, fails here."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pandas as pd
import pytest

import tests.g2po.analysis.checks as here
from g2po.analysis.alarms import credit_alarms
from g2po.analysis.checks import Alarm, Check, get_check, list_checks, register_check
from g2po.analysis.checks.registry import _REGISTRY
from g2po.analysis.checks.rows import separate_repeats
from g2po.analysis.findings import assess, recount, run_findings
from g2po.analysis.group_table import group_rows, text_lookup, triage_columns, triage_groups
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage_show import filter_groups, step_shares
from g2po.params import DEFAULT_PARAMS


def examples() -> dict[str, tuple]:
    """kind → (step table of groups, outcome rule, group ids where it fires)."""
    found = {}
    for module in pkgutil.iter_modules(here.__path__):
        if module.name.startswith("test_"):
            found.update(getattr(importlib.import_module(f"{here.__name__}.{module.name}"),
                                 "EXAMPLES", {}))
    return found


EXAMPLES = examples()
KINDS = [c.kind for c in list_checks()]


def test_every_registered_check_has_an_example_where_it_fires():
    assert sorted(EXAMPLES) == sorted(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_part_answers_on_the_checks_example(kind):
    check = get_check(kind)
    assert isinstance(check, Check) and kind.isidentifier() and check.title
    for part in ("measure", "severity", "reason", "run_text", "fix", "alarm"):
        assert callable(getattr(check, part)), part
    steps, rule, firing = EXAMPLES[kind]
    rows = group_rows(steps, rule=rule, params=DEFAULT_PARAMS, stochastic=False,
                      text=text_lookup([steps]))
    assert list(rows.columns) == triage_columns()
    assert set(check.columns) <= set(rows.columns)
    table = assess(recount(rows), "g2po")
    fires = check.fired(table, "g2po")
    assert set(table.loc[fires, "group_id"]) == set(firing)
    severity = np.asarray(check.severity(table, "g2po"), dtype=float)
    assert severity.shape == (len(table),) and ((severity >= 0) & (severity <= 1)).all()
    assert (severity[~fires] == 0).all()
    if not check.defect:
        assert (severity == 0).all()
    reasons = check.reason(table, np.flatnonzero(fires), "g2po")
    assert len(reasons) == fires.sum() and all(isinstance(r, str) and r for r in reasons)
    for part in (check.run_text, check.fix):
        said = part(table, fires, "g2po")
        assert isinstance(said, str) and said
    if check.whole is not None:  # the run-wide stage fills what the batches leave out
        got = check.whole(table)
        assert "count" in got and set(got) <= {"count", *check.columns}
        assert all(np.shape(v) == (len(table),) for v in got.values())
        left = {c for c in check.columns if rows[c].isna().all()}
        assert left <= set(got), f"columns neither measured nor filled: {left - set(got)}"
    for gid in table["group_id"]:  # the explorer opens a group as the loaders give it
        rows = separate_repeats(steps[steps["group_id"] == gid])
        graph = state_graph(rows[[c for c in rows.columns if not c.startswith("_")]],
                            rule=rule)
        for alarm in credit_alarms(graph, rule=rule):
            assert isinstance(alarm, Alarm) and alarm.title and alarm.detail
        if check.whole is not None and gid in firing:  # said given the group's row
            row = table[table["group_id"] == gid].iloc[0].to_dict()
            assert kind in [a.kind for a in credit_alarms(graph, rule=rule, row=row)]


def test_a_check_registered_anywhere_reaches_the_table_filters_shares_and_findings():
    """What "one file" buys: a new check needs no edit elsewhere."""
    def measure(batch):
        n = np.bincount(batch.sig.ix.traj_group, minlength=batch.sig.ix.n_groups)
        return {"count": (n == 3).astype(np.int64), "three_note": np.where(n == 3, "3", "")}

    check = Check(
        kind="three_rollouts", title="Three rollouts", measure=measure,
        severity=lambda t, e: (t["alarm_three_rollouts"].to_numpy() > 0) * 0.7,
        reason=lambda t, rows, e: ["three of them" for _ in rows],
        run_text=lambda t, f, e: "groups of three.", fix=lambda t, f, e: "none.",
        alarm=lambda view: None, columns={"three_note": "three?"})
    register_check(check)
    try:
        from tests.g2po.analysis.groups import ALL_FAILED, ALL_SUCCEEDED
        from tests.g2po.builders import trajectories

        steps = pd.concat([trajectories(ALL_FAILED, "three"),
                           trajectories(ALL_SUCCEEDED, "two")], ignore_index=True)
        from g2po.outcomes import OutcomeRule

        table = triage_groups(steps, rule=OutcomeRule()).set_index("group_id")
        assert table.loc["three", "alarm_three_rollouts"] == 1
        assert table.loc["three", "three_note"] == "3"
        assert list(filter_groups(table.reset_index(), alarms=["three_rollouts"])
                    ["group_id"]) == ["three"]
        assert "alarm_three_rollouts" in step_shares(table.reset_index()).columns
        with pytest.raises(ValueError, match="already registered"):
            register_check(Check(**{**check.__dict__, "title": "other"}))
    finally:
        _REGISTRY.pop("three_rollouts", None)
    assert "three_rollouts" not in [c.kind for c in list_checks()]
    assert run_findings(pd.DataFrame()) == []
