import html
import json
import re
from typing import Literal

import numpy as np
import pytest

from g2po.analysis.compare import parameter_choices, zscore
from loaders import RunWriter
from tests.app.builders import (
    app_test,
    group_steps,
    shown,
    texts,
    token_spans,
    token_steps,
    write_token_table,
)
from tests.loaders.builders import SYSTEM, agent_loop_entries, write_verl_dump

#: Trajectory ids as long as a real run's: the same long prefix, a seed that tells them apart.
LONG = "cooking-recipe3-take2-go9-open-cook-cut-train-seed"


@pytest.fixture(scope="module")
def long_ids_run(tmp_path_factory):
    """A run whose trajectory ids are 52+ characters, differing only at their end."""
    path = tmp_path_factory.mktemp("long") / "long"
    writer = RunWriter(path, {"env": "synthetic", "config": {"success_reward": 10.0}})
    steps = group_steps(seed=3, rows=300)
    writer.write_step(1, steps.assign(traj_id=LONG + steps["traj_id"].str[1:] + ":"
                                      + steps["group_id"].str[-1:]))
    return path


def test_comparison_shows_table_charts_correlation_and_disagreements(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    assert not at.exception
    assert at.title[0].value == "Estimator comparison"
    chosen = at.multiselect(key="cmp_estimators").value
    assert {"g2po", "grpo", "gigpo"} <= set(chosen)
    table = at.dataframe[0].value
    assert set(chosen) <= set(table.columns)
    assert len(at.get("plotly_chart")) == 2  # per-trajectory lines, correlation heatmap
    assert "steps get opposite signs" in texts(at)
    diff = at.dataframe[1].value
    a, b = at.selectbox(key="cmp_a").value, at.selectbox(key="cmp_b").value
    assert (np.sign(diff[a]) * np.sign(diff[b]) < 0).all()


def test_estimator_choice_and_parameters_recompute(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    at.multiselect(key="cmp_estimators").set_value(["g2po", "g2po_ep"]).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert not np.allclose(table["g2po"], table["g2po_ep"])
    at.number_input(key="cmp_g2po_w").set_value(0.0).run()
    table = at.dataframe[0].value
    np.testing.assert_allclose(table["g2po"], table["g2po_ep"])


def test_an_estimator_that_cannot_run_gets_a_message(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    at.multiselect(key="cmp_estimators").set_value(["value_iteration", "grpo"]).run()
    at.number_input(key="cmp_value_iteration_gamma").set_value(1.0).run()
    assert not at.exception
    assert any("value_iteration could not run" in e.value.replace("\\", "") for e in at.error)
    assert "grpo" in at.dataframe[0].value.columns


def test_no_estimator_chosen(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    at.multiselect(key="cmp_estimators").set_value([]).run()
    assert not at.exception and "at least one" in texts(at)


@pytest.fixture
def literal_estimator():
    """A registered estimator with a Literal choice, a whole-number and a required parameter,
    as a helper's or a plugin's would be; unregistered afterwards."""
    from g2po import estimators

    @estimators.register_estimator("test_choice_est", overwrite=True)
    def test_choice_est(ix, side: Literal["up", "down"] = "up", repeat: int = 2,
                        mode: str = "mean_norm"):
        assert isinstance(repeat, int)
        sign = 1.0 if side == "up" else -1.0
        return {"adv": sign * repeat * (ix.reward - ix.reward.mean())}

    return "test_choice_est"


def test_choices_not_free_text_and_registered_estimators_work(runs_root, literal_estimator):
    at = app_test("compare", ["--log", str(runs_root)])
    at.multiselect(key="cmp_estimators").set_value(["g2po", "gigpo", literal_estimator]).run()
    assert not at.exception
    assert at.selectbox(key="cmp_g2po_mode").options == ["mean_std_norm", "mean_norm"]
    assert at.selectbox(key="cmp_g2po_terminal").options == ["binary", "reward"]
    assert at.selectbox(key="cmp_gigpo_mode").value == "mean_norm"
    assert at.selectbox(key="cmp_test_choice_est_side").options == ["up", "down"]
    assert at.selectbox(key="cmp_test_choice_est_mode").options == ["mean_std_norm",
                                                                     "mean_norm"]
    assert not [t for t in at.text_input if t.key and t.key.startswith("cmp_")]
    up = at.dataframe[0].value[literal_estimator].to_numpy()
    at.selectbox(key="cmp_test_choice_est_side").set_value("down").run()
    at.number_input(key="cmp_test_choice_est_repeat").set_value(3).run()
    assert not at.exception
    np.testing.assert_allclose(at.dataframe[0].value[literal_estimator], -1.5 * up)
    assert parameter_choices(literal_estimator) == {"side": ("up", "down"),
                                                    "mode": ("mean_std_norm", "mean_norm")}


def test_normalisation_highlight_text_column_and_state_key(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    raw = at.dataframe[0].value
    assert "observation" in raw.columns and "state" not in raw.columns
    assert "what the policy saw" in texts(at)
    at.radio(key="cmp_norm").set_value("z-scored over the group").run()
    assert not at.exception
    z = at.dataframe[0].value
    for name in ("g2po", "grpo", "gigpo"):
        values = z[name].to_numpy()
        assert abs(values.mean()) < 1e-9 and abs(values.std() - 1.0) < 1e-9
        np.testing.assert_allclose(values, zscore(raw, [name])[name])
    at.selectbox(key="cmp_highlight").set_value("grpo").run()
    spec = at.get("plotly_chart")[0].proto.spec
    assert '"width":4' in spec and '"opacity":0.35' in spec
    assert at.selectbox(key="cmp_state_key").options[:2] == ["exact", "normalized"]
    assert "in the group explorer's graph" in texts(at)
    at.selectbox(key="cmp_state_key").set_value("similarity:0.8").run()
    assert not at.exception
    assert "under this page's state key" in texts(at)  # node ids are not the explorer's then


@pytest.fixture
def column_estimator():
    """A registered estimator that needs a step column the test logs do not have."""
    from g2po import estimators

    @estimators.register_estimator(
        "test_column_est", overwrite=True, title="Needs a column", summary="the flag",
        columns=(estimators.StepColumn("test_flag_col", "bool", "a flag per step"),))
    def test_column_est(ix):
        return {"adv": ix.columns["test_flag_col"].astype(float)}

    yield "test_column_est"
    estimators.registry._REGISTRY.pop("test_column_est", None)


def test_every_registered_estimator_runs_on_the_page(runs_root, column_estimator):
    """Built-in, a helper's or a plugin's: each appears and runs through the registry; one
    that needs a step column the log lacks says which, and the others run."""
    from g2po.estimators import get_spec, list_estimators

    at = app_test("compare", ["--log", str(runs_root)])
    everything = list_estimators()
    assert set(at.multiselect(key="cmp_estimators").options) == set(everything)
    at.multiselect(key="cmp_estimators").set_value(everything).run()
    assert not at.exception
    needing = {n for n in everything if any(c.required for c in get_spec(n).columns)}
    assert column_estimator in needing
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == len(needing)
    for name in needing:
        column = next(c.name for c in get_spec(name).columns if c.required)
        assert any(f"{name} could not run" in e and f"needs the step column '{column}'" in e
                   for e in errors), (name, errors)
    assert set(everything) - needing <= set(at.dataframe[0].value.columns)
    assert not [t for t in at.text_input if t.key and t.key.startswith("cmp_")]
    assert "Needs a column" in texts(at)


def test_numbers_come_before_text_and_ids_show_what_tells_them_apart(long_ids_run):
    at = app_test("compare", ["--log", str(long_ids_run)])
    assert not at.exception
    table = at.dataframe[0].value
    columns = table.columns.tolist()
    assert columns[:4] == ["rollout", "t", "node", "outcome"]
    chosen = at.multiselect(key="cmp_estimators").value
    assert columns[-2:] == ["action", "observation"]
    assert set(columns[columns.index("valid") + 1:-2]) == set(chosen)
    ids = table["rollout"].drop_duplicates().tolist()
    assert all(len(i) <= 24 for i in ids) and len(set(ids)) == len(ids)
    # the part that differs, as the group explorer's rollout column shows it
    assert not any(i.startswith(LONG[:8]) for i in ids) and all(i.endswith(":0") for i in ids)
    explorer = app_test("group", ["--log", str(long_ids_run)])
    assert set(ids) <= set(next(d.value["rollout"] for d in explorer.dataframe
                                if "rollout" in d.value.columns))
    assert set(table["outcome"]) <= {"success", "failure", "truncated"}


def test_each_trajectory_chart_is_titled_with_its_outcome_and_length(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    table = at.dataframe[0].value
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    for traj in at.multiselect(key="cmp_trajs").value:
        rows = table[table["rollout"] == traj]
        want = f"{traj} · {rows['outcome'].iloc[0]} · {len(rows)} steps"
        assert want in titles


def test_disagreements_show_node_outcome_parts_by_z_gap(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    at.multiselect(key="cmp_estimators").set_value(["g2po", "gigpo", "hgpo"]).run()
    at.selectbox(key="cmp_a").set_value("g2po").run()
    at.selectbox(key="cmp_b").set_value("gigpo").run()
    assert not at.exception
    body = texts(at)
    assert "outcome credit" not in body and "z gap" in body
    diff = at.dataframe[1].value
    assert len(diff) > 0
    assert diff.columns.tolist() == [
        "rollout", "t", "node", "outcome", "g2po", "g2po · A^EP", "g2po · A^NC", "g2po · A^EC",
        "gigpo", "gigpo · A^EP", "gigpo · A^S", "z gap", "decided by", "action",
        "observation"]
    assert diff["z gap"].is_monotonic_decreasing
    np.testing.assert_allclose(diff["g2po"], diff["g2po · A^EP"] + diff["g2po · A^NC"]
                               + diff["g2po · A^EC"])
    np.testing.assert_allclose(diff["gigpo"], diff["gigpo · A^EP"] + diff["gigpo · A^S"])
    # the node column is the group explorer's: each row's node is where its step is there
    steps = at.dataframe[0].value.set_index(["rollout", "t"])
    for row in diff.head(5).itertuples():
        assert steps.loc[(row.rollout, row.t), "node"] == row.node
    at.selectbox(key="cmp_b").set_value("hgpo").run()
    parts = [c for c in at.dataframe[1].value.columns if c.startswith("hgpo · ")]
    assert parts == ["hgpo · A^k1", "hgpo · A^k2", "hgpo · A^k3"]


def test_hgpo_follows_the_sidebars_gamma_and_takes_its_own_parameters(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    at.number_input(key="p_gamma").set_value(0.9).run()
    at.multiselect(key="cmp_estimators").set_value(["hgpo", "gigpo"]).run()
    assert at.number_input(key="cmp_hgpo_gamma").value == pytest.approx(0.9)
    assert at.number_input(key="cmp_hgpo_history_length").value == 2
    assert at.selectbox(key="cmp_hgpo_mode").options == ["mean_std_norm", "mean_norm"]
    before = at.dataframe[0].value["hgpo"].to_numpy()
    at.number_input(key="cmp_hgpo_history_length").set_value(0).run()
    assert not at.exception
    after = at.dataframe[0].value["hgpo"].to_numpy()
    assert not np.allclose(before, after)


@pytest.fixture(scope="module")
def verl_dump(tmp_path_factory):
    path = tmp_path_factory.mktemp("verl") / "rollout_data"
    write_verl_dump(path, 1, agent_loop_entries(1, prompts=2, sessions=4))
    return path


def test_a_verl_step_shows_its_observation_and_response_and_the_prompt_on_a_click(verl_dump):
    at = app_test("compare", ["--log", str(verl_dump)])
    assert not at.exception
    table = at.dataframe[0].value
    assert table.columns.tolist()[-3:] == ["action", "observation", "response"]
    assert not table["observation"].str.contains(SYSTEM, regex=False).any()
    assert table["observation"].iloc[2] == "You are in room 2."
    assert "whole prompt" in texts(at)
    at.session_state["cmp_steps"] = {"selection": {"rows": [2], "columns": []}}
    at.run()
    assert not at.exception
    shown = [c.value for c in at.code]
    assert shown[:2] == ["You are in room 2.",
                         "<think>Turn 2: try something.</think><action>go to room 3</action>"]
    prompt = next(e for e in at.expander if e.label.startswith("The whole prompt"))
    assert prompt.code[0].value.startswith("system\n" + SYSTEM)
    assert prompt.code[0].value.rstrip().endswith("You are in room 2.\nassistant")
    # no token boundaries in a verl dump: the response split for display, coloured per step
    assert at.radio(key="cmp_tokens:by").options == ["advantage"]
    (body,) = [h.proto.body for h in at.html]
    assert "".join(token_spans(body)) == shown[1]
    assert "no token boundaries" in body and "not per token" in body


@pytest.fixture(scope="module")
def token_table(tmp_path_factory):
    return write_token_table(tmp_path_factory.mktemp("tokens") / "mug.jsonl")


def test_a_clicked_step_shows_its_tokens_coloured_by_credit_and_per_token_fields(token_table):
    at = app_test("compare", ["--log", str(token_table)])
    at.session_state["cmp_steps"] = {"selection": {"rows": [1], "columns": []}}
    at.run()
    assert not at.exception
    step = at.dataframe[0].value.iloc[1]
    logged = token_steps().set_index(["traj_id", "t"]).loc[("mug-task:0", 1)]
    assert int(step["t"]) == 1 and str(step["rollout"]).endswith(":0")
    by = at.radio(key="cmp_tokens:by")
    assert by.options == ["advantage", "log-prob", "entropy", "loss mask"]
    chosen = at.multiselect(key="cmp_estimators").value
    assert at.selectbox(key="cmp_tokens:credit").options == chosen
    (body,) = [h.proto.body for h in at.html]
    assert token_spans(body) == logged["tokens"]
    first = chosen[at.selectbox(key="cmp_tokens:credit").value]  # the first: an index
    said = html.unescape(body)
    assert f"One value per step: {first} gives each step one advantage" in said
    n_masked = logged["loss_mask"].count(False)
    assert said.count(f"advantage {step[first]:+.4g}") == len(logged["tokens"]) - n_masked
    by.set_value("log-prob").run()
    said = html.unescape(at.html[0].proto.body)
    assert f"masked: {n_masked} token(s) with loss_mask False" in said
    lo, hi = map(float, re.search(r"from (\S+) \(the [^)]*\) to (\S+) nats", said).groups())
    assert -10 < lo < hi <= 0  # the masked span's fake -45 nats are not in the scale
    assert said.count("· masked (not in the loss)") == n_masked


def test_each_disagreement_is_explained_with_counts_by_deciding_term(runs_root):
    at = app_test("compare", ["--log", str(runs_root)])
    body = shown(texts(at))
    diff = at.dataframe[1].value
    assert len(diff) > 0 and "decided by" in diff.columns
    assert "By deciding term" in body and "Why, step by step" in body
    counts = diff["decided by"].value_counts()
    for term, n in counts.items():
        assert f"{term}: {n} step(s)" in body
    first = diff.iloc[0]
    a = at.selectbox(key="cmp_a").value
    assert f"{first['rollout']} t={first['t']}" in body
    assert f"{a} {'>' if first[a] > 0 else '<'} 0" in body
    assert "Episode-level values" in body and "over the group's" in body
