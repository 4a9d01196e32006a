"""`g2po validate`, and the analysis commands on every log format."""

from __future__ import annotations

import json
import pickle

import pytest

from g2po.cli import main
from g2po.synthetic import synthetic_steps
from loaders import RunWriter
from tests.loaders.builders import agent_loop_entries, step_table, write_verl_dump


@pytest.fixture
def run(tmp_path):
    writer = RunWriter(tmp_path / "run", {"env": "demo", "model": "tiny", "estimator": "g2po"})
    for s in (1, 2):
        writer.write_step(s, synthetic_steps(1200, seed=s))
    return tmp_path / "run"


def test_validate_run(run, capsys):
    assert main(["validate", str(run)]) == 0
    out = capsys.readouterr().out
    assert "format          run" in out and "model           tiny" in out
    assert "training steps  2 (1-2)" in out
    rows = sum(len(synthetic_steps(1200, seed=s)) for s in (1, 2))
    assert f"step rows       {rows:,}" in out and "problems        0 (none)" in out


def test_validate_reports_skips_and_problems(tmp_path, capsys):
    path = write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    path.write_text(path.read_text() + '{"input": "half')
    assert main(["validate", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "skipped rows    1" in out and "truncated last line" in out
    assert "is_action_valid absent" in out

    steps = step_table()
    steps.loc[1, "episode_reward"] = float("nan")
    steps.to_csv(tmp_path / "s.csv", index=False)
    assert main(["validate", str(tmp_path / "s.csv"), "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["format"] == "csv" and not found["ok"]
    assert "null/NaN values in 1 row(s): 3" in found["problems"][0]


def test_validate_empty_directory(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 1
    assert "no logs found" in capsys.readouterr().out


def test_advantages_and_graph_on_a_run(run, capsys):
    gid = synthetic_steps(1200, seed=2)["group_id"].iloc[0]
    assert main(["advantages", str(run), "--train-step", "2", "--group", gid,
                 "--max-rows", "3"]) == 0
    assert "adv_ec" in capsys.readouterr().out
    assert main(["graph", str(run), "--train-step", "1", "--group", gid]) == 0
    assert f"group {gid}:" in capsys.readouterr().out


def test_advantages_on_verl_dump_and_mapped_table(tmp_path, capsys):
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    uid = agent_loop_entries(1)[0]["uid"].rsplit("_", 2)[0]
    assert main(["graph", str(tmp_path / "d"), "--train-step", "1", "--group", uid]) == 0
    assert "state nodes" in capsys.readouterr().out

    step_table().rename(columns={"group_id": "task", "traj_id": "rollout"}).to_parquet(
        tmp_path / "t.parquet")
    (tmp_path / "m.yaml").write_text("group_id: task\n")
    assert main(["advantages", str(tmp_path / "t.parquet"), "--mapping", str(tmp_path / "m.yaml"),
                 "--map", "traj_id=rollout", "-e", "grpo"]) == 0
    assert "g1" in capsys.readouterr().out


def test_pickle_needs_the_trust_flag(tmp_path, capsys):
    (tmp_path / "b.pkl").write_bytes(pickle.dumps({"uid": ["u"], "traj_uid": ["t"],
                                                   "anchor_obs": ["s"], "action": ["a"],
                                                   "episode_rewards": [1.0]}))
    assert main(["advantages", str(tmp_path / "b.pkl")]) == 2
    assert "refusing to unpickle" in capsys.readouterr().err
    assert main(["advantages", str(tmp_path / "b.pkl"), "--trust-pickle"]) == 0
    assert main(["validate", str(tmp_path / "b.pkl")]) == 1
    assert "--trust-pickle" in capsys.readouterr().out


def test_validate_lists_only_the_files_columns(tmp_path, capsys):
    path = tmp_path / "mine.csv"
    step_table().drop(columns=["is_action_valid", "state_key"]).rename(
        columns={"group_id": "uid"}).to_csv(path, index=False)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "Columns found: uid, traj_id, t, action, episode_reward\n" in out


def test_validate_of_special_files_is_one_clear_problem(tmp_path, capsys):
    import os

    os.mkfifo(tmp_path / "pipe.csv")
    for path in ("/dev/zero", str(tmp_path / "pipe.csv")):
        assert main(["validate", path]) == 1
        out = capsys.readouterr().out
        assert "not a regular file" in out and "Traceback" not in out


def test_advantages_and_validate_refuse_a_folder_named_like_a_step_file(run, tmp_path, capsys):
    """One listing of a run's step files for every command: a folder named like a step file
    is a training step whose file is unreadable, and each command names it."""
    from loaders import LogFormatError, load_steps

    folder = run / "rollouts" / "step-000007.parquet"
    folder.mkdir()
    assert main(["validate", str(run)]) == 1
    out = capsys.readouterr().out
    assert f"{folder}: not a regular file" in out and "Traceback" not in out
    assert main(["advantages", str(run), "--out", str(tmp_path / "adv.csv")]) != 0
    err = capsys.readouterr().err
    assert f"{folder}: not a regular file" in err and "Traceback" not in err
    assert not (tmp_path / "adv.csv").exists()
    assert main(["triage", str(run), "--no-cache"]) != 0
    err = capsys.readouterr().err
    assert f"{folder}: not a regular file" in err and "Traceback" not in err
    with pytest.raises(LogFormatError, match="step-000007.parquet: not a regular file"):
        load_steps(run)
    # a command that reads other steps says so too, as validate does, rather than no word
    said = "training step(s) cannot be read, a read of them fails (g2po validate lists them): " \
           "step 7's step-000007.parquet is no regular file"
    assert main(["advantages", str(run), "--train-step", "1", "--out",
                 str(tmp_path / "one.csv")]) == 0
    assert said in capsys.readouterr().err and (tmp_path / "one.csv").exists()
    assert main(["triage", str(run), "--step", "1", "--no-cache", "--format", "csv"]) == 0
    assert said in capsys.readouterr().err
    (run / "rollouts" / "step-0000001.parquet").write_bytes(b"")  # claims step 1 as well
    assert main(["advantages", str(run), "--train-step", "2", "--out",
                 str(tmp_path / "two.csv")]) == 0
    assert ("2 training step(s) cannot be read, a read of them fails (g2po validate lists "
            "them): step 1 is claimed by step-0000001.parquet and step-000001.parquet; step 7's"
            in capsys.readouterr().err)


@pytest.mark.parametrize("command", ["validate", "advantages", "graph", "triage"])
def test_every_command_reads_past_a_malformed_line_naming_it_and_strict_refuses(
        tmp_path, capsys, command):
    """One bad line in the middle of a dump file costs that line: each command that reads a
    log reads the rest and names the line (file:line) on stderr or in its findings;
    ``--strict`` refuses the log, naming the line."""
    for step in (1, 2):
        write_verl_dump(tmp_path / "d", step, agent_loop_entries(step))
    path = tmp_path / "d" / "2.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = lines[4][:50] + "\n"
    path.write_text("".join(lines))
    args = [command, str(tmp_path / "d")]
    if command == "graph":  # the group that lost the line
        args += ["--train-step", "2", "--group",
                 agent_loop_entries(2)[0]["uid"].rsplit("_", 2)[0]]
    assert main(args) == 0
    said = capsys.readouterr()
    assert "2.jsonl:5" in said.out + said.err
    code = main([*args, "--strict"])
    said = capsys.readouterr()
    assert code in (1, 2) and "2.jsonl:5: malformed JSON line" in said.out + said.err
