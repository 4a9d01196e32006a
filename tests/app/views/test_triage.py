"""The Groups page: the groups table of a training step or of every step, its sort and filters
in the URL, a row opening the group explorer; and the Run overview's link and alarm shares."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import loaders
from app.triage_table import GROUP, HEADERS, TASK
from app.views.triage import _PICK
from g2po.analysis.alarms import STOCHASTIC_NOTE
from g2po.analysis.triage import sort_groups, step_shares, triage_log
from g2po.analysis.triage_show import ID_CHARS, group_names
from tests.app.builders import app_test, entry, shown, texts
from tests.app.views.conftest import assert_no_markup_from_logs
from tests.g2po.analysis.groups import (
    ALL_SUCCEEDED,
    PENALTY_ONLY,
    aliased_group,
    cut_by_done,
    cut_group,
)
from tests.g2po.builders import THREE, trajectories


def table_of(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if HEADERS["zero_adv_share"] in d.value.columns)


def run_a(runs_root):
    log = loaders.open_log(runs_root / "run_a")
    return log, f"auto:{(runs_root / 'run_a').resolve()}"


def with_url(argv: list[str], **query) -> AppTest:
    at = AppTest.from_function(entry, kwargs={"page": "groups", "argv": argv},
                               default_timeout=60)
    at.query_params.update(query)
    return at.run()


def test_the_groups_of_the_chosen_step_worst_first(runs_root):
    at = app_test("groups", ["--log", str(runs_root / "run_a")])
    assert not at.exception
    assert at.title[0].value == "Groups"
    log, _ = run_a(runs_root)
    step = log.train_steps()[-1]
    want = sort_groups(triage_log(log, [step]))
    shown = table_of(at)
    assert list(shown[HEADERS["group_id"]]) == list(want["group_id"])
    assert list(shown[HEADERS["alarm_aliased"]]) == list(want["alarm_aliased"])
    assert shown[HEADERS["success_rate"]].tolist() == pytest.approx(
        want["success_rate"].tolist())
    assert f"{len(want)} group(s) of training step {step}" in texts(at)
    assert "outcome rule: reward = success reward 10" in texts(at)


def test_sort_and_filters_land_in_the_url(runs_root):
    at = app_test("groups", ["--log", str(runs_root / "run_a")])
    at.selectbox(key="gr_sort").select("success_rate").run()
    at.toggle(key="gr_desc").set_value(False).run()
    assert not at.exception
    rates = table_of(at)[HEADERS["success_rate"]].tolist()
    assert rates == sorted(rates)
    assert at.query_params["gsort"] == "success_rate" and at.query_params["gorder"] == "asc"
    at.slider(key="gr_success").set_value((0.2, 0.6)).run()
    rates = table_of(at)[HEADERS["success_rate"]]
    assert rates.between(0.2 - 1e-9, 0.6 + 1e-9).all()
    assert at.query_params["gsuccess"] == "0.2,0.6"
    at.multiselect(key="gr_alarms").set_value(["aliased"]).run()
    assert (table_of(at)[HEADERS["alarm_aliased"]] > 0).all()
    assert at.query_params["galarm"] == "aliased"


def test_the_url_sets_scope_sort_and_filters(runs_root):
    log, _ = run_a(runs_root)
    at = with_url(["--log", str(runs_root / "run_a")], gscope="all", gsort="steps",
                  gorder="asc", gtask="task-1")
    assert not at.exception
    assert at.selectbox(key="gr_scope").value == "all"
    shown = table_of(at)
    everything = triage_log(log)
    want = everything[everything["group_id"].str.contains("task-1")]
    assert set(shown[HEADERS["train_step"]]) == set(log.train_steps())
    assert len(shown) == len(want) > 0
    assert shown[HEADERS["steps"]].tolist() == sorted(want["steps"].tolist())


def test_a_picked_row_opens_its_group_in_the_group_explorer(runs_root):
    log, key = run_a(runs_root)
    at = app_test("groups", ["--log", str(runs_root / "run_a")])
    step = log.train_steps()[0]
    group = log.groups(step)[-1]
    at.session_state[_PICK] = (step, group)
    at.run()
    assert not at.exception
    assert at.title[0].value == "Group explorer"
    assert at.selectbox(key=f"train_step:{key}").value == step
    assert at.selectbox(key=f"group:{key}:{step}").value == group


def test_the_run_overview_links_here_first_and_shows_alarm_shares(runs_root):
    at = app_test("overview", ["--log", str(runs_root / "run_a")])
    assert not at.exception
    links = at.get("page_link")
    assert links and "Groups" in links[0].proto.label
    shares = next(d.value for d in at.dataframe if "no signal (GRPO)" in d.value.columns)
    log, _ = run_a(runs_root)
    want = step_shares(triage_log(log))
    assert shares["step"].tolist() == log.train_steps()
    assert shares["no signal (GRPO)"].tolist() == pytest.approx(want["no_signal_grpo"].tolist())
    assert shares[HEADERS["alarm_aliased"]].tolist() == pytest.approx(
        want["alarm_aliased"].tolist())


def test_hostile_group_ids_show_as_text(hostile_run):
    at = app_test("groups", ["--log", str(hostile_run)])
    assert_no_markup_from_logs(at)
    at.selectbox(key="gr_scope").select("all").run()
    assert_no_markup_from_logs(at)
    assert len(table_of(at)) > 0


def test_a_task_column_is_shown_and_filters_groups_sharing_a_task(training_runs):
    at = app_test("groups", ["--log", str(training_runs / "train_a")])
    at.selectbox(key="gr_scope").select("all").run()
    assert not at.exception
    shown = table_of(at)
    assert (shown[HEADERS["task"]] != shown[HEADERS["group_id"]]).all()  # s1-task-0 → task-0
    task = shown[HEADERS["task"]].iloc[0]
    at.text_input(key="gr_task").input(task).run()
    same = table_of(at)
    assert set(same[HEADERS["task"]]) == {task}
    assert same[HEADERS["train_step"]].nunique() == len(same) > 1  # one group per step
    assert at.query_params["gtask"] == task


# -- issue 27: the estimator trained with, a stochastic environment, the run's findings ------

def five(spec: dict, group: str) -> pd.DataFrame:
    """``spec``'s rollouts cycled to five, the run's usual group size."""
    keys = list(spec)
    return trajectories({f"r{i}": spec[keys[i % len(keys)]] for i in range(5)}, group)


@pytest.fixture
def defects(tmp_path) -> str:
    """A penalty-only, a solved and an aliased group beside a healthy one, and five groups
    cut at the step limit (the log says so): a run-wide finding. Five rollouts each."""
    path = tmp_path / "defects.csv"
    pd.concat([five(PENALTY_ONLY, "pen"), five(ALL_SUCCEEDED, "won"),
               aliased_group(), five(THREE, "three"),
               *(cut_by_done(f"cut{i}") for i in range(5))], ignore_index=True
              ).to_csv(path, index=False)
    return str(path)


def warnings_of(at) -> list[str]:
    return [shown(w.value) for w in at.warning]


def drawn(node, kinds: tuple[str, ...]) -> list[str]:
    """The kinds of element of ``kinds`` in the order the page draws them."""
    out = []
    for child in getattr(node, "children", {}).values():
        if type(child).__name__ in kinds:
            out.append(type(child).__name__)
        out += drawn(child, kinds)
    return out


def test_the_estimator_and_a_stochastic_environment_change_the_order_and_say_why(defects):
    at = app_test("groups", ["--log", defects])
    assert not at.exception
    table = table_of(at)
    assert list(table[HEADERS["group_id"]][:2]) == ["pen", "dark"]
    why = dict(zip(table[HEADERS["group_id"]], table[HEADERS["reason"]], strict=True))
    assert why["pen"].startswith("penalty is the only signal")
    assert why["dark"].startswith("key merges states: 'dark room' + go north")
    assert not why["won"]  # solved: progress, not a defect (issue 36)
    # the run-wide finding: said once, above the table; its rows weigh little, below
    run_wide = [w for w in warnings_of(at) if w.startswith("Run-wide:")]
    assert len(run_wide) == 1 and "Truncation on 5 of 9 groups" in run_wide[0]
    assert drawn(at.main, ("Warning", "Dataframe"))[-2:] == ["Warning", "Dataframe"]
    shown_ids = list(table[HEADERS["group_id"]])
    assert shown_ids.index("dark") < min(shown_ids.index(f"cut{i}") for i in range(5))
    assert (table.set_index(HEADERS["group_id"]).loc["cut0", HEADERS["run_wide"]]
            == "truncation")
    # trained with GRPO, the penalty-only group gives nothing; the solved one is still progress
    at.selectbox(key="gr_est").select("grpo").run()
    assert not at.exception and at.query_params["gest"] == "grpo"
    table = table_of(at)
    assert table[HEADERS["group_id"]].iloc[0] == "pen"
    assert table[HEADERS["reason"]].iloc[0].startswith("no signal under GRPO")
    assert not table.set_index(HEADERS["group_id"]).loc["won", HEADERS["reason"]]
    assert len([w for w in warnings_of(at) if w.startswith("Run-wide:")]) == 1
    # declared stochastic, the split is chance: no aliasing, and the page says what it loses
    assert STOCHASTIC_NOTE not in texts(at)
    at.selectbox(key="gr_est").select("g2po").run()
    at.toggle(key="gr_stoch").set_value(True).run()
    assert not at.exception and at.query_params["gstoch"] == "1"
    table = table_of(at).set_index(HEADERS["group_id"])
    assert table.loc["dark", HEADERS["alarm_aliased"]] == 0
    assert "key merges" not in str(table.loc["dark", HEADERS["reason"]])
    assert table.index[0] == "pen"
    assert STOCHASTIC_NOTE in texts(at)


def test_the_url_sets_the_estimator_and_the_stochastic_toggle(defects):
    at = with_url(["--log", defects], gest="grpo", gstoch="1")
    assert not at.exception
    assert at.selectbox(key="gr_est").value == "grpo" and at.toggle(key="gr_stoch").value
    assert table_of(at)[HEADERS["group_id"]].iloc[0] == "pen"
    assert table_of(at)[HEADERS["reason"]].iloc[0].startswith("no signal under GRPO")


def test_the_runs_progress_is_said_once_folded_above_the_rows(tmp_path):
    """Issue 36: converged groups are progress, said once (with their share per training
    step), folded so the rows stay on the first screen; none is a row's reason."""
    path = tmp_path / "learned.csv"
    path_ = [("entrance", "go east", True), ("hall", "go north", True)]
    converged = [trajectories({f"r{i}": (10, path_) for i in range(4)}, f"won{g}")
                 for g in range(4)]
    pd.concat([*converged, five(THREE, "three")], ignore_index=True).to_csv(path, index=False)
    at = app_test("groups", ["--log", str(path)])
    assert not at.exception
    (about,) = [e for e in at.expander if "About the run" in shown(e.label)]
    # one line: the step limit the failures suggest (3 of 3 end at 3 steps), then progress
    assert shown(about.label) == ("Failures cut at a step limit of 3? · About the run: 4 "
                                  "group(s) converged")
    assert "Converged on 4 of 5 groups" in texts(at)
    assert not [w for w in warnings_of(at) if w.startswith("Run-wide:")]
    table = table_of(at).set_index(HEADERS["group_id"])
    assert (table.loc[[f"won{g}" for g in range(4)], HEADERS["severity"]] == 0).all()


# -- issue 37 item 3: the first screen ----------------------------------------------------------

INTRO = ("Welcome to TextWorld! Here is your task for today. First, it would be a great idea if "
         "you could try to move west. Next, venture south. With that over with, go to the "
         "east. And then, go to the south. If you can manage that, head west. ")
#: Rooms of the tasks: two groups play the sauna's, one each the others'.
ROOMS = ("sauna", "sauna", "attic", "cellar", "pantry", "studio")


def write_first_screen_log(path):
    """A dump as verl writes them, as far as the Groups page's first screen goes: six groups
    with 36-character uuid ids, tasks that are TextWorld's long intros (the room differs),
    no ``done`` flag and three failures of each group at the longest length (a step limit
    the log does not state, :func:`tests.g2po.analysis.groups.cut_group`)."""
    import uuid

    parts = [cut_group(str(uuid.UUID(int=(i + 1) * 0x9E3779B97F4A7C15F39CC0605CEDC835
                                      % 2**128))).assign(
        task=f"{INTRO}Then, pick up the coin from the floor of the {room}. That's it!")
        for i, room in enumerate(ROOMS)]
    pd.concat(parts, ignore_index=True).to_csv(path, index=False)
    return path


def test_the_first_screen_leads_with_what_decides(tmp_path):
    path = write_first_screen_log(tmp_path / "first.csv")
    at = app_test("groups", ["--log", str(path)])
    assert not at.exception
    frame = table_of(at)
    # what decides first; the whole id and task text last
    assert list(frame.columns[:5]) == [GROUP, TASK, HEADERS["severity"],
                                       HEADERS["success_rate"], HEADERS["reason"]]
    assert list(frame.columns[-2:]) == [HEADERS["group_id"], HEADERS["task"]]
    # ids as the explorer's picker shortens them, tasks by their room, as g2po triage names them
    log = loaders.open_log(path)
    names = group_names(triage_log(log, cache=False))
    ids = frame[HEADERS["group_id"]]
    assert list(frame[GROUP]) == [names.ids[g] for g in ids]
    assert frame[GROUP].str.len().max() <= ID_CHARS < ids.str.len().min() == 36
    rooms = [t.split("floor of the ")[1].split(".")[0] for t in frame[HEADERS["task"]]]
    assert all(room in label for room, label in zip(rooms, frame[TASK], strict=True))
    assert not frame[TASK].str.contains("Welcome").any()
    # one row of controls: the filters and judging folded into its popover
    (popover,) = [b for b in _blocks(at.main) if b.type == "popover"]
    assert str(popover.proto.popover.label) == "Filters"
    folded = {getattr(w, "key", None) for w in _blocks(popover)} - {None}
    assert folded == {"gr_alarms", "gr_task", "gr_success", "gr_est", "gr_stoch"}
    every = {getattr(w, "key", None) for w in _blocks(at.main)} - {None}
    assert every - folded == {"gr_scope", "gr_sort", "gr_desc", "gr_filters", "gr_about",
                              "gr_table",
                              f"truncate_offer:groups:auto:{path.resolve()}"}
    # the step limit the failures suggest: said in the line above the rows, offered inside
    hint = log.truncation_hint(log.rule())
    (about,) = [e for e in at.expander if "step limit" in shown(e.label)]
    assert f"Failures cut at a step limit of {hint.length}?" in shown(about.label)
    assert hint.message() in texts(at)
    assert any(b.label == f"Count length ≥ {hint.length} without success as truncated"
               for b in at.button)
    at.selectbox(key="gr_scope").select("all").run()  # read from the table: the same hint
    assert [shown(e.label) for e in at.expander if "step limit" in shown(e.label)] == \
        [shown(about.label)]
    # no training steps (all rows one step): said once above the rows, no column
    assert HEADERS["train_step"] not in frame.columns
    assert "6 group(s) of the log (it has no training steps)" in texts(at)


def test_the_filters_say_how_many_are_set(tmp_path):
    at = app_test("groups", ["--log", str(write_first_screen_log(tmp_path / "first.csv"))])
    at.text_input(key="gr_task").input("sauna").run()
    at.selectbox(key="gr_est").select("grpo").run()
    assert not at.exception
    assert len(table_of(at)) == 2
    assert "2 shown (task or group contains 'sauna'; judged for GRPO)" in texts(at)
    labels = [str(b.proto.popover.label) for b in _blocks(at.main) if b.type == "popover"]
    assert labels == ["Filters (2)"]


def _blocks(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _blocks(child)
