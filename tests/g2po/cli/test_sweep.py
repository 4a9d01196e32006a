"""``g2po triage`` and ``g2po advantages`` on a folder of runs, here and on a local Ray: the
same table (and the same advantage files) as each run's single-log command, every record
named by its run."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from functools import partial

import pandas as pd
import pytest

from g2po.cli import main
from g2po.cli.sweep import find_runs, plan_units
from loaders import RunWriter
from tests.app.builders import group_steps
from tests.g2po.analysis.groups import ALL_FAILED
from tests.g2po.builders import trajectories
from tests.loaders.builders import agent_loop_entries, step_table, write_verl_dump

ray = pytest.importorskip("ray")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "g2po-cache"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two run directories (one below a sub-folder), a verl dump, a CSV table, and a README."""
    root = tmp_path_factory.mktemp("sweep")
    for name, seed in (("lr-1e-6", 1), ("more/lr-3e-6", 5)):
        writer = RunWriter(root / name, {"config": {"success_reward": 10.0}})
        for step in (1, 2, 3):
            steps = pd.concat([group_steps(seed=seed + step, rows=400),
                               trajectories(ALL_FAILED, f"dead-{step}")], ignore_index=True)
            writer.write_step(step, steps)
    for step in (1, 2):
        write_verl_dump(root / "verl-dump", step, agent_loop_entries(step, prompts=3))
    pd.concat([step_table(groups=3, train_step=s, seed=s) for s in (0, 1)]).to_csv(
        root / "table.csv", index=False)
    (root / "README.md").write_text("# the sweep\n")
    return root


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray with 2 CPUs for the module (the commands use the Ray they find)."""
    if ray.is_initialized():
        ray.shutdown()
    for attempt in range(3):
        try:
            ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
            break
        except Exception as err:  # noqa: BLE001 - Ray's own startup limit (30 s) on a busy machine
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(err):
                raise
    yield
    ray.shutdown()


def csv_out(capsys) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def test_the_runs_and_their_units(runs):
    found, notes = find_runs(runs)
    assert [r.name for r in found] == ["lr-1e-6", "more/lr-3e-6", "table.csv", "verl-dump"]
    assert notes == []
    units = plan_units(found, {})
    # one unit per step file; the table is one file, so one unit
    assert [(u.run, u.steps) for u in units] == [
        ("lr-1e-6", (1,)), ("lr-1e-6", (2,)), ("lr-1e-6", (3,)),
        ("more/lr-3e-6", (1,)), ("more/lr-3e-6", (2,)), ("more/lr-3e-6", (3,)),
        ("table.csv", None), ("verl-dump", (1,)), ("verl-dump", (2,))]
    assert units[0].source.endswith("step-000001.parquet")
    assert units[-1].source.endswith("2.jsonl")


def single_tables(runs, capsys) -> pd.DataFrame:
    """Each run's own ``g2po triage RUN --format csv``, with its run named."""
    parts = []
    for run in find_runs(runs)[0]:
        assert main(["triage", str(run.path), "--format", "csv", "--no-cache"]) == 0
        parts.append(csv_out(capsys).assign(run=run.name))
    table = pd.concat(parts, ignore_index=True)
    return table[["run", *table.columns[:-1]]]


def same_rows(got: pd.DataFrame, want: pd.DataFrame) -> None:
    key = ["run", "train_step", "group_id"]
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want)
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True),
                                  check_dtype=False)  # each run's CSV read on its own


def test_triage_of_a_folder_here_is_each_runs_table(runs, capsys):
    want = single_tables(runs, capsys)
    assert main(["triage", str(runs), "--format", "csv"]) == 0
    got = csv_out(capsys)
    same_rows(got, want)
    assert set(got["run"]) == {"lr-1e-6", "more/lr-3e-6", "table.csv", "verl-dump"}
    # worst first across the runs: the dead groups of both run directories lead
    assert set(got["group_id"][:6]) == {"dead-1", "dead-2", "dead-3"}


def test_triage_on_ray_is_the_single_machine_table(runs, local_ray, capsys):
    assert main(["triage", str(runs), "--format", "csv"]) == 0
    here = csv_out(capsys)
    assert main(["triage", str(runs), "--format", "csv", "--ray", "--ray-workers", "2"]) == 0
    got = csv_out(capsys)
    pd.testing.assert_frame_equal(got, here)  # the same rows in the same order
    same_rows(got, single_tables(runs, capsys))


def test_triage_of_one_log_on_ray_has_no_run_column(runs, local_ray, capsys):
    run = runs / "lr-1e-6"
    assert main(["triage", str(run), "--format", "csv"]) == 0
    want = csv_out(capsys)
    assert main(["triage", str(run), "--ray", "--format", "csv"]) == 0
    pd.testing.assert_frame_equal(csv_out(capsys), want)


def test_advantages_on_ray_write_each_runs_table(runs, local_ray, tmp_path, capsys):
    est = ["-e", "g2po", "-e", "grpo", "-e", "gigpo"]
    assert main(["advantages", str(runs), "--out", str(tmp_path / "ray"), "--ray", *est]) == 0
    assert main(["advantages", str(runs), "--out", str(tmp_path / "here"), *est]) == 0
    said = capsys.readouterr().out
    assert "wrote" in said and "of more/lr-3e-6 to" in said
    (tmp_path / "one").mkdir()
    for run in find_runs(runs)[0]:
        one = tmp_path / "one" / f"{run.name.replace('/', '_')}.parquet"
        assert main(["advantages", str(run.path), "--out", str(one), *est]) == 0
        want = pd.read_parquet(one)
        want.insert(0, "run", run.name)
        for where in ("ray", "here"):
            got = pd.read_parquet(tmp_path / where / f"{run.name}.parquet")
            pd.testing.assert_frame_equal(got, want, check_dtype=False)
            assert got["run"].eq(run.name).all() and len(got) > 0


def test_a_sweep_asks_for_a_folder_to_write_to(runs, capsys):
    assert main(["advantages", str(runs), "--out", "x.parquet"]) == 2
    assert "--out DIR" in capsys.readouterr().err
    assert main(["triage", str(runs), "--step", "1"]) == 2
    assert "--step" in capsys.readouterr().err


@pytest.mark.slow  # two fresh processes, one of which starts Ray (about 2 minutes here)
def test_the_command_starts_its_own_local_ray(runs, tmp_path):
    """As a user runs it: a fresh process that starts a local Ray with one CPU and shows the
    progress; the table is the single-machine one."""
    env = {**os.environ, "G2PO_CACHE": str(tmp_path / "cache")}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, "-m", "g2po", "triage", str(runs), "--format", "csv"]
    here = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    for _ in range(3):  # Ray gives its node 30 s to start, which a busy machine can exceed
        on_ray = subprocess.run([*command, "--ray", "--ray-workers", "1", "--progress"],
                                capture_output=True, text=True, env=env, timeout=600)
        if "timed out during startup" not in on_ray.stderr:
            break
    assert on_ray.returncode == 0, on_ray.stderr[-2000:]
    assert on_ray.stdout == here.stdout
    assert "StepFiles" in on_ray.stderr  # Ray Data's progress of the read tasks


def test_a_bad_step_file_on_ray_is_named(runs, local_ray, tmp_path, capsys):
    """A worker's error reaches the user as the single-machine path says it: the file named,
    exit 2, no traceback."""
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(runs / "lr-1e-6", sweep / "good")
    shutil.copytree(runs / "lr-1e-6", sweep / "bad")
    bad = next((sweep / "bad" / "rollouts").glob("step-000002*"))
    bad.write_bytes(b"PAR1 not really parquet PAR1")
    assert main(["triage", str(sweep), "--format", "csv", "--no-cache"]) == 2
    here = capsys.readouterr().err
    assert main(["triage", str(sweep), "--format", "csv", "--ray"]) == 2
    err = capsys.readouterr().err
    # the last line is the single-machine path's, and no frame of the worker's traceback
    # shows (Ray's own log handlers may still complain of the streams pytest swapped)
    assert err.strip().splitlines()[-1] == here.strip().splitlines()[-1]
    assert bad.name in here and "step_columns" not in err, err
    # it was the worker's error, carried back as data (the driver only lists the files)
    from g2po.cli.ray_sweep import SweepError, ray_units
    from g2po.cli.sweep import triage_unit

    units = plan_units(find_runs(sweep)[0], {})
    compute = partial(triage_unit, options={}, stochastic=False,
                      estimator="g2po")
    with pytest.raises(SweepError, match="not a readable Parquet file"):
        list(ray_units(units, compute))


@pytest.mark.parametrize("where", ["holder", "holder/run-a/rollouts"])
def test_a_folder_of_one_run_or_a_runs_step_files_is_no_sweep(tmp_path, capsys, where):
    """A folder holding one run, and a run's rollouts/ folder (several step files), get the
    single-log answer from both commands, as from ``g2po validate``: not a sweep of one run,
    nor of step files read as tables without their run's outcome rule."""
    writer = RunWriter(tmp_path / "holder" / "run-a", {"config": {"success_reward": 10.0}})
    for step in (1, 2):
        writer.write_step(step, group_steps(seed=step, rows=100))
    said = []
    for command in (["triage", "--format", "csv"], ["advantages", "--out", str(tmp_path / "o")]):
        assert main([command[0], str(tmp_path / where), *command[1:]]) == 2
        err = capsys.readouterr().err
        said.append(err.split("error: ", 1)[1])
    assert said[0] == said[1]
    if where.endswith("rollouts"):
        assert "no logs found in this directory" in said[0]
        assert f"pass the run directory, {tmp_path / 'holder' / 'run-a'}" in said[0]
    else:  # it named run-a as no log ("It holds: run-a"): the one log found, to pass
        assert f"this folder is no log itself, and it holds one log, " \
               f"{tmp_path / 'holder' / 'run-a'}: pass that log" in said[0]
    assert not (tmp_path / "o").exists()
