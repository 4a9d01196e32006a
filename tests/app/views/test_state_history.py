import numpy as np
from streamlit.testing.v1 import AppTest

import loaders
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import app_test, entry, goto, shown, texts
from tests.app.views.conftest import assert_no_markup_from_logs


def history_table(at):
    return next(d.value for d in at.dataframe if "visits" in d.value.columns)


def test_state_over_training_by_task_column(training_runs):
    at = app_test("state_history", ["--log", str(training_runs / "train_a")])
    assert not at.exception
    assert at.title[0].value == "State over training"
    assert at.radio(key="sh_by").value == "task"
    # the sidebar's group is s4-task-0 at step 4: its task, task-0
    assert at.selectbox(key="sh_task").value == "task-0"
    assert len(at.get("plotly_chart")) == 4
    table = history_table(at)
    assert table["train_step"].tolist() == [1, 2, 3, 4]
    assert table["group_id"].tolist() == [f"s{s}-task-0" for s in (1, 2, 3, 4)]
    key = at.selectbox(key="sh_state").value
    log = loaders.open_log(training_runs / "train_a")
    graph = state_graph(log.load_group(2, "s2-task-0"), rule=OutcomeRule())
    node = graph.nodes[graph.nodes["canonical_key"] == key]
    row = table[table["train_step"] == 2].iloc[0]
    assert row["visits"] == int(node["visits"].iloc[0])
    assert np.isclose(row["value"], node["value"].iloc[0])
    assert "where the state is reached" in [m.label for m in at.metric][1]


def test_matching_by_group_id_follows_one_group_id(training_runs, runs_root):
    at = app_test("state_history", ["--log", str(training_runs / "train_a")])
    at.radio(key="sh_by").set_value("group_id").run()
    assert not at.exception
    assert at.selectbox(key="sh_task").value == "s4-task-0"
    assert history_table(at)["train_step"].tolist() == [4]
    at = app_test("state_history", ["--log", str(runs_root / "run_a")])  # no task column
    assert not at.exception
    assert "matched across training steps by group id" in texts(at)
    assert history_table(at)["train_step"].tolist() == [1, 2, 3]


def _open_from_another_page(log_path: str, key: str) -> None:  # runs inside AppTest
    import streamlit as st

    import loaders
    from app.context import AppContext, OpenLog
    from app.data import LogRef
    from app.navigation import open_state_history
    from app.options import AppOptions
    from app.shell import run

    if "_asked" not in st.session_state:  # what the group explorer's node panel does
        st.session_state["_asked"] = True
        ref = LogRef("train_a", log_path)
        ctx = AppContext(options=AppOptions(), active=OpenLog(ref, loaders.open_log(log_path)),
                         train_step=3, group_id="s3-task-2")
        open_state_history(ctx, key)
    run(argv=["--log", log_path], start_page="state_history")


def test_open_state_history_opens_the_page_on_a_state(training_runs):
    path = str((training_runs / "train_a").resolve())
    graph = state_graph(loaders.open_log(path).load_group(3, "s3-task-2"), rule=OutcomeRule())
    key = str(graph.nodes["canonical_key"].iloc[2])
    at = AppTest.from_function(_open_from_another_page, kwargs={"log_path": path, "key": key},
                               default_timeout=60).run()
    assert not at.exception
    assert at.selectbox(key="sh_task").value == "task-2"
    assert at.selectbox(key="sh_from").value == 3
    assert at.selectbox(key="sh_state").value == key
    assert history_table(at)["train_step"].tolist() == [1, 2, 3, 4]


def test_hostile_text_stays_text(hostile_run):
    at = app_test("state_history", ["--log", str(hostile_run)])
    assert_no_markup_from_logs(at)
    assert len(at.get("plotly_chart")) == 4


def test_from_a_node_the_page_keeps_the_nodes_group_when_groups_share_a_task(shared_task_run):
    """The cooking report: node of group c2-2 → this page showed c2-1 (first by id) and its
    most visited state. It keeps c2-2 and the node's state, and says the task has two groups."""
    path = str(shared_task_run)
    graph = state_graph(loaders.open_log(path).load_group(2, "c2-2"), rule=OutcomeRule())
    node = int(graph.nodes.index[graph.nodes["canonical_key"] == "garden room 1"][0])
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": ["--log", path]},
                               default_timeout=60)
    at.query_params.update({"step": "2", "group": "c2-2", "node": str(node)})
    at.session_state["g_tab"] = "Node"
    at.run()
    at.button(key=f"state_over_training:{node}").click().run()
    assert not at.exception
    assert at.selectbox(key="sh_task").value == "cook"
    assert at.selectbox(key="sh_from").value == 2
    assert at.selectbox(key="sh_group").value == "c2-2"
    assert at.selectbox(key="sh_group").options == ["c2-1", "c2-2"]
    assert at.selectbox(key="sh_state").value == "garden room 1"
    table = history_table(at)
    row = table[table["train_step"] == 2].iloc[0]
    assert row["group_id"] == "c2-2"
    assert row["visits"] == int(graph.nodes.loc[node, "visits"])
    assert np.isclose(row["value"], graph.nodes.loc[node, "value"])
    text = shown(texts(at))
    assert "held by several groups at 3 training step(s)" in text
    assert "c2-1, c2-2" in text
    offered = next(d.value for d in at.dataframe if "followed" in d.value.columns)
    assert len(offered) == 6 and offered.loc[offered["followed"], "group_id"].tolist()[1] == \
        "c2-2"
    # another group at that step: its states, and the history follows it there
    at.selectbox(key="sh_group").select("c2-1").run()
    assert not at.exception
    assert at.selectbox(key="sh_state").value.startswith("kitchen")
    assert history_table(at).set_index("train_step").loc[2, "group_id"] == "c2-1"


def test_the_page_starts_from_the_urls_group(shared_task_run):
    at = AppTest.from_function(entry, kwargs={"page": "state_history",
                                              "argv": ["--log", str(shared_task_run)]},
                               default_timeout=60)
    at.query_params.update({"step": "3", "group": "c3-2"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="sh_from").value == 3
    assert at.selectbox(key="sh_group").value == "c3-2"
    assert at.selectbox(key="sh_state").value.startswith("garden")
    table = history_table(at)
    numbers = table.select_dtypes("float").to_numpy().ravel()
    numbers = numbers[np.isfinite(numbers)]
    assert not ((numbers != 0) & (np.abs(numbers) < 1e-9)).any()  # no -3e-16: shown as 0


def test_a_reloaded_or_shared_url_shows_the_followed_state(shared_task_run):
    """The URL names the followed state (its step, group and key digest): a new session on that
    URL shows it, even where it is neither the most visited state nor the sidebar's group."""
    from app.views.state_history import state_token

    path = str(shared_task_run)
    first = AppTest.from_function(entry, kwargs={"page": "state_history",
                                                 "argv": ["--log", path]}, default_timeout=60)
    first.query_params.update({"step": "3", "group": "c3-2"})
    first.run()
    first.selectbox(key="sh_from").select(2).run()
    first.selectbox(key="sh_group").select("c2-2").run()
    state = first.selectbox(key="sh_state")
    assert len(state.options) > 1
    state.select_index(len(state.options) - 1).run()  # not what the page picks by itself
    assert not first.exception
    key = first.session_state["sh_state"]
    url = {name: str(first.query_params[name]) for name in
           ("step", "group", "hfrom", "hgroup", "hstate")}
    assert url["hfrom"] == "2" and url["hgroup"] == "c2-2" and url["hstate"] == state_token(key)

    again = AppTest.from_function(entry, kwargs={"page": "state_history",
                                                 "argv": ["--log", path]}, default_timeout=60)
    again.query_params.update(url)
    again.run()
    assert not again.exception
    assert again.selectbox(key="sh_from").value == 2
    assert again.selectbox(key="sh_group").value == "c2-2"
    assert again.session_state["sh_state"] == key


def test_another_page_drops_the_followed_state_from_the_url(shared_task_run):
    """Opened on another page, the URL's followed state is dropped: the sidebar's group (the
    user may have chosen another since) is where State over training starts."""
    at = AppTest.from_function(entry, kwargs={"page": "group",
                                              "argv": ["--log", str(shared_task_run)]},
                               default_timeout=60)
    at.query_params.update({"step": "3", "group": "c3-2", "hfrom": "2", "hgroup": "c2-2",
                            "hstate": "0" * 12})
    at.run()
    assert not at.exception
    assert not {"hfrom", "hgroup", "hstate"} & set(at.query_params)
    goto(at, "state_history")
    assert not at.exception
    assert at.selectbox(key="sh_from").value == 3
    assert at.selectbox(key="sh_group").value == "c3-2"
