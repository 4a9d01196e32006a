"""The sidebar's group picker: groups named by their task where the log has one."""

from __future__ import annotations

import re

import pytest

from tests.app.builders import app_test, shown, texts, write_run
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


def test_a_state_key_the_log_cannot_build_is_said_in_the_sidebar_not_a_traceback(tmp_path):
    """alfworld reads each step's admissible actions, which a run directory does not record:
    the sidebar says so, and the page computes with the exact key meanwhile."""
    run = write_run(tmp_path / "run_a", 1, rows=120)
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
