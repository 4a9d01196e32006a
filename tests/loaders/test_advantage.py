"""The advantage a trainer recorded, read from every log format under its names: a column
``advantage`` / ``advantages`` (tables, run directories), a verl dump line's extra, a batch
dump's token tensor, ``--map advantage=COLUMN``; per-token lists reduced only where that is
unambiguous."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from loaders import LogFormatError, RunWriter, load_steps, open_log, report_of
from loaders.advantage import advantage_sources, step_values
from tests.loaders.builders import agent_loop_entries, step_table, write_verl_dump
from tests.loaders.test_pickles import FakeDataProto, verl_agent_batch


def test_a_per_token_list_becomes_the_steps_one_value():
    got = step_values(pd.Series([[0.0, 0.5, 0.5, 0.0], "[0, 0]", "[1.5, NaN, 1.5]", 2.0,
                                 None, np.array([-0.25, -0.25])]))
    np.testing.assert_array_equal(got.to_numpy(), [0.5, 0.0, 1.5, 2.0, np.nan, -0.25])
    assert got.dtype == np.float64
    plain = pd.Series([1.0, 2.0])
    assert step_values(plain) is plain


@pytest.mark.parametrize("cell, words", [
    ([0.1, 0.2, 0.0], r"per-token values that differ \(0\.1 … 0\.2; 1 step\(s\) so\)"),
    ([], "an empty list"),
    ([[1.0], [1.0]], "not a flat list of numbers"),
    (["a", "b"], "not a flat list of numbers"),
])
def test_an_ambiguous_list_is_an_error_naming_the_line(cell, words):
    with pytest.raises(LogFormatError, match=f"^steps.jsonl:7: field 'advantage' .*{words}"):
        step_values(pd.Series([1.0, cell], index=[6, 7]), "steps.jsonl", "line")


def test_readers_of_a_few_columns_also_read_the_alias():
    assert advantage_sources(["t", "advantage"]) == ["t", "advantage", "advantages"]
    assert advantage_sources(["t"]) == ["t"]


def with_advantage(frame: pd.DataFrame, name: str, cells) -> pd.DataFrame:
    return frame.assign(**{name: cells})


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_tables_read_advantages_lists_and_scalars(tmp_path, fmt):
    steps = step_table()
    values = np.round(np.linspace(-1, 1, len(steps)), 3)
    lists = [[0.0, v, v] for v in values]  # masked first token
    path = tmp_path / f"steps.{fmt}"
    frame = with_advantage(steps, "advantages", [json.dumps(c) for c in lists]
                           if fmt == "csv" else lists)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)
    loaded = load_steps(path)
    np.testing.assert_allclose(loaded["advantage"], values)
    assert loaded["advantage"].dtype == np.float64
    notes = report_of(loaded).notes
    assert "advantage read from column 'advantages'" in notes
    assert any("a list per step" in n for n in notes)


def test_the_mapping_form_names_any_column(tmp_path):
    path = tmp_path / "steps.csv"
    with_advantage(step_table(), "credit", 0.25).to_csv(path, index=False)
    assert "advantage" not in load_steps(path).columns
    mapped = load_steps(path, mapping=["advantage=credit"])
    assert (mapped["advantage"] == 0.25).all()
    bad = tmp_path / "bad.csv"
    with_advantage(step_table(), "advantage", "high").to_csv(bad, index=False)
    with pytest.raises(Exception, match="column 'advantage' is not numeric"):
        load_steps(bad)


def test_a_run_directory_with_advantages(tmp_path):
    steps = step_table(train_step=1)
    values = np.arange(len(steps)) / 10
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    writer.write_step(1, with_advantage(steps, "advantages", [[v, v] for v in values]))
    log = open_log(tmp_path / "run")
    whole = log.load_step(1)
    np.testing.assert_allclose(whole.sort_values(["group_id", "traj_id", "t"])["advantage"],
                               values[np.lexsort((steps["t"], steps["traj_id"],
                                                  steps["group_id"]))])
    few = dict(log.columns_of_steps([1], ["group_id", "t", "advantage"]))[1]
    assert list(few.columns) == ["group_id", "t", "advantage"]
    np.testing.assert_allclose(np.sort(few["advantage"]), values)


def test_a_verl_dump_reads_the_extra_when_there_is_one(tmp_path):
    plain = agent_loop_entries(3)
    write_verl_dump(tmp_path / "none", 3, plain)  # verl's v1 trainer: no extras at all
    assert "advantage" not in open_log(tmp_path / "none").load_step(3).columns
    for name in ("advantage", "advantages"):
        entries = [{**e, name: [0.0, i / 8, i / 8] if name == "advantages" else i / 8}
                   for i, e in enumerate(plain)]
        write_verl_dump(tmp_path / name, 3, entries)
        log = open_log(tmp_path / name)
        np.testing.assert_allclose(log.load_step(3)["advantage"], np.arange(len(plain)) / 8)
        few = dict(log.columns_of_steps([3], ["group_id", "advantage"]))[3]
        np.testing.assert_allclose(few["advantage"], np.arange(len(plain)) / 8)


def test_a_batch_dump_reduces_the_token_tensor_by_its_mask(tmp_path):
    columns = verl_agent_batch()
    n = len(columns["uid"])
    per_step = np.linspace(-1, 1, n)
    tokens = np.repeat(per_step[:, None], 4, axis=1)
    mask = np.ones((n, 4), dtype=np.int64)
    mask[:, 3] = 0
    tokens[:, 3] = 99.0  # what a padded position holds does not count
    path = tmp_path / "dump.pkl"
    path.write_bytes(pickle.dumps(FakeDataProto({"advantages": tokens, "response_mask": mask},
                                                columns, {"global_steps": 2})))
    steps = load_steps(path, trust_pickle=True)
    np.testing.assert_allclose(steps["advantage"], per_step)
