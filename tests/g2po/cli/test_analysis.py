"""``g2po advantages``, ``g2po graph`` and ``g2po bench`` run as a user runs them."""

from __future__ import annotations

import io
import subprocess
import sys

import pandas as pd
import pytest

from g2po import compute_advantages
from g2po.cli import main
from tests.g2po.builders import THREE, TWO, trajectories


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "steps.csv"
    pd.concat([trajectories(THREE), trajectories(TWO, group="h")]).to_csv(path, index=False)
    return path


def test_advantages_prints_g2po_and_grpo(table, capsys):
    assert main(["advantages", str(table), "-e", "g2po", "-e", "grpo", "--group", "g"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert {"g2po/adv", "g2po/adv_nc", "g2po/adv_ec", "g2po/adv_ep", "grpo/adv"} <= set(header)
    assert len(out.splitlines()) == 1 + 8  # header + the 8 steps of group g
    expected = compute_advantages(trajectories(THREE), "grpo")["adv"].iloc[0]
    assert f"{expected:.4f}" in out


def test_advantages_to_parquet_with_parameters(table, tmp_path, capsys):
    out = tmp_path / "adv.parquet"
    assert main(["advantages", str(table), "-p", "gamma=0.9", "-p", "mode=mean_norm",
                 "--out", str(out)]) == 0
    written = pd.read_parquet(out)
    assert len(written) == 13
    steps = pd.read_csv(table)
    want = compute_advantages(steps, gamma=0.9, mode="mean_norm")
    assert written["adv"].tolist() == pytest.approx(want["adv"].tolist())


def test_hgpo_with_a_whole_number_parameter(table, tmp_path):
    out = tmp_path / "hgpo.parquet"
    assert main(["advantages", str(table), "-e", "hgpo", "-p", "history_length=3",
                 "-p", "base_group=true", "--out", str(out)]) == 0
    written = pd.read_parquet(out)
    want = compute_advantages(pd.read_csv(table), "hgpo", history_length=3, base_group=True)
    assert "adv_k4" in written.columns and "adv_k5" not in written.columns
    assert written["adv"].tolist() == pytest.approx(want["adv"].tolist())


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    trajectories(TWO).drop(columns="state_key").to_csv(bad, index=False)
    assert main(["advantages", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "missing required column(s): 'state_key'" in err
    assert main(["advantages", str(tmp_path / "nope.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["advantages", str(bad).replace("bad", "x"), "-p", "w"]) == 2


def test_unknown_parameter_names_what_is_accepted(table, capsys):
    assert main(["advantages", str(table), "-e", "grpo", "-p", "w=0.5"]) == 2
    assert "w" in capsys.readouterr().err


def test_graph_summary(table, capsys):
    assert main(["graph", str(table), "--group", "g"]) == 0
    out = capsys.readouterr().out
    assert "group g: 8 steps, 3 trajectories, 3 state nodes" in out
    assert "success" in out and "failure" in out and "look" in out
    assert main(["graph", str(table)]) == 2
    assert "--group is required" in capsys.readouterr().err


def test_bench_prints_its_figures():
    result = subprocess.run([sys.executable, "-m", "g2po", "bench", "--rows", "2000",
                             "--repeats", "1"], capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ["estimator", "rows"]
    assert any(line.startswith("g2po") for line in lines[1:])


def test_bench_runs_the_estimators_named(capsys):
    assert main(["bench", "--rows", "600", "--repeats", "1", "-e", "gigpo", "-e", "rloo"]) == 0
    named = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert named == ["gigpo", "rloo", "(index"]


def test_estimators_lists_every_registered_one_and_describes_those_named(capsys):
    from g2po.estimators import get_spec, list_estimators

    assert main(["estimators"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list_estimators()
    assert main(["estimators", "gigpo"]) == 0
    said = capsys.readouterr().out
    spec = get_spec("gigpo")
    assert said.startswith(f"gigpo: {spec.title}\n  {spec.summary}\n  original: {spec.original}")
    assert f"    omega = 1.0: {spec.params['omega']}" in said
    assert "  part A^S (adv_step, × omega): step term" in said
    with pytest.raises(SystemExit):
        main(["estimators", "no_such_estimator"])
    assert "unknown estimator 'no_such_estimator'; registered: g2po, " in capsys.readouterr().err


def _long_actions(tmp_path):
    steps = trajectories(THREE)
    steps["action"] = steps["action"] + " because" + " the agent explained itself" * 20
    path = tmp_path / "long.csv"
    steps.to_csv(path, index=False)
    return path, steps


def test_advantages_fit_the_terminal_and_full_prints_everything(tmp_path, capsys, monkeypatch):
    path, steps = _long_actions(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["advantages", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 160
    assert "…" in lines[1] and steps["action"].iloc[0] not in lines[1]
    assert main(["advantages", str(path), "--full"]) == 0
    out = capsys.readouterr().out
    assert steps["action"].iloc[0] in out and "…" not in out


def test_terminal_table_cuts_rows_and_flattens_line_breaks():
    from g2po.cli.text import terminal_table

    table = pd.DataFrame({"action": ["a\nb", "\x1b[31mred"] * 50, "x": range(100)})
    text = terminal_table(table, max_rows=4, width=40)
    lines = text.splitlines()
    assert len(lines) == 1 + 4 + 1 and "96 rows not shown" in lines[3]
    assert "a b" in lines[1] and "\\x1b[31mred" in lines[2] and "\x1b" not in text
    assert "\x1b" not in terminal_table(table, full=True)


def test_an_unexpected_failure_is_one_line_and_exit_3(table, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    # the command imports it from the estimators when it runs
    monkeypatch.setattr("g2po.estimators.compute_advantages", broken)
    assert main(["advantages", str(table)]) == 3
    err = capsys.readouterr().err.splitlines()  # what it read, then the failure in one line
    assert err[0].startswith("g2po advantages: read ") and "Traceback" not in "".join(err)
    assert err[-1].startswith("g2po advantages: internal error (ZeroDivisionError): boom")
    monkeypatch.setenv("G2PO_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["advantages", str(table)])


def test_our_csv_export_reads_back(tmp_path, capsys):
    from loaders import LoadReport
    from loaders.tables import read_table

    steps = trajectories(THREE)
    steps["action"] = [f"go\r{i}" for i in range(len(steps))]
    src = tmp_path / "in.parquet"
    steps.to_parquet(src)
    out = tmp_path / "adv.csv"
    assert main(["advantages", str(src), "--out", str(out)]) == 0
    back, _ = read_table(out, "csv", LoadReport(), ("action",))
    assert back["action"].tolist() == steps["action"].tolist()


@pytest.fixture
def ones(tmp_path):
    """Group g of THREE with its success rewarded 1.0 and marked ``won`` (so the log's own
    rule is success reward 1); its two failures last 3 steps, the success 2."""
    steps = trajectories(THREE)
    steps["episode_reward"] = steps["episode_reward"] / 10.0
    steps["won"] = (steps["traj_id"] == "a") & (steps["t"] == 1)
    path = tmp_path / "ones.csv"
    steps.to_csv(path, index=False)
    return path, steps.drop(columns="won")


def test_advantages_take_the_logs_rule_unless_p_overrides_it(ones, tmp_path, capsys):
    path, steps = ones
    out = tmp_path / "adv.parquet"
    assert main(["advantages", str(path), "-e", "g2po", "-e", "grpo", "--out", str(out)]) == 0
    written = pd.read_parquet(out)
    by_rule = compute_advantages(steps, "g2po", success_reward=1.0)
    by_default = compute_advantages(steps, "g2po")
    assert written["g2po/adv"].tolist() == pytest.approx(by_rule["adv"].tolist())
    assert written["g2po/adv"].tolist() != pytest.approx(by_default["adv"].tolist())
    # the flag sets the rule; -p overrides the rule for the estimators that take it
    assert main(["advantages", str(path), "--success-min", "0.5", "--out", str(out)]) == 0
    want = compute_advantages(steps, "g2po", success_reward=1.0, success_threshold=0.5)
    assert pd.read_parquet(out)["adv"].tolist() == pytest.approx(want["adv"].tolist())
    assert main(["advantages", str(path), "-p", "success_reward=10", "--out", str(out)]) == 0
    assert pd.read_parquet(out)["adv"].tolist() == pytest.approx(by_default["adv"].tolist())
    # an estimator without a success reward is not handed one
    assert main(["advantages", str(path), "-e", "grpo", "--out", str(out)]) == 0
    assert pd.read_parquet(out)["adv"].tolist() == pytest.approx(
        compute_advantages(steps, "grpo")["adv"].tolist())


def test_graph_follows_the_logs_rule_and_the_truncation_flag(ones, capsys):
    path, _ = ones
    assert main(["graph", str(path), "--group", "g"]) == 0
    out = capsys.readouterr().out
    assert "outcome rule: reward = success reward 1" in out
    assert "truncated" not in out
    assert main(["graph", str(path), "--group", "g", "--truncate-at", "3"]) == 0
    out = capsys.readouterr().out
    assert "length ≥ 3 without success ⇒ truncated" in out
    nodes = out.split("\nnodes\n")[1].split("\nedges\n")[0]
    # b and c fail after 3 steps: both end at the truncated terminal, valued 0
    (row,) = [line for line in nodes.splitlines() if "<truncated>" in line]
    assert row.split()[1:4] == ["truncated", "<truncated>", "2"]


def test_advantages_says_what_it_read_and_what_the_loader_noted(tmp_path, capsys):
    run = tmp_path / "r"  # a rollouts/ folder of a plain table and a stray file, no run.json
    (run / "rollouts").mkdir(parents=True)
    trajectories(THREE).to_parquet(run / "rollouts" / "step-000001.parquet")
    (run / "rollouts" / "1.jsonl").write_text("{}\n")
    assert main(["advantages", str(run), "--out", str(tmp_path / "adv.csv")]) == 0
    err = capsys.readouterr().err
    assert f"g2po advantages: read {run} as a g2po run directory: 8 step rows" in err
    assert f"note: {run / 'run.json'} missing" in err
    assert "not named step-NNNNNN.parquet, not read: 1.jsonl" in err


def test_explain_prints_a_groups_critical_transitions_and_alarms_in_words(table, tmp_path,
                                                                          capsys):
    from g2po.analysis.group_view import compute_group, explain_group
    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams

    assert main(["advantages", str(table), "--group", "g", "--explain", "-p", "gamma=0.9"]) == 0
    out = capsys.readouterr().out.splitlines()
    view = compute_group(trajectories(THREE), rule=OutcomeRule(),
                         params=G2POParams(gamma=0.9))
    assert out[0] == "group g · state key exact · γ 0.9, w 1, penalty 0.1, mean_std_norm"
    assert out[1:] == explain_group(view)  # the same words as the library's, line by line
    assert sum(line.startswith("  #") for line in out) == len(view.critical) > 0
    assert any(line.startswith("credit alarms") for line in out)
    # a log that recorded the advantage it trained with: audited in one more line
    steps = trajectories(THREE).assign(advantage=view.graph.steps["adv"].to_numpy())
    steps.loc[0, "advantage"] = 0.0
    recorded = tmp_path / "recorded.csv"
    steps.to_csv(recorded, index=False)
    assert main(["advantages", str(recorded), "--explain", "-p", "gamma=0.9"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("recorded advantage (the trainer's) against g2po's recomputation: "
                           "1 step(s) recorded as 0 where g2po gives credit")
    # one group, G2PO's view: several groups, another estimator or --out are refused
    assert main(["advantages", str(table), "--explain"]) == 2
    assert "--group is required, the log holds 2 groups" in capsys.readouterr().err
    assert main(["advantages", str(table), "--group", "g", "--explain", "-e", "grpo"]) == 2
    assert "--explain prints G2PO's view of one group" in capsys.readouterr().err


def test_explain_shows_control_characters_from_logs_not_obeys_them(tmp_path, capsys):
    steps = trajectories(THREE)
    steps["action"] = steps["action"].replace("y", "go\x1b[31m red")
    path = tmp_path / "hostile.csv"
    steps.to_csv(path, index=False)
    assert main(["advantages", str(path), "--group", "g", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "go\\x1b[31m red" in out


def test_every_command_starts_from_the_parameters_the_run_recorded(tmp_path, capsys):
    """A run trained with γ 0.5, w 0.8 and the normalized key reads under them in every
    command, as the app's sidebar starts from them (one rule: ``Log.params``); -p and
    --state-key still win."""
    from g2po.analysis.triage import triage_log
    from g2po.params import G2POParams
    from loaders import RunWriter, open_log

    steps = trajectories(THREE)
    recorded = G2POParams(gamma=0.5, w=0.8, state_key="normalized")
    writer = RunWriter(tmp_path / "run", {"params": recorded.as_dict()})
    writer.write_step(1, steps)
    run, out = str(tmp_path / "run"), tmp_path / "adv.parquet"
    assert open_log(run).params() == recorded
    steps = open_log(run).load()  # in the order the command reads them

    assert main(["advantages", run, "--out", str(out)]) == 0
    want = compute_advantages(steps, "g2po", gamma=0.5, w=0.8, state_key="normalized")
    assert pd.read_parquet(out)["adv"].tolist() == pytest.approx(want["adv"].tolist())
    assert main(["advantages", run, "-p", "gamma=0.95", "--state-key", "exact",
                 "--out", str(out)]) == 0
    want = compute_advantages(steps, "g2po", w=0.8)
    assert pd.read_parquet(out)["adv"].tolist() == pytest.approx(want["adv"].tolist())

    capsys.readouterr()
    assert main(["triage", run, "--format", "csv", "--no-cache"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out))
    table = triage_log(open_log(run), params=recorded, cache=False)
    assert got["adv_abs_mean"].tolist() == pytest.approx(table["adv_abs_mean"].tolist())

    assert main(["url", run, "--app-log", run]) == 0
    printed = capsys.readouterr().out
    assert "gamma=0.5" in printed and "w=0.8" in printed and "state_key=normalized" in printed
