"""``g2po whatif`` as a user runs it: one group's changed steps and nodes, or every group of a
log, as text, CSV or JSON, with the library's numbers."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from g2po.analysis.whatif import RUN_COLUMNS, what_if, whatif_log
from g2po.cli import main
from g2po.params import G2POParams
from g2po.synthetic import synthetic_steps
from loaders import RunWriter, open_log
from tests.g2po.builders import alfworld_steps

COARSE = r"regex:^task \d+ room \d"


@pytest.fixture
def run(tmp_path):
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    for step in (1, 2):
        writer.write_step(step, synthetic_steps(500, rollouts=4, max_len=15,
                                                states_per_task=20, key_chars=60, seed=step))
    return tmp_path / "run"


def test_every_group_as_csv_and_text(run, capsys):
    assert main(["whatif", str(run), "--key", COARSE, "--format", "csv", "-p", "gamma=0.9",
                 "--min-change", "0.3"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    log = open_log(run)
    expected = whatif_log(log, COARSE, params=G2POParams(gamma=0.9), min_change=0.3)
    assert list(table.columns) == RUN_COLUMNS
    pd.testing.assert_frame_equal(table, expected.astype({"group_id": str, "task": str}),
                                  check_dtype=False)
    assert main(["whatif", str(run), "--key", COARSE, "--step", "2", "--top", "2"]) == 0
    out = capsys.readouterr().out
    changed = int((expected.loc[expected["train_step"] == 2, "changed"] > 0).sum())
    assert f"{changed:,} of {int((expected['train_step'] == 2).sum())} group(s) change" in out
    assert "one group: --group G" in out


def test_one_group_as_text_and_json(run, capsys):
    log = open_log(run)
    group = log.groups(2)[0]
    result = what_if(log.load_group(2, group), COARSE, rule=log.rule())
    assert main(["whatif", str(run), "--key", COARSE, "--group", group, "--format",
                 "json"]) == 0  # the last training step by default
    said = json.loads(capsys.readouterr().out)
    assert said["summary"] == pytest.approx(result.summary())
    assert len(said["steps"]) == len(result.changed) and said["key"] == COARSE
    assert [s["delta"] for s in said["steps"]] == pytest.approx(
        result.changed["delta"].tolist())
    assert said["nodes"][0]["nodes_before"] == result.nodes["nodes_before"].iloc[0]
    assert main(["whatif", str(run), "--key", COARSE, "--group", group, "--step", "2"]) == 0
    out = capsys.readouterr().out
    s = result.summary()
    assert f"{s['changed']} of {s['steps']} step(s) change" in out
    assert "nodes that merged or split" in out and "state merged: nodes" in out


def test_the_alfworld_key_on_a_table_with_prompts_and_on_a_run_without(run, tmp_path, capsys):
    table = tmp_path / "alfworld.parquet"
    alfworld_steps().to_parquet(table)
    assert main(["whatif", str(table), "--key", "alfworld", "--group", "g",
                 "--format", "csv"]) == 0
    steps = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert steps["why"].str.contains("split").any()
    assert main(["whatif", str(run), "--key", "alfworld"]) == 2
    err = capsys.readouterr().err
    assert "g2po whatif: error:" in err and "admissible actions" in err
    assert main(["whatif", str(run), "--key", "fuzzy"]) == 2
    assert "unknown state-key strategy 'fuzzy'" in capsys.readouterr().err
