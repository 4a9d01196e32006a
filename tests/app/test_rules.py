"""One outcome rule per run, read by every page: changed once, every page shows its numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import loaders
from g2po.analysis.state_graph import state_graph
from g2po.analysis.stepdiff import step_diff
from g2po.outcomes import OutcomeRule
from loaders import RunWriter
from tests.app.builders import app_test, entry, goto, group_steps, texts, write_cut_csv

ONE = OutcomeRule(success_reward=1.0)


def write_ones_run(path: Path, train_steps: int = 3) -> Path:
    """A run whose successes are rewarded 1.0 and that says so nowhere (no ``success_reward``
    in run.json, no ``won``): its own rule is the default, success reward 10. Tasks keep a
    ``task`` column while group ids change per training step."""
    writer = RunWriter(path, {"env": "synthetic"})
    for step in range(1, train_steps + 1):
        steps = group_steps(seed=20 + step, rows=400, success_reward=1.0)
        task = steps["group_id"].astype(str)
        writer.write_step(step, steps.assign(task=task, group_id=f"s{step}-" + task))
    return path


@pytest.fixture(scope="module")
def ones_run(tmp_path_factory) -> Path:
    return write_ones_run(tmp_path_factory.mktemp("ones") / "ones")


def _group_with_success(log: loaders.Log, step: int) -> str:
    summary = log.group_summary(step, ONE)
    return str(summary.loc[summary["success_rate"] > 0, "group_id"].iloc[0])


def test_the_rule_changed_once_reaches_every_page(ones_run, runs_root):
    log = loaders.open_log(ones_run)
    assert log.rule() == OutcomeRule()  # the log states no rule: success reward 10
    step = 3
    group = _group_with_success(log, step)
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": [
        "--log", str(ones_run), "--log", str(runs_root / "run_a")]}, default_timeout=90)
    at.query_params.update({"run": "ones", "step": str(step), "group": group})
    at.run()
    assert not at.exception
    assert "success rate **0%**" in texts(at)
    # the one change: the group explorer's fix
    at.button(key=next(b.key for b in at.button
                       if b.label == "Set the success reward to 1")).click().run()
    assert not at.exception
    assert at.query_params["success"] == "1"

    # group explorer: the headline, by the new rule
    groups = log.group_summary(step, ONE).set_index("group_id")
    assert groups["success_rate"].gt(0).any() and groups["success_rate"].lt(1).any()
    assert f"success rate **{groups.loc[group, 'success_rate']:.0%}** (reward = success " \
           "reward 1)" in texts(at)
    # the group picker: every group's label
    picker = at.selectbox(key=f"group:auto:{ones_run.resolve()}:{step}")
    assert len(picker.options) == len(groups)
    for gid, label in zip(log.groups(step), picker.options, strict=True):
        assert label.endswith(f"success {groups.loc[gid, 'success_rate']:.0%} of "
                              f"{groups.loc[gid, 'n_traj']}"), label

    # Run overview: this run by its new rule, the other by its own (success reward 10)
    goto(at, "overview")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "success_rate" in d.value.columns)
    ones = table[table["run"] == "ones"]["success_rate"].to_numpy()
    np.testing.assert_allclose(ones, log.summary(ONE)["success_rate"].to_numpy())
    assert (ones > 0).all()
    other = loaders.open_log(runs_root / "run_a")
    np.testing.assert_allclose(table[table["run"] == "run_a"]["success_rate"].to_numpy(),
                               other.summary(OutcomeRule())["success_rate"].to_numpy())
    assert "ones: reward = success reward 1; run_a: reward = success reward 10" in \
        texts(at).replace("\\", "")

    # Step diff: the success rates of the two graphs, built with the rule
    goto(at, "step_diff")
    assert not at.exception
    task = at.selectbox(key="sd_task").value
    a, b = at.selectbox(key=f"sd_a:{task}").value, at.selectbox(key=f"sd_b:{task}").value
    graph = {s: state_graph(log.load_group(s, f"s{s}-{task}"), rule=ONE)
             for s in (a, b)}
    diff = step_diff(graph[a], graph[b])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"Success rate at {b}"] == f"{diff.success_b:.0%}"
    assert diff.success_b > 0  # by the old rule (success reward 10): 0 %

    # State over training: the mean A^EC of the state's steps, from TD errors into a success
    # terminal valued 1 (node values V do not depend on the rule; the terminal's value does)
    goto(at, "state_history")
    assert not at.exception
    key = at.selectbox(key="sh_state").value
    history = next(d.value for d in at.dataframe if "visits" in d.value.columns)
    row = history[history["visits"] > 0].iloc[-1]
    steps = log.load_group(int(row["train_step"]), str(row["group_id"]))
    expected = {}
    for name, rule in (("new", ONE), ("old", OutcomeRule())):
        there = state_graph(steps, rule=rule)
        node = there.nodes.index[there.nodes["canonical_key"] == key][0]
        expected[name] = there.steps.loc[there.steps["node"] == node, "adv_ec"].mean()
    assert np.isclose(row["adv_ec_mean"], expected["new"])
    assert not np.isclose(expected["new"], expected["old"])

    # Estimator comparison: the estimators that take a success reward get 1
    goto(at, "compare")
    assert not at.exception
    assert at.number_input(key="cmp_g2po_success_reward").value == 1.0

    # Export: the rule the table was computed with
    goto(at, "export")
    assert not at.exception
    (shown,) = at.json
    meta = json.loads(shown.value)
    assert meta["source"]["outcome_rule"]["success_reward"] == 1.0
    g2po = next(e for e in meta["estimators"] if e["name"] == "g2po")
    assert g2po["params"]["success_reward"] == 1.0

    # and back on the group explorer, the same rule
    goto(at, "group")
    key = next(n.key for n in at.number_input if n.key.startswith("p_success:"))
    assert at.number_input(key=key).value == 1.0


def drawn_kinds(at) -> dict[str, int]:
    (component,) = at.get("component_instance")
    nodes = json.loads(component.proto.json_args)["graph"]["nodes"]
    return {n["label"]: n for n in nodes}


def test_failures_cut_at_a_step_limit_are_offered_the_truncation_rule(tmp_path):
    csv = write_cut_csv(tmp_path / "cut.csv")
    at = app_test("group", ["--log", str(csv)])
    assert not at.exception
    assert "3 of 4 failed trajectories" in texts(at)
    assert "truncated" not in drawn_kinds(at)
    before = next(d.value for d in at.dataframe if "A^EP" in d.value.columns)
    fix = next(b for b in at.button if b.label.startswith("Count length ≥ 6"))
    fix.click().run()
    assert not at.exception
    assert at.query_params["truncate_at"] == "6"
    keys = [c.key for c in at.checkbox if c.key.startswith("p_by_length:")]
    assert at.checkbox(key=keys[0]).value is True
    assert "**3** truncated" in texts(at) and "failed trajectories" not in texts(at)
    assert "truncated" in drawn_kinds(at)
    after = next(d.value for d in at.dataframe if "A^EP" in d.value.columns)
    # only the drawing and the count change: the estimator values truncation as failure
    for column in ("A", "A^EP", "A^NC", "A^EC"):
        np.testing.assert_allclose(after[column].to_numpy(), before[column].to_numpy())
    assert set(after["end"]) >= {"truncated"}
    # the Run overview counts them by the same rule, and offers nothing more
    goto(at, "overview")
    table = next(d.value for d in at.dataframe if "truncated_rate" in d.value.columns)
    assert table["truncated_rate"].tolist() == [pytest.approx(3 / 5)]
    assert not any(b.label.startswith("Count length") for b in at.button)


def test_the_run_overview_offers_the_truncation_rule_and_a_url_keeps_it(tmp_path):
    csv = write_cut_csv(tmp_path / "cut.csv")
    at = app_test("overview", ["--log", str(csv)])
    assert not at.exception
    assert "3 of 4 failed trajectories" in texts(at)
    at.button(key=next(b.key for b in at.button if b.label.startswith("Count length ≥ 6"))
              ).click().run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "truncated_rate" in d.value.columns)
    assert table["truncated_rate"].tolist() == [pytest.approx(3 / 5)]
    # a link with the rule opens it
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": ["--log", str(csv)]},
                               default_timeout=60)
    at.query_params["truncate_at"] = "6"
    at.run()
    assert not at.exception and "**3** truncated" in texts(at)
    assert "truncated" in drawn_kinds(at)


def test_a_bad_rule_value_is_a_message_and_the_last_good_rule_stays(tmp_path):
    at = app_test("group", ["--log", str(write_cut_csv(tmp_path / "cut.csv"))])
    key = next(n.key for n in at.number_input if n.key.startswith("p_success:"))
    at.number_input(key=key).set_value(1.0).run()
    assert at.query_params["success"] == "1"
    at.number_input(key=key).set_value(1e200).run()
    assert not at.exception
    assert any("Bad outcome rule" in e.value and "success_reward must be" in
               e.value.replace("\\", "") for e in at.error)
    assert at.query_params["success"] == "1"  # the last good rule, on every page
    assert "reward = success reward 1)" in texts(at)


def test_the_run_overview_offers_the_success_reward_of_a_zero_one_reward_run(ones_run,
                                                                           runs_root):
    at = app_test("overview", ["--log", str(ones_run), "--log", str(runs_root / "run_a")])
    assert not at.exception
    table = next(d.value for d in at.dataframe if "success_rate" in d.value.columns)
    assert (table[table["run"] == "ones"]["success_rate"] == 0).all()
    (offer,) = [b for b in at.button if b.key.startswith("reward_scale_offer:overview:")]
    assert offer.label == "Set the success reward to 1" and "ones" in offer.key
    assert "but the outcome rule counts success at reward 10" in texts(at)
    offer.click().run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "success_rate" in d.value.columns)
    np.testing.assert_allclose(table[table["run"] == "ones"]["success_rate"].to_numpy(),
                               loaders.open_log(ones_run).summary(ONE)["success_rate"])
    assert not [b for b in at.button if b.key.startswith("reward_scale_offer:")]
