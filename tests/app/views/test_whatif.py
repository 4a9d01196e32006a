"""The What-if merging page (AppTest): the sidebar's group under a second state key, its
numbers the library's, the run-wide table on demand, errors as messages, log text escaped."""

from __future__ import annotations

import numpy as np

import loaders
from app.views import whatif as page
from g2po.analysis.whatif import what_if, whatif_log
from tests.app.builders import app_test, shown, texts
from tests.app.views.conftest import assert_no_markup_from_logs

COARSE = r"regex:^task \d+ room \d"  # the synthetic runs' rooms 10-19 merge with room 1, …


def _group(at, runs_root):
    """The sidebar's run, training step and group, and that group's rows."""
    log = loaders.open_log(runs_root / at.query_params["run"])
    step, group = int(at.query_params["step"]), at.query_params["group"]
    return log, step, group, log.load_group(step, group)


def _metric(at, label: str) -> str:
    return shown(next(m.value for m in at.metric if m.label == label))


def test_the_page_shows_the_librarys_what_if_of_the_sidebars_group(runs_root):
    at = app_test("whatif", ["--log", str(runs_root)])
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="wi_key").value == "similarity"
    log, step, group, steps = _group(at, runs_root)
    result = what_if(steps, "similarity:0.9", rule=log.rule())
    s = result.summary()
    assert s["sign_flips"] > 0  # the synthetic keys differ in a few characters: they merge
    assert _metric(at, "Steps changed") == f"{s['changed']} of {s['steps']}"
    assert _metric(at, "Sign flips") == str(s["sign_flips"])
    assert _metric(at, "State nodes") == f"{s['nodes_before']} → {s['nodes_after']}"
    nodes, steps_shown = at.dataframe[0].value, at.dataframe[1].value
    assert len(nodes) == len(result.nodes)
    assert len(steps_shown) == s["changed"]
    assert (steps_shown["sign"] == "flips").sum() == s["sign_flips"]
    assert (steps_shown["sign"].iloc[:s["sign_flips"]] == "flips").all()  # flips first
    np.testing.assert_allclose(steps_shown["ΔA"], result.changed["delta"])
    assert at.query_params["wkey"] == "similarity:0.9" and at.query_params["wmin"] == "0.1"
    # a threshold nothing reaches: only the sign flips are left
    at.number_input(key="wi_min").set_value(100.0).run()
    assert not at.exception
    assert len(at.dataframe[1].value) == s["sign_flips"]
    assert at.query_params["wmin"] == "100"


def test_the_url_keeps_the_second_key(runs_root):
    from streamlit.testing.v1 import AppTest

    from tests.app.builders import entry

    at = AppTest.from_function(entry, kwargs={"page": "whatif", "argv": [
        "--log", str(runs_root)]}, default_timeout=60)
    at.query_params.update({"wkey": COARSE, "wmin": "0.5"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="wi_key").value == "regex"
    assert at.text_input(key="wi_regex").value == COARSE.removeprefix("regex:")
    assert at.number_input(key="wi_min").value == 0.5


def test_a_key_that_merges_nothing_and_one_the_log_cannot_take(runs_root):
    at = app_test("whatif", ["--log", str(runs_root)])
    at.selectbox(key="wi_key").select("normalized").run()
    assert not at.exception
    assert "No step's advantage changes by more than 0.1" in shown(texts(at))
    assert "Both keys put the steps into the same nodes." in texts(at)
    at.selectbox(key="wi_key").select("alfworld").run()
    assert not at.exception
    (error,) = at.error
    assert "admissible actions" in shown(error.value)


def test_the_run_table_on_demand(runs_root):
    page._RUN_TABLES.clear()  # the page's own cache outlives a test
    at = app_test("whatif", ["--log", str(runs_root)])
    at.selectbox(key="wi_key").select("regex").run()
    at.text_input(key="wi_regex").input(COARSE.removeprefix("regex:")).run()
    assert len(at.dataframe) == 2  # nodes and steps: the run's table waits for the button
    at.button(key="wi_run").click().run()
    assert not at.exception and not at.get("progress")
    table = at.dataframe[-1].value
    log = loaders.open_log(runs_root / at.query_params["run"])
    expected = whatif_log(log, COARSE)
    assert expected["sign_flips"].sum() > 0
    assert table[["train_step", "group_id", "changed", "sign_flips"]].values.tolist() == \
        expected[["train_step", "group_id", "changed", "sign_flips"]].values.tolist()
    assert f"of {len(expected)} group(s) change" in texts(at)
    assert len(page._RUN_TABLES) >= 1
    at.run()  # kept: shown again without the button
    assert len(at.dataframe) == 3


def test_hostile_log_text_is_never_markup(hostile_run):
    at = app_test("whatif", ["--log", str(hostile_run)])
    assert_no_markup_from_logs(at)
    frames = "".join(d.value.astype(str).to_string() for d in at.dataframe)
    assert "<script>" in frames or "<img" in frames  # shown, as data
