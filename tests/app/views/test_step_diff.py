import loaders
from app.views.step_diff import changed_highlight
from g2po.analysis.state_graph import state_graph
from g2po.analysis.stepdiff import step_diff
from g2po.outcomes import OutcomeRule
from tests.app.builders import app_test, shown, texts
from tests.app.views.conftest import assert_no_markup_from_logs


def test_two_steps_of_a_task_side_by_side_with_their_diff(training_runs):
    at = app_test("step_diff", ["--log", str(training_runs / "train_a")])
    assert not at.exception
    assert at.title[0].value == "Step diff"
    assert at.selectbox(key="sd_task").value == "task-0"
    assert at.selectbox(key="sd_a:task-0").value == 3
    assert at.selectbox(key="sd_b:task-0").value == 4
    labels = {m.label: m.value for m in at.metric}
    log = loaders.open_log(training_runs / "train_a")
    rule = OutcomeRule()
    expected = step_diff(state_graph(log.load_group(3, "s3-task-0"), rule=rule),
                         state_graph(log.load_group(4, "s4-task-0"), rule=rule))
    assert labels["States appeared"] == str(expected.counts()["states_appeared"])
    assert labels["Transitions vanished"] == str(expected.counts()["transitions_vanished"])
    assert labels["Success rate at 4"] == f"{expected.success_b:.0%}"
    states, edges = at.dataframe[0].value, at.dataframe[1].value
    assert len(states) == len(expected.states) and len(edges) == len(expected.transitions)
    assert "value_change" in states.columns

    at.selectbox(key="sd_a:task-0").select(1).run()
    at.multiselect(key="sd_status").set_value(["appeared"]).run()
    assert not at.exception
    assert set(at.dataframe[0].value["status"]) <= {"appeared"}
    at.selectbox(key="sd_b:task-0").select(1).run()
    assert "two different training steps" in texts(at)


def test_the_graphs_emphasise_what_the_other_step_lacks(training_runs):
    log = loaders.open_log(training_runs / "train_a")
    a = state_graph(log.load_group(1, "s1-task-1"), rule=OutcomeRule())
    b = state_graph(log.load_group(2, "s2-task-1"), rule=OutcomeRule())
    diff = step_diff(a, b)
    in_b = changed_highlight(diff.transitions, diff.states, "b")
    appeared = diff.states[diff.states["status"] == "appeared"]
    assert in_b.nodes == frozenset(appeared["node_b"].astype(int))
    for source, action, target in in_b.edges:
        assert ((b.edges["source"] == source) & (b.edges["action"] == action) &
                (b.edges["target"] == target)).any()
    in_a = changed_highlight(diff.transitions, diff.states, "a")
    assert all(n in a.nodes.index for n in in_a.nodes)


def test_a_run_without_repeated_tasks_says_so(tmp_path):
    from loaders import RunWriter
    from tests.app.builders import group_steps

    path = tmp_path / "once [x](javascript:alert(1)) $x^2$"  # a run's name is untrusted too
    writer = RunWriter(path, {})
    for step in (1, 2):
        writer.write_step(step, group_steps(seed=step, rows=200).assign(
            group_id=lambda f, s=step: f"s{s}-" + f["group_id"].astype(str)))
    at = app_test("step_diff", ["--log", str(path)])
    assert_no_markup_from_logs(at)
    assert "occurs at two training steps" in texts(at)


def test_hostile_text_stays_text(hostile_run):
    at = app_test("step_diff", ["--log", str(hostile_run)])
    assert_no_markup_from_logs(at)
    assert len(at.get("component_instance")) == 2  # the two graphs


def test_the_urls_group_is_the_one_compared_when_groups_share_a_task(shared_task_run):
    """Step diff showed c2-1 (first by id) while the URL said c2-2."""
    from streamlit.testing.v1 import AppTest

    from tests.app.builders import entry

    at = AppTest.from_function(entry, kwargs={"page": "step_diff",
                                              "argv": ["--log", str(shared_task_run)]},
                               default_timeout=60)
    at.query_params.update({"step": "2", "group": "c2-2"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="sd_task").value == "cook"
    assert at.selectbox(key="sd_b:cook").value == 2
    assert at.selectbox(key="sd_group:cook:2").value == "c2-2"
    assert at.selectbox(key="sd_group:cook:1").value == "c1-1"  # elsewhere: first by id
    text = shown(texts(at))
    assert "**Training step 2** · group c2-2" in text
    assert "Training step 2 holds this task in 2 groups: c2-1, c2-2." in text
    log = loaders.open_log(shared_task_run)
    expected = step_diff(state_graph(log.load_group(1, "c1-1"), rule=OutcomeRule()),
                         state_graph(log.load_group(2, "c2-2"), rule=OutcomeRule()))
    labels = {m.label: m.value for m in at.metric}
    assert labels["States appeared"] == str(expected.counts()["states_appeared"])
    # the sidebar moves to the other group: the page follows it
    at.selectbox(key=f"group:auto:{shared_task_run.resolve()}:2").select("c2-1").run()
    assert not at.exception
    assert at.selectbox(key="sd_group:cook:2").value == "c2-1"
