"""``g2po url`` as a user runs it: the URL of a view, its node and edge ids those of the
group's state graph, its run named as the app names it (opened by the URL when the app was not
started with it), a clear error naming what is missing with the nearest choices; and the
``--url`` column of ``g2po whatif`` and ``g2po audit``."""

from __future__ import annotations

import io
import json
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from g2po.analysis.state_graph import state_graph
from g2po.cli import main
from g2po.estimators import compute_advantages
from g2po.params import G2POParams
from g2po.synthetic import synthetic_steps
from loaders import RunWriter, open_log


def write_run(path, seed: int = 0, steps: int = 2, advantage: bool = False):
    writer = RunWriter(path, {"config": {"success_reward": 10.0}})
    for step in range(1, steps + 1):
        rows = synthetic_steps(400, rollouts=4, max_len=12, states_per_task=10, key_chars=40,
                               seed=seed + step)
        if advantage:
            rows["advantage"] = compute_advantages(rows, "g2po")["adv"]
        writer.write_step(step, rows)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder of two runs, as an app started with ``--log runs`` lists them."""
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "run_a", seed=0)
    write_run(root / "run_b", seed=10)
    return root


def url_of(capsys, *argv: str) -> tuple[str, dict[str, list[str]], str]:
    """``g2po url ARGV``'s URL: its path, its query as the app parses it, and stderr."""
    assert main(["url", *argv]) == 0
    out = capsys.readouterr()
    (line,) = out.out.splitlines()
    parts = urlsplit(line)
    assert f"{parts.scheme}://{parts.netloc}" == "http://localhost:8501"
    return parts.path, parse_qs(parts.query, keep_blank_values=True), out.err


def test_a_node_is_the_explorers_node_under_the_given_parameters(runs, capsys):
    log = open_log(runs / "run_a")
    group = log.groups(1)[1]
    graph = state_graph(log.load_group(1, group), rule=log.rule(), params=G2POParams(gamma=0.9))
    states = graph.nodes[graph.nodes["kind"] == "state"]
    node = int(states.index[states["visits"] > 1][-1])  # a state several steps reach
    traj = sorted(graph.steps["traj_id"].astype(str).unique())[2]
    path, query, err = url_of(capsys, str(runs / "run_a"), "--app-log", str(runs), "--step",
                              "1", "--group", group, "--node", str(node), "--traj", traj,
                              "-p", "gamma=0.9")
    assert path == "/" and err == ""
    assert query == {"run": ["run_a"], "step": ["1"], "group": [group], "traj": [traj],
                     "node": [str(node)], "gamma": ["0.9"]}
    # the group alone: the last training step, as the app opens it
    _, query, _ = url_of(capsys, str(runs / "run_b"), "--app-log", str(runs), "--group",
                         open_log(runs / "run_b").groups(2)[0])
    assert query["run"] == ["run_b"] and query["step"] == ["2"]


def test_an_edge_is_selected_as_a_click_selects_it(runs, capsys):
    log = open_log(runs / "run_a")
    group = log.groups(2)[0]
    graph = state_graph(log.load_group(2, group), rule=log.rule())
    edge = len(graph.edges) - 1
    _, query, _ = url_of(capsys, str(runs / "run_a"), "--app-log", str(runs), "--group",
                         group, "--edge", str(edge), "--page", "explorer")
    assert query["node"] == [str(int(graph.edges["source"].iloc[edge]))]
    assert query["edge"] == [str(edge)] and query["filter"] == [f"edge:{edge}"]


def test_a_log_the_app_was_not_started_with_is_opened_by_the_url(runs, tmp_path, capsys):
    # the app started without --log (the bundled samples): the URL opens the run itself
    path, query, err = url_of(capsys, str(runs / "run_a"), "--page", "overview")
    assert path == "/overview"
    assert query == {"run": ["run_a"], "open": [str((runs / "run_a").resolve())]}
    assert "path rule" in err and "--allow-dir" in err
    # a run of the same name as one the app lists is told apart, as the sidebar does
    other = write_run(tmp_path / "elsewhere" / "run_a", steps=1)
    _, query, _ = url_of(capsys, str(other), "--app-log", str(runs))
    assert query == {"run": ["elsewhere/run_a"], "open": [str(other.resolve())]}
    _, query, _ = url_of(capsys, str(runs / "run_b"), "--app-log", str(runs / "run_b"),
                         "--app-log", str(runs))  # each path listed once
    assert query == {"run": ["run_b"]}


def test_parameters_and_the_rule_the_user_set_are_in_the_url(runs, capsys):
    _, query, _ = url_of(capsys, str(runs / "run_a"), "--app-log", str(runs), "-p",
                         "gamma=0.95", "-p", "mode=mean_norm", "-p", "success_reward=5",
                         "--truncate-at", "9", "--state-key", "similarity")
    assert query == {"run": ["run_a"], "mode": ["mean_norm"], "success": ["5"],
                     "truncate_at": ["9"], "state_key": ["similarity:0.95"]}


@pytest.mark.parametrize(("argv", "said"), [
    (["--group", "g-nope"], "training step 2 has no group 'g-nope'; nearest: "),
    (["--step", "7"], "no training step 7; nearest: 2, 1 (2 training steps)"),
    (["--node", "999"], "no node 999; nearest: "),
    (["--edge", "999"], "no edge 999 (edges are rows 0–"),
    (["--traj", "nobody"], "no trajectory 'nobody'; nearest: "),
    (["--page", "compare", "--node", "1"], "--node is read by the group explorer only"),
    (["--state-key", "similarity:0.2"], "threshold goes from 0.5 to 1"),
    (["-p", "w=20"], "w=20: the app takes w from 0 to 10"),
    (["--base", "localhost:8501"], "the app's address must be http(s)://"),
])
def test_what_is_missing_is_named_with_the_nearest_choices(runs, capsys, argv, said):
    assert main(["url", str(runs / "run_a"), "--app-log", str(runs), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("g2po url: error: ") and said in err
    if "--node" in argv and "--page" not in argv:
        assert "g2po graph" in err  # where the ids are listed


def test_the_nearest_group_is_the_likeliest(runs, capsys):
    group = max(open_log(runs / "run_a").groups(2), key=len)  # task-12, say
    assert main(["url", str(runs / "run_a"), "--group", group[1:]]) == 2  # ask-12
    assert f"nearest: {group}" in capsys.readouterr().err
    assert main(["url", str(runs)]) == 2
    assert "a folder of 2 logs (run_a, run_b); give the one" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["url", str(runs / "run_a"), "--page", "graph"])
    assert "no page 'graph'" in capsys.readouterr().err


def test_whatif_and_audit_add_each_rows_view(runs, tmp_path, capsys):
    assert main(["whatif", str(runs / "run_a"), "--key", "normalized", "--step", "1",
                 "--format", "csv", "--url", "http://box:9000/app", "--app-log",
                 str(runs)]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(table) == len(open_log(runs / "run_a").groups(1))
    for group, url in zip(table["group_id"], table["url"], strict=True):
        parts = urlsplit(url)
        assert url.startswith("http://box:9000/app/whatif?")
        assert parse_qs(parts.query) == {"run": ["run_a"], "step": ["1"], "group": [group],
                                         "wkey": ["normalized"], "wmin": ["0.1"]}
    assert main(["whatif", str(runs / "run_a"), "--key", "normalized", "--top", "1",
                 "--url"]) == 0
    text = capsys.readouterr().out
    assert "the rows' views in the app:" in text and "http://localhost:8501/whatif?" in text

    run = write_run(tmp_path / "audited", advantage=True)
    assert main(["audit", str(run), "--all", "--format", "json", "--no-fit", "--url"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert rows and all(parse_qs(urlsplit(r["url"]).query) == {
        "run": ["audited"], "open": [str(run.resolve())], "step": [str(r["train_step"])],
        "group": [r["group_id"]]} for r in rows)
    assert "g2po audit: note: the URLs open" in out.err and "path rule" in out.err
    # a step row: its trajectory highlighted in its group
    assert main(["audit", str(run), "--all", "--steps", "--top", "5", "--format", "json",
                 "--no-fit", "--url"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5 and all(parse_qs(urlsplit(r["url"]).query)["traj"] == [r["traj_id"]]
                                  for r in rows)
