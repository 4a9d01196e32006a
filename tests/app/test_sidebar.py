"""The sidebar: groups named by their task where the log has one, one bad line, the G2PO
parameters a run records, a state key the log cannot build."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders import RunWriter
from tests.app.builders import app_test, entry, group_steps, shown, texts
from tests.g2po.builders import alfworld_steps
from tests.loaders.builders import agent_loop_entries, write_verl_dump


def test_verl_groups_are_listed_by_their_gts_task_name(tmp_path):
    dump = tmp_path / "rollout_data"
    entries = agent_loop_entries(1, prompts=3)
    for e in entries:
        prompt = int(e["uid"].split("_")[0][-1])
        e["gts"] = f"pick_and_place-Mug-{prompt}" if prompt < 2 else {"answer": 4}
    write_verl_dump(dump, 1, entries)
    at = app_test("group", ["--log", str(dump)])
    assert not at.exception
    picker = at.selectbox(key=f"group:auto:{dump.resolve()}:1")
    labels = picker.options
    assert len(labels) == 3
    named = [label for label in labels if label.startswith("pick_and_place-Mug-")]
    assert len(named) == 2  # a structured gts names nothing: that group shows its id
    assert all(re.search(r" · success \d+% of \d+$", label) for label in labels), labels
    assert sorted(n.split(" · ")[0] for n in named) == ["pick_and_place-Mug-0",
                                                       "pick_and_place-Mug-1"]


def _dump_with_a_bad_line(root):
    """A verl dump of two training steps whose step 2 lost its line 5 (a cut line)."""
    dump = root / "rollout_data"
    for step in (1, 2):
        write_verl_dump(dump, step, agent_loop_entries(step, prompts=3))
    path = dump / "2.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = lines[4][:50] + "\n"
    path.write_text("".join(lines))
    return dump


@pytest.mark.parametrize("page", ["overview", "groups", "group", "compare", "step_diff"])
def test_one_bad_line_costs_one_line_on_every_page_and_the_load_report_names_it(tmp_path,
                                                                                 page):
    dump = _dump_with_a_bad_line(tmp_path)
    at = app_test(page, ["--log", str(dump)])
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    said = texts(at)
    assert "2.jsonl: 1 malformed line(s) skipped (line 5: trajectory" in shown(said)
    assert "marked incomplete" in said


def test_strict_app_refuses_the_log_naming_the_line(tmp_path):
    dump = _dump_with_a_bad_line(tmp_path)
    at = app_test("overview", ["--log", str(dump), "--strict"])
    assert not at.exception
    assert "2.jsonl:5: malformed JSON line" in shown(texts(at))


RECORDED = G2POParams(gamma=0.9, w=0.5, mode="mean_norm", penalty=0.2, state_key="normalized")


def _run_with_params(path, params: G2POParams | None, seed: int = 0):
    """A run directory whose run.json records ``params`` (None: none)."""
    manifest = {"env": "synthetic", "model": "test", "outcome": OutcomeRule().as_dict()}
    if params is not None:
        manifest["params"] = params.as_dict()
    writer = RunWriter(path, manifest)
    writer.write_step(1, group_steps(seed=seed, rows=120))
    return path


def _widgets(at) -> dict:
    return {"gamma": at.number_input(key="p_gamma").value, "w": at.number_input(key="p_w").value,
            "mode": at.selectbox(key="p_mode").value,
            "penalty": at.number_input(key="p_penalty").value,
            "state_key": at.selectbox(key="p_state_key").value}


def test_the_parameters_start_from_the_runs_run_json(tmp_path):
    run = _run_with_params(tmp_path / "run_a", RECORDED)
    at = app_test("curves", ["--log", str(run)])
    assert not at.exception
    assert _widgets(at) == RECORDED.as_dict()
    assert "G2PO parameters: from the run's run.json (run_a" in shown(texts(at))
    at.number_input(key="p_gamma").set_value(0.8).run()
    said = shown(texts(at))
    assert "changed from the run's run.json (run_a records gamma 0.9 (here 0.8))" in said
    (button,) = [b for b in at.button if b.key.startswith("p_recorded:")]
    button.click().run()
    assert not at.exception and _widgets(at)["gamma"] == 0.9
    assert "from the run's run.json" in shown(texts(at))


def test_the_urls_parameters_win_over_the_recorded_ones(tmp_path):
    run = _run_with_params(tmp_path / "run_a", RECORDED)
    at = AppTest.from_function(entry, kwargs={"page": "curves", "argv": ["--log", str(run)]},
                               default_timeout=60)
    at.query_params.update({"gamma": "0.7", "state_key": "similarity:0.8", "w": "20"})
    at.run()
    assert not at.exception  # w=20 is beyond its box: not applied (the widget showed 0)
    assert _widgets(at) == {**RECORDED.as_dict(), "gamma": 0.7, "state_key": "similarity"}
    assert at.slider(key="p_similarity").value == 0.8
    assert "run_a records gamma 0.9 (here 0.7), state_key normalized (here similarity:0.8)" \
        in shown(texts(at))


def test_a_recorded_similarity_key_without_threshold_is_the_strategys_own(tmp_path):
    run = _run_with_params(tmp_path / "run_a", G2POParams(state_key="similarity"))
    at = app_test("curves", ["--log", str(run)])
    assert not at.exception and at.slider(key="p_similarity").value == 0.95
    assert "G2PO parameters: from the run's run.json" in shown(texts(at))


def test_a_run_that_records_none_starts_from_the_defaults_and_says_so(tmp_path):
    run = _run_with_params(tmp_path / "old", None)
    at = app_test("curves", ["--log", str(run)])
    assert not at.exception
    assert _widgets(at) == G2POParams().as_dict()
    assert "G2PO parameters: the defaults (the authors' code); old records none." in \
        shown(texts(at))


def test_a_run_shown_first_brings_its_parameters(tmp_path):
    """Each run brings what it records when it is first shown in the session."""
    _run_with_params(tmp_path / "run_a", RECORDED)
    _run_with_params(tmp_path / "run_b", G2POParams(gamma=0.5), seed=1)
    at = app_test("curves", ["--log", str(tmp_path)])
    at.selectbox(key="active_run").select("run_a").run()
    assert _widgets(at) == RECORDED.as_dict()
    at.selectbox(key="active_run").select("run_b").run()
    assert not at.exception and _widgets(at) == G2POParams(gamma=0.5).as_dict()
    at.selectbox(key="active_run").select("run_a").run()  # seen: the values stay
    assert _widgets(at)["gamma"] == 0.5
    assert "run_a records gamma 0.9 (here 0.5)" in shown(texts(at))


def test_a_state_key_the_log_cannot_build_is_said_in_the_sidebar_not_a_traceback(tmp_path):
    """alfworld reads each step's admissible actions, which a run directory does not record:
    the sidebar says so, and the page computes with the exact key meanwhile."""
    run = _run_with_params(tmp_path / "run_a", None)
    at = app_test("group", ["--log", str(run)])
    at.selectbox(key="p_state_key").select("alfworld").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (warning,) = at.sidebar.warning
    assert "State key “alfworld” cannot key this log: state key 'alfworld' needs each " \
           "step's admissible actions" in shown(warning.value)
    assert "Every page uses “exact” until another key is chosen." in shown(warning.value)
    assert at.query_params["state_key"] == "alfworld"


def test_the_alfworld_key_on_a_log_that_records_admissible_actions(tmp_path):
    path = tmp_path / "alfworld.csv"
    alfworld_steps("text").to_csv(path, index=False)
    at = app_test("compare", ["--log", str(path)])
    at.selectbox(key="p_state_key").select("alfworld").run()
    assert not at.exception and not at.sidebar.warning
    assert "State key “alfworld” builds each key from the trajectory's observations and " \
           "admissible actions" in shown(texts(at))
