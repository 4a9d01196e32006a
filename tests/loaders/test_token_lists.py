"""Per-token step columns as each log holds them: a batch dump's padded tensors cut to each
response, lists in JSON lines and Parquet, JSON lists in CSV text; malformed lists named by
file, line and column."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from g2po.errors import StepTableError
from loaders import load_steps, report_of, write_csv
from loaders.errors import LogFormatError
from loaders.token_lists import batch_token_lists
from tests.app.builders import token_steps
from tests.loaders.test_pickles import FakeDataProto, verl_agent_batch


def padded_batch() -> tuple[FakeDataProto, list[int]]:
    """A verl-agent batch with per-token tensors padded to 6 tokens; each row's response
    length, and a masked span (a tool's output) inside the first row's response."""
    columns = verl_agent_batch()
    n = len(columns["uid"])
    lengths = [3 + i % 3 for i in range(n)]
    width = 6
    attention = np.zeros((n, 4 + width), dtype=np.int64)
    attention[:, :4] = 1  # the prompt
    for i, k in enumerate(lengths):
        attention[i, 4:4 + k] = 1
    response = attention[:, 4:].copy()
    response[0, 1] = 0  # inside the first response: not the model's
    logp = -np.arange(n * width, dtype=np.float32).reshape(n, width) / 10
    logp[0, 1] = -55.0  # its fake gap
    batch = {"responses": np.arange(n * width).reshape(n, width),
             "attention_mask": attention, "response_mask": response,
             "old_log_probs": logp, "entropys": np.ones((n, width), dtype=np.float32)}
    return FakeDataProto(batch, columns, {"global_steps": 3}), lengths


def test_a_batch_dumps_tensors_become_per_token_lists_cut_to_each_response(tmp_path):
    proto, lengths = padded_batch()
    path = tmp_path / "batch.pkl"
    path.write_bytes(pickle.dumps(proto))
    steps = load_steps(path, trust_pickle=True)
    assert [len(x) for x in steps["token_ids"]] == lengths
    assert steps["token_ids"][1].tolist() == [6, 7, 8, 9]
    assert steps["loss_mask"][0].tolist() == [True, False, True]
    np.testing.assert_allclose(steps["token_logprobs"][0], [0.0, -55.0, -0.2], atol=1e-6)
    assert [len(x) for x in steps["token_entropy"]] == lengths
    notes = report_of(steps).notes
    assert "token_logprobs read from column 'old_log_probs'" in notes
    assert "loss_mask read from column 'response_mask'" in notes


def test_without_an_attention_mask_the_response_ends_at_its_last_kept_token():
    mask = np.array([[1, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    out = batch_token_lists({"responses": np.arange(12).reshape(3, 4),
                             "response_mask": mask}, "b.pkl")
    assert [x.tolist() for x in out["token_ids"]] == [[0, 1, 2], [4, 5, 6, 7], []]
    with pytest.raises(LogFormatError, match=r"b\.pkl: per-token tensors differ in width "
                                             r"from the response's 4 tokens: old_log_probs 3"):
        batch_token_lists({"responses": np.zeros((3, 4)),
                           "old_log_probs": np.zeros((3, 3))}, "b.pkl")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_tables_carry_per_token_lists(tmp_path, suffix):
    table = token_steps()
    path = tmp_path / f"steps{suffix}"
    if suffix == ".jsonl":
        table.to_json(path, orient="records", lines=True)
    elif suffix == ".parquet":
        table.to_parquet(path)
    else:  # lists as JSON text, as the app's export and g2po's CSVs write them
        write_csv(table, path)
    steps = load_steps(path)
    for column in ("tokens", "loss_mask"):
        assert [list(x) for x in steps[column]] == table[column].tolist(), column
    for column in ("token_logprobs", "token_entropy"):  # JSON writes 10 digits
        np.testing.assert_allclose(np.concatenate(steps[column].map(list).tolist()),
                                   np.concatenate(table[column].tolist()), atol=1e-9)
    if suffix == ".csv":
        assert any("read from JSON lists in text" in n for n in report_of(steps).notes)


def test_malformed_lists_name_the_file_line_and_column(tmp_path):
    table = token_steps()
    table.at[2, "token_logprobs"] = table.at[2, "token_logprobs"][:-1]  # one short
    path = tmp_path / "steps.jsonl"
    table.to_json(path, orient="records", lines=True)
    with pytest.raises(StepTableError, match=r"steps\.jsonl \(rows named by line number\)"
                       ) as err:
        load_steps(path)
    (problem,) = err.value.problems
    assert problem.startswith("per-token columns differ in length") and problem.endswith(
        "in 1 row(s): 3")  # line 3 of the file
    table = token_steps()
    table["token_entropy"] = table["token_entropy"].map(json.dumps)
    table.at[0, "token_entropy"] = "[0.1, oops]"
    path = tmp_path / "steps.csv"
    table.to_csv(path, index=False)
    with pytest.raises(StepTableError, match=r"column 'token_entropy' holds no list .* in 1 "
                                             r"row\(s\): 2"):
        load_steps(path)  # CSV line 2: the first row under the header


def test_a_table_without_per_token_columns_is_unchanged(tmp_path):
    path = tmp_path / "plain.jsonl"
    token_steps().drop(columns=["tokens", "token_logprobs", "token_entropy", "loss_mask"]) \
        .to_json(path, orient="records", lines=True)
    steps = load_steps(path)
    assert not {"tokens", "token_logprobs", "loss_mask"} & set(steps.columns)
    assert isinstance(steps, pd.DataFrame) and len(steps) == len(token_steps())
