import json
import re

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

import loaders
from app.graph import FADED_EDGE
from app.sidebar import GROUP_LABEL_CHARS
from g2po.analysis.alarms import credit_alarms
from g2po.analysis.critical import critical_transitions
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.app.builders import app_test, entry, shown, texts, write_run
from tests.app.explorer.pages import drawn_graph, pick, picks, run_a, shown_graph, steps_table
from tests.loaders.builders import SYSTEM, agent_loop_entries, write_verl_dump


def test_draws_the_groups_graph_critical_transitions_and_steps(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    assert not at.exception
    assert at.title[0].value == "Group explorer"
    graph, _ = shown_graph(at, runs_root)
    drawn = drawn_graph(at)
    assert len(drawn["nodes"]) == len(graph.nodes) and len(drawn["edges"]) == len(graph.edges)
    assert drawn["options"]["physics"] == {"enabled": False}
    assert drawn["legend"]["edge"]["name"] == "TD error"
    assert f"**{graph.n_states}** state nodes" in texts(at)
    table = steps_table(at)
    assert len(table) == len(graph.steps)
    assert list(table.columns[:4]) == ["rollout", "t", "node", "A"]
    critical = next(d.value for d in at.dataframe if "#" in d.value.columns)
    assert list(critical["#"]) == list(range(1, len(critical) + 1))
    assert abs(critical["TD error"].iloc[0]) == graph.edges["td_error"].abs().max()
    # the other tabs are computed only when open: one table per rollout
    before = len(at.dataframe)
    at.session_state["g_tab"] = "One table per rollout"
    at.run()
    assert not at.exception
    assert len(at.dataframe) == before - 1 + 1 + graph.steps["traj_id"].nunique()


def faded_edges(drawn: dict) -> int:
    return sum(e["color"] == FADED_EDGE for e in drawn["edges"])


def test_several_trajectories_are_highlighted_and_outcomes_filter(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    before = drawn_graph(at)
    assert faded_edges(before) == 0
    options = at.multiselect(key="g_traj").options
    at.multiselect(key="g_traj").select(options[0]).run()
    one = faded_edges(drawn_graph(at))
    at.multiselect(key="g_traj").select(options[1]).run()
    assert not at.exception
    two = drawn_graph(at)
    assert 0 < faded_edges(two) < one  # two paths emphasised: fewer edges faded
    assert two["graph_id"] == before["graph_id"]  # same graph: the view only recolours
    assert at.query_params["traj"] == ",".join(at.multiselect(key="g_traj").value)
    # filter by outcome: only those trajectories' steps are listed
    graph, _ = shown_graph(at, runs_root)
    at.multiselect(key="g_traj").set_value([]).run()
    at.pills(key="g_outcome").set_value(["success"]).run()
    assert not at.exception
    wins = graph.steps[graph.steps["success"]]
    assert len(steps_table(at)) == len(wins)
    assert set(steps_table(at)["end"]) <= {"", "success"}


def test_a_selected_node_filters_the_steps_and_lists_its_reference_set(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    graph, _ = shown_graph(at, runs_root)
    # what a click on node 0 does (the browser test clicks for real)
    pick(at, node=0, filter=("node", 0))
    at.run()
    assert not at.exception
    assert len(steps_table(at)) == int(graph.nodes.loc[0, "visits"])
    assert (steps_table(at)["node"] == 0).all()
    assert drawn_graph(at)["selected"]["nodes"] == [0]
    assert at.query_params["node"] == "0"
    at.button(key="g_clear_filter").click().run()
    assert len(steps_table(at)) == len(graph.steps)
    # an edge filter: the steps along it
    pick(at, filter=("edge", 0))
    at.run()
    e = graph.edges.iloc[0]
    assert len(steps_table(at)) == int(e["count"])
    at.session_state["g_tab"] = "Node"
    at.run()
    text = texts(at)
    assert "Node 0" in text and "Occurrences" in text and "Outgoing transitions" in text
    occ = next(d.value for d in at.dataframe if "x = V(next) − p·invalid" in d.value.columns)
    assert len(occ) == int(re.search(r"visits (\d+)", text).group(1))
    # two nodes: a character diff of their keys
    at.selectbox(key="g_node2").select(1).run()
    assert not at.exception
    diff = at.get("html")
    assert diff and ("<del" in diff[0].proto.body or "<ins" in diff[0].proto.body)


def test_alarms_are_listed_and_each_filters_to_its_steps(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    graph, _ = shown_graph(at, runs_root)
    alarms = credit_alarms(graph, rule=OutcomeRule())
    assert alarms, "the synthetic group raises no alarm"
    buttons = [b for b in at.button if (b.key or "").startswith("g_alarm_")]
    assert [shown(b.label) for b in buttons] == [a.title for a in alarms]
    buttons[0].click().run()
    assert not at.exception
    assert len(steps_table(at)) == len(alarms[0].steps)
    assert alarms[0].title in shown(texts(at))


def test_changing_a_parameter_recomputes_and_lands_in_the_url(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    before = steps_table(at)
    assert not np.allclose(before["A"], before["A^EP"])
    at.number_input(key="p_w").set_value(0.0).run()
    assert not at.exception
    after = steps_table(at)
    np.testing.assert_allclose(after["A"], after["A^EP"])
    at.number_input(key="p_gamma").set_value(0.5).run()
    np.testing.assert_allclose(steps_table(at)["A"], steps_table(at)["A^EP"])
    assert not np.allclose(steps_table(at)["V"], after["V"])
    assert at.query_params["gamma"] == "0.5" and at.query_params["w"] == "0"
    at.selectbox(key="g_edge_color").select("success_share").run()
    assert drawn_graph(at)["legend"]["edge"]["lo"] == 0.0
    assert at.query_params["edge_color"] == "success_share"


def test_a_url_opens_the_view_it_names(runs_root):
    run, _ = run_a(runs_root)
    step = run.train_steps()[0]
    group = run.groups(step)[1]
    graph = state_graph(
        run.load_group(step, group), rule=OutcomeRule(), params=G2POParams(gamma=0.9)
    )
    traj = sorted(graph.steps["traj_id"].unique())[1]
    at = AppTest.from_function(entry, kwargs={"page": "group",
                                              "argv": ["--log", str(runs_root)]},
                               default_timeout=60)
    at.query_params.update({"run": "run_a", "step": str(step), "group": group, "traj": traj,
                            "node": "1", "gamma": "0.9", "edge_color": "adv"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="active_run").value == "run_a"
    assert f"training step **{step}**" in texts(at)
    assert at.multiselect(key="g_traj").value == [traj]
    assert at.number_input(key="p_gamma").value == 0.9
    drawn = drawn_graph(at)
    assert drawn["selected"]["nodes"] == [1]
    # the mean-advantage colour, on a highlighted trajectory: its own steps' A
    assert drawn["legend"]["edge"]["name"] == "A of the highlighted trajectory's own steps"
    assert len(steps_table(at)) == int(graph.nodes.loc[1, "visits"])  # the node's steps
    np.testing.assert_allclose(np.sort(steps_table(at)["V"]),
                               np.sort(graph.steps.loc[graph.steps["node"] == 1,
                                                       "node_value"]))


def write_reward_one_csv(path):
    """A CSV whose successes are rewarded 1.0 and marked ``won``, one trajectory truncated."""
    rows = []
    for i in range(4):
        won = i < 3
        for t in range(3):
            rows.append({"group_id": "g", "traj_id": f"s0:{i}", "t": t,
                         "state_key": f"room {t}" if t < 2 else f"room {t} {i % 2}",
                         "action": "go", "episode_reward": 1.0 if won else 0.0,
                         "is_action_valid": True, "won": won and t == 2,
                         "done": (t == 2 and won)})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_reward_one_log_with_won_gets_the_right_success_rate_and_fix(tmp_path, runs_root):
    csv = write_reward_one_csv(tmp_path / "ones.csv")
    at = app_test("group", ["--log", str(csv), "--log", str(runs_root / "run_a")])
    assert not at.exception
    text = texts(at)
    # the default success reward is what `won` says: 1.0, so no warning and 75 %
    assert "success rate **75%** (reward = success reward 1)" in text
    assert "**1** truncated" in text
    drawn = drawn_graph(at)
    assert any(n["label"] == "truncated" for n in drawn["nodes"])
    assert "truncated" in set(steps_table(at)["end"])
    assert any(shown(a.label).startswith("Truncation treated as failure") for a in at.button)
    key = next(n.key for n in at.number_input if n.key.startswith("p_success:") and
               "ones.csv" in n.key)
    assert at.number_input(key=key).value == 1.0
    # a wrong success reward: the page says so and offers the fixes
    at.number_input(key=key).set_value(10.0).run()
    warned = texts(at)
    assert "disagrees" in warned
    fix = next(b for b in at.button if shown(b.label).startswith("Use `won`"))
    fix.click().run()
    assert not at.exception
    assert at.number_input(key=key).value == 1.0
    assert "disagrees" not in texts(at)
    # kept per run: switching to another run and back keeps 1.0
    at.number_input(key=key).set_value(2.0).run()
    at.selectbox(key="active_run").select("run_a").run()
    assert not at.exception
    at.selectbox(key="active_run").select("ones.csv").run()
    assert at.number_input(key=key).value == 2.0


def write_graded_csv(path):
    """Won trajectories rewarded 1.0 and 0.8, lost ones 0.3 and 0.0: no single success reward
    reproduces ``won``, the threshold 0.8 does."""
    rows = []
    for i, (reward, won) in enumerate([(1.0, True), (0.8, True), (0.3, False), (0.0, False)]):
        for t in range(2):
            rows.append({"group_id": "g", "traj_id": f"s0:{i}", "t": t, "state_key": f"room {t}",
                         "action": "go", "episode_reward": reward, "is_action_valid": True,
                         "won": won and t == 1, "done": t == 1})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def success_visits(at) -> int:
    (node,) = [n for n in drawn_graph(at)["nodes"] if n["label"] == "success"]
    return int(re.search(r"visits (\d+)", node["title"]).group(1))


def test_graded_rewards_get_the_threshold_rule_from_won_and_kept_per_run(tmp_path, runs_root):
    csv = write_graded_csv(tmp_path / "graded.csv")
    at = app_test("group", ["--log", str(csv), "--log", str(runs_root / "run_a")])
    assert not at.exception
    on = next(c for c in at.checkbox if c.key.startswith("p_by_threshold:"))
    value = next(n for n in at.number_input if n.key.startswith("p_threshold:"))
    reward = next(n for n in at.number_input if n.key.startswith("p_success:"))
    # `won` is reproduced by 'reward ≥ 0.8' (no single reward is): the rule taken from the log
    assert on.value is True and value.value == 0.8 and reward.value == 1.0
    assert "disagrees" not in texts(at)
    assert "success rate **50%** (reward ≥ threshold 0.8)" in texts(at)
    assert success_visits(at) == 2 and at.query_params["success_min"] == "0.8"
    # both won rollouts' last steps lead to the success terminal, valued at 1.0
    last = steps_table(at)[lambda f: f["t"] == 1]
    assert sorted(last["V′"]) == [0.0, 0.0, 1.0, 1.0]
    # the equality rule by hand: the page says `won` disagrees and offers the threshold back
    at.checkbox(key=on.key).uncheck().run()
    assert "disagrees" in texts(at) and success_visits(at) == 1
    assert "success_min" not in at.query_params
    fix = next(b for b in at.button
               if shown(b.label).startswith("Use `won`: count reward ≥ 0.8"))
    fix.click().run()
    assert not at.exception
    assert at.checkbox(key=on.key).value is True and "disagrees" not in texts(at)
    # kept per run: another run uses its own rule, and coming back keeps this one
    at.number_input(key=value.key).set_value(0.3).run()
    assert success_visits(at) == 3
    at.selectbox(key="active_run").select("run_a").run()
    assert "success_min" not in at.query_params
    at.selectbox(key="active_run").select("graded.csv").run()
    assert not at.exception
    assert at.number_input(key=value.key).value == 0.3 and success_visits(at) == 3


def test_the_threshold_rule_survives_a_similarity_state_key(tmp_path):
    csv = write_graded_csv(tmp_path / "graded.csv")
    at = app_test("group", ["--log", str(csv)])
    at.selectbox(key="p_state_key").select("similarity").run()
    assert not at.exception
    assert at.query_params["success_min"] == "0.8"  # not the similarity threshold (0.9)
    assert at.query_params["state_key"].startswith("similarity:0.9")
    assert success_visits(at) == 2


def test_a_url_with_success_min_opens_the_threshold_rule(tmp_path):
    csv = write_graded_csv(tmp_path / "graded.csv")
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": ["--log", str(csv)]},
                               default_timeout=60)
    at.query_params.update({"success_min": "0.3", "success": "1"})
    at.run()
    assert not at.exception
    assert next(c for c in at.checkbox if c.key.startswith("p_by_threshold:")).value is True
    assert success_visits(at) == 3 and "disagrees" in texts(at)  # 0.3 was not won


def test_state_key_strategy_changes_the_merge(tmp_path):
    run = write_run(tmp_path / "cases", 1, seed=3)
    # make every second occurrence of a key differ only in case: exact keeps them apart
    log = loaders.open_log(run)
    steps = log.load_step(1)
    steps.attrs = {}
    steps["state_key"] = np.where(steps.index % 2 == 0, steps["state_key"].str.upper(),
                                  steps["state_key"])
    other = tmp_path / "cased"
    loaders.RunWriter(other, {"env": "x"}).write_step(1, steps.drop(columns="train_step"))
    at = app_test("group", ["--log", str(other)])

    def states():
        return int(re.search(r"\*\*(\d+)\*\* state nodes", texts(at)).group(1))

    exact = states()
    at.selectbox(key="p_state_key").select("normalized").run()
    assert not at.exception
    assert states() < exact
    assert at.query_params["state_key"] == "normalized"
    at.selectbox(key="p_state_key").select("regex").run()
    at.text_input(key="p_regex").input("(").run()  # an invalid pattern: a message, no crash
    assert not at.exception
    assert any("Bad parameter" in e.value for e in at.error)


def test_switching_group_and_training_step(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    run_key = f"auto:{(runs_root / 'run_a').resolve()}"
    first = drawn_graph(at)
    at.multiselect(key="g_traj").select(at.multiselect(key="g_traj").options[0]).run()
    box = at.selectbox(key=f"group:{run_key}:3")
    box.select_index(1).run()
    assert not at.exception
    assert drawn_graph(at)["graph_id"] != first["graph_id"]
    assert at.multiselect(key="g_traj").value == []  # picks of another graph are dropped
    at.selectbox(key=f"train_step:{run_key}").select(1).run()
    assert not at.exception
    assert any("training step **1**" in m.value for m in at.markdown)
    assert at.query_params["step"] == "1"


def test_a_state_node_opens_its_history_over_training(training_runs):
    path = training_runs / "train_a"
    graph = state_graph(loaders.open_log(path).load_group(3, "s3-task-2"), rule=OutcomeRule())
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": ["--log", str(path)]},
                               default_timeout=60)
    at.query_params.update({"step": "3", "group": "s3-task-2", "node": "2"})
    at.session_state["g_tab"] = "Node"
    at.run()
    assert not at.exception
    at.button(key="state_over_training:2").click().run()
    assert not at.exception
    assert at.selectbox(key="sh_state").value == graph.nodes.loc[2, "canonical_key"]
    assert at.selectbox(key="sh_from").value == 3


def test_a_parameter_change_keeps_what_was_chosen(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    graph, _ = shown_graph(at, runs_root)
    traj = at.multiselect(key="g_traj").options[1]
    at.multiselect(key="g_traj").select(traj).run()
    edge = int(graph.edges.index[graph.edges["count"] > 1][0])
    pick(at, node=int(graph.edges.loc[edge, "source"]), edge=edge, filter=("edge", edge))
    at.run()
    before = drawn_graph(at)
    for key, value in (("p_gamma", 0.8), ("p_w", 0.5), ("p_penalty", 0.3)):
        at.number_input(key=key).set_value(value).run()
        assert not at.exception
        chosen = at.multiselect(key="g_traj").value
        assert len(chosen) == 1 and at.query_params["traj"] == chosen[0]
        assert at.query_params["edge"] == str(edge)
        assert at.query_params["filter"] == f"edge:{edge}"
        drawn = drawn_graph(at)
        assert drawn["graph_id"] != before["graph_id"]  # recomputed, choices kept
        assert drawn["selected"]["edges"] == [f"e{edge}"]
        assert len(steps_table(at)) == int(graph.edges.loc[edge, "count"])


def test_what_the_steps_are_filtered_to_is_in_the_url(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    graph, group = shown_graph(at, runs_root)
    alarm = credit_alarms(graph, rule=OutcomeRule())[0]
    pick(at, node=0)  # a node picked before the alarm (its id stays)
    at.run()
    at.button(key=f"g_alarm_{alarm.kind}").click().run()
    assert at.query_params["filter"] == f"alarm:{alarm.kind}"
    run, step = run_a(runs_root)
    # a new session on that URL (a reload): the alarm's steps, not the node's
    again = AppTest.from_function(entry, kwargs={"page": "group",
                                                 "argv": ["--log", str(runs_root)]},
                                  default_timeout=60)
    again.query_params.update({"run": "run_a", "step": str(step), "group": group,
                               "node": "0", "filter": f"alarm:{alarm.kind}"})
    again.run()
    assert not again.exception
    assert len(steps_table(again)) == len(alarm.steps)
    assert drawn_graph(again)["selected"]["nodes"] == [0]
    # a filter naming what the graph lacks is ignored; the node's steps then
    bad = AppTest.from_function(entry, kwargs={"page": "group",
                                               "argv": ["--log", str(runs_root)]},
                                default_timeout=60)
    bad.query_params.update({"run": "run_a", "step": str(step), "group": group, "node": "0",
                             "filter": "edge:99999"})
    bad.run()
    assert not bad.exception
    assert len(steps_table(bad)) == int(graph.nodes.loc[0, "visits"])


def write_no_validity_csv(path):
    """A CSV without is_action_valid: the loader assumes every action valid."""
    rows = []
    for i in range(4):
        for t in range(3):
            rows.append({"group_id": "g", "traj_id": f"s0:{i}", "t": t,
                         "state_key": f"room {t} {i % 2 if t == 2 else ''}", "action": "go",
                         "episode_reward": 10.0 if i < 2 else 0.0})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def column_labels(frame_element) -> dict[str, str]:
    config = json.loads(frame_element.proto.columns or "{}")
    return {c: v["label"] for c, v in config.items() if "label" in v}


def test_assumed_validity_is_said_beside_every_number_resting_on_it(tmp_path, runs_root):
    at = app_test("group", ["--log", str(write_no_validity_csv(tmp_path / "nv.csv")),
                            "--log", str(runs_root / "run_a")])
    assert not at.exception
    notes = [shown(c.value) for c in at.caption if "assumed" in c.value]
    assert len(notes) >= 3 and all("is_action_valid absent" in n for n in notes)
    critical = next(d for d in at.dataframe if "#" in d.value.columns)
    assert column_labels(critical) == {"mean A": "mean A *"}
    steps = next(d for d in at.dataframe if "A^EP" in d.value.columns)
    assert column_labels(steps) == {c: f"{c} *" for c in ("A", "A^EP", "A^NC", "valid")}
    assert drawn_graph(at)["legend"]["assumed"] == \
        ["is_action_valid absent: every action assumed valid"]
    at.session_state["g_tab"] = "Node"
    pick(at, node=0)
    at.run()
    occurrences = next(d for d in at.dataframe if "x = V(next) − p·invalid" in d.value.columns)
    assert set(column_labels(occurrences)) == {"valid", "x = V(next) − p·invalid", "A^NC", "A"}
    # without a penalty the advantages no longer rest on validity: only validity is marked
    at.number_input(key="p_penalty").set_value(0.0).run()
    at.session_state["g_tab"] = "Steps"
    at.run()
    steps = next(d for d in at.dataframe if "A^EP" in d.value.columns)
    assert column_labels(steps) == {"valid": "valid *"}
    # a log that has the column: nothing assumed, nothing marked
    at.selectbox(key="active_run").select("run_a").run()
    assert not [c for c in at.caption if "assumed" in c.value]
    assert all(not column_labels(d) for d in at.dataframe)
    assert drawn_graph(at)["legend"]["assumed"] == []


def test_the_group_picker_leads_with_what_tells_groups_apart(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    run, step = run_a(runs_root)
    box = at.selectbox(key=f"group:auto:{(runs_root / 'run_a').resolve()}:{step}")
    summary = run.group_summary(step).set_index("group_id")
    # ids that differ only in a number keep their word ("task-0", not "0"); then the
    # success rate and the rollouts, short enough for the sidebar
    for gid, label in zip(run.groups(step), box.options, strict=True):
        assert label == f"{gid} · success {summary.loc[gid, 'success_rate']:.0%} of " \
                        f"{int(summary.loc[gid, 'n_traj'])}"


def test_a_lone_long_group_id_keeps_its_end_and_the_label_fits(tmp_path):
    gid = "cooking-recipe3-take2-go9-open-cook-cut-train-s7"
    csv = write_no_validity_csv(tmp_path / "one.csv")
    pd.read_csv(csv).assign(group_id=gid).to_csv(csv, index=False)
    at = app_test("group", ["--log", str(csv)])
    assert not at.exception
    (label,) = next(b for b in at.selectbox if (b.key or "").startswith("group:")).options
    assert label.startswith("…") and label.endswith("-s7 · success 50% of 4"), label
    assert len(label) <= GROUP_LABEL_CHARS


def test_ranked_alarms_show_their_top_nodes_and_truncation_its_critical_transitions(tmp_path):
    from g2po.analysis.alarms import SHOWN
    from g2po.outcomes import OutcomeRule
    from tests.g2po.analysis.groups import cut_group, random_walks

    # no done column: the log is opened with the rule "4 steps without success ⇒ cut"
    steps = pd.concat([cut_group(), random_walks(groups=1, length=3).assign(group_id="walks")],
                      ignore_index=True)
    steps.to_csv(tmp_path / "cut.csv", index=False)
    at = app_test("group", ["--log", str(tmp_path / "cut.csv"), "--truncate-at", "4"])
    key = next(b.key for b in at.selectbox if (b.key or "").startswith("group:"))
    at.selectbox(key=key).select("cut").run()
    assert not at.exception
    graph = state_graph(steps[steps["group_id"] == "cut"], rule=OutcomeRule())
    rule = OutcomeRule(truncate_at=4)
    alarm = {a.kind: a for a in credit_alarms(graph, rule=rule)}["truncation"]
    assert at.button(key="g_alarm_truncation").label == alarm.title  # the run's rule counts
    critical = critical_transitions(graph)
    rank = dict(zip(critical.index, critical["rank"], strict=True))
    explained = [e for e in alarm.edges if e in rank]
    assert explained, "the cut steps' transitions are among the critical ones"
    links = [b for b in at.button if (b.key or "").startswith("g_alcrit_truncation_")]
    assert [b.key for b in links] == [f"g_alcrit_truncation_{e}" for e in explained]
    edge = explained[0]
    assert f"critical transition #{rank[edge]} (TD error " \
           f"{graph.edges['td_error'].iloc[edge]:+.3g})" in links[0].label
    links[0].click().run()
    assert picks(at).edge == edge
    assert "along edge" in texts(at)
    # a ranked alarm: its top nodes, then how many more
    at.selectbox(key=key).select("walks").run()
    walks = state_graph(steps[steps["group_id"] == "walks"], rule=OutcomeRule())
    aliased = {a.kind: a for a in credit_alarms(walks, rule=rule)}["aliased"]
    ranked = [b for b in at.button if (b.key or "").startswith("g_alrank_aliased_")]
    assert [b.key for b in ranked] == [f"g_alrank_aliased_{n}" for n in aliased.nodes[:SHOWN]]
    moved = aliased.ranking["credit_moved"].iloc[0]  # with its unit (was "moves 96.8 of credit")
    assert f"the merge moves {moved:.3g} reward units of value" in ranked[0].label
    if aliased.count > SHOWN:  # issue 27: fewer nodes alias (only real splits)
        assert f"{aliased.count - SHOWN} more" in texts(at)
    assert aliased.count >= 2
    ranked[1].click().run()
    assert picks(at).node == aliased.nodes[1]
    assert f"at node {aliased.nodes[1]}" in texts(at)


def test_a_verl_step_shows_its_observation_the_response_and_the_whole_prompt(tmp_path):
    """verl dumps: the observation is the text the state key came from, next to the model's
    response; the whole prompt sits one click away in the Step text tab."""
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1, prompts=1, sessions=2))
    at = app_test("group", ["--log", str(tmp_path / "d")])
    assert not at.exception
    table = steps_table(at)
    assert list(table.columns[-2:]) == ["observation", "response"]
    assert not table["observation"].str.contains(SYSTEM, regex=False).any()
    at.session_state["g_tab"] = "Step text"
    at.run()
    assert not at.exception
    codes = [c.value for c in at.code]
    assert codes[0].startswith("Your task is to: put a clean mug 0 on the shelf.")
    assert SYSTEM not in codes[0]
    prompt = next(e for e in at.expander if e.label.startswith("The whole prompt"))
    assert prompt.code[0].value.startswith("system\n" + SYSTEM)


def test_a_dense_group_offers_the_state_matrix_one_click_away(tmp_path):
    """Past the density where a drawing hides transitions behind others, the graph stays the
    first view and the state × state matrix is one click away; a sparse group has no switch."""
    from loaders import RunWriter
    from tests.app.layout_groups import layout_group

    run = tmp_path / "rooms"
    writer = RunWriter(run, {"env": "synthetic", "model": "test",
                             "config": {"success_reward": 10.0}})
    writer.write_step(1, pd.concat([layout_group(100), layout_group(10)]))
    at = app_test("explorer", ["--log", str(run)])
    assert not [w for w in at.get("button_group") if w.label == "View"]  # 10 states: none
    at.selectbox(key=f"group:auto:{run.resolve()}:1").select("rooms-100").run()
    assert not at.exception
    (view,) = [w for w in at.get("button_group") if w.label == "View"]
    assert view.value == "Graph" and drawn_graph(at)["nodes"]
    view.set_value("Matrix").run()
    assert not at.exception
    (chart,) = at.get("plotly_chart")
    figure = json.loads(chart.proto.spec)
    assert figure["data"][0]["type"] == "heatmap"
    assert "success" in figure["data"][0]["x"] or "failure" in figure["data"][0]["x"]
