"""Generic CSV / JSONL / Parquet tables with a column mapping, and their bad inputs."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2po.errors import StepTableError
from loaders import LoadWarning, LogFormatError, detect_format, load_steps, open_log, report_of
from loaders.lines import MALFORMED
from tests.loaders.builders import step_table

# The same table under the column names of a verl-agent-style export.
RENAMED = {"group_id": "task", "traj_id": "rollout", "t": "turn", "state_key": "obs",
           "action": "act", "episode_reward": "R", "is_action_valid": "ok"}


def _write(frame: pd.DataFrame, path) -> None:
    if path.suffix == ".csv":  # quoted: pandas leaves a bare "\r" unquoted, then misreads it
        frame.to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    else:
        frame.to_parquet(path, index=False)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_plain_step_tables(tmp_path, suffix):
    steps = step_table(train_step=3)
    path = tmp_path / f"steps{suffix}"
    _write(steps, path)
    assert detect_format(path) == suffix[1:]
    loaded = load_steps(path)
    pd.testing.assert_frame_equal(loaded[steps.columns], steps, check_dtype=False)
    assert report_of(loaded).format == suffix[1:]
    log = open_log(path)
    assert log.train_steps() == [3] and log.groups(3) == ["g0", "g1"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_mapping_from_dict_pairs_and_yaml(tmp_path, suffix):
    steps = step_table()
    path = tmp_path / f"renamed{suffix}"
    _write(steps.rename(columns=RENAMED), path)
    by_dict = load_steps(path, mapping=RENAMED)
    pairs = [f"{k}={v}" for k, v in RENAMED.items()]
    by_pairs = load_steps(path, mapping=pairs)
    yaml_file = tmp_path / "mapping.yaml"
    yaml_file.write_text("".join(f"{k}: {v}\n" for k, v in RENAMED.items()))
    by_yaml = load_steps(path, mapping=yaml_file)
    for loaded in (by_dict, by_pairs, by_yaml):
        pd.testing.assert_frame_equal(loaded[steps.columns], steps, check_dtype=False)


def test_verl_agent_names_are_recognised(tmp_path):
    steps = step_table().rename(columns={"group_id": "uid", "traj_id": "traj_uid",
                                         "state_key": "anchor_obs",
                                         "episode_reward": "episode_rewards"})
    steps.to_parquet(tmp_path / "batch.parquet")
    loaded = load_steps(tmp_path / "batch.parquet")
    assert loaded["group_id"].tolist() == steps["uid"].tolist()
    assert any("group_id read from column 'uid'" in n for n in report_of(loaded).notes)


def test_ids_keep_leading_zeros_in_csv(tmp_path):
    steps = step_table()
    steps["group_id"] = steps["group_id"].map({"g0": "007", "g1": "010"})
    steps.to_csv(tmp_path / "s.csv", index=False)
    assert set(load_steps(tmp_path / "s.csv")["group_id"]) == {"007", "010"}


def test_is_action_valid_defaults_to_true_and_says_so(tmp_path):
    step_table().drop(columns="is_action_valid").to_csv(tmp_path / "s.csv", index=False)
    loaded = load_steps(tmp_path / "s.csv")
    assert loaded["is_action_valid"].all()
    assert any("is_action_valid absent" in n for n in report_of(loaded).notes)
    # the assumption is named by its column, for the app to mark what rests on it
    assert set(report_of(loaded).assumed) == {"is_action_valid"}
    assert report_of(load_steps(tmp_path / "s.csv")).assumed == report_of(loaded).assumed
    step_table().to_csv(tmp_path / "valid.csv", index=False)
    assert report_of(load_steps(tmp_path / "valid.csv")).assumed == {}


def test_missing_required_field_names_field_and_format(tmp_path):
    step_table().drop(columns=["traj_id", "state_key"]).to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(LogFormatError) as err:
        load_steps(tmp_path / "s.csv")
    message = str(err.value)
    assert "missing required column(s): 'traj_id', 'state_key'" in message
    assert "a step table needs the columns group_id, traj_id, t" in message
    assert "--map" in message and "Columns found: group_id" in message


def test_mapping_errors(tmp_path):
    step_table().to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(LogFormatError, match="mapped column\\(s\\) 'uid' not in the file"):
        load_steps(tmp_path / "s.csv", mapping={"group_id": "uid"})
    with pytest.raises(ValueError, match="unknown step-table column\\(s\\) 'grup_id'"):
        load_steps(tmp_path / "s.csv", mapping={"grup_id": "group_id"})
    with pytest.raises(ValueError, match="expects STEP_COLUMN=SOURCE_COLUMN"):
        load_steps(tmp_path / "s.csv", mapping=["group_id"])
    (tmp_path / "m.yaml").write_text("group_id: [uid\n")
    with pytest.raises(ValueError, match="m.yaml: cannot read the mapping"):
        load_steps(tmp_path / "s.csv", mapping=tmp_path / "m.yaml")


def test_a_step_column_an_estimator_declares_can_be_mapped(tmp_path):
    """The loaders take the columns estimators declare from the registry: ``--map`` feeds one,
    the suggestions find it by name, and the estimator reads it."""
    from g2po.estimators import StepColumn, compute_advantages, register_estimator, registry
    from loaders.columns import suggest_mapping

    @register_estimator("test_mapped_est", overwrite=True,
                        columns=(StepColumn("test_mapped_flag", "bool", "a flag"),))
    def test_mapped_est(ix):
        return {"adv": ix.columns["test_mapped_flag"].astype(float)}

    try:
        table = step_table()
        table.assign(raw_flag=np.arange(len(table)) % 2 == 0).to_csv(tmp_path / "s.csv",
                                                                     index=False)
        steps = load_steps(tmp_path / "s.csv", mapping=["test_mapped_flag=raw_flag"])
        out = compute_advantages(steps, "test_mapped_est")
        assert out["adv"].tolist() == [float(i % 2 == 0) for i in range(len(table))]
        assert suggest_mapping(["test_mapped_flag", "uid"])["test_mapped_flag"] == \
            "test_mapped_flag"
    finally:
        registry._REGISTRY.pop("test_mapped_est", None)
    with pytest.raises(ValueError, match="unknown step-table column\\(s\\) 'test_mapped_flag'"):
        load_steps(tmp_path / "s.csv", mapping=["test_mapped_flag=raw_flag"])


def test_jsonl_truncated_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "s.jsonl"
    step_table().to_json(path, orient="records", lines=True)
    text = path.read_text()
    path.write_text(text + '{"group_id": "g9", "traj_id": "r')
    with pytest.warns(LoadWarning, match="truncated last line"):
        loaded = load_steps(path)
    assert len(loaded) == len(step_table())
    assert report_of(loaded).n_skipped == 1


def test_csv_truncated_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "s.csv"
    step_table().to_csv(path, index=False)
    path.write_text(path.read_text() + "g9,r1,0,room")
    with pytest.warns(LoadWarning, match="truncated last line"):
        loaded = load_steps(path)
    assert len(loaded) == len(step_table())
    n_lines = len(step_table()) + 2
    assert report_of(loaded).skips[
        "truncated last line (a file still being written)"].where == [f"{path}:{n_lines}"]


def _two_trajectories() -> pd.DataFrame:
    """g/a with turns 0-2, then g/b with turns 0-1: one line each, in that order."""
    return pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "a", "b", "b"],
                         "t": [0, 1, 2, 0, 1], "state_key": ["s0", "s1", "s2", "s0", "s3"],
                         "action": "go", "episode_reward": [1.0] * 3 + [0.0] * 2,
                         "is_action_valid": True})


@pytest.mark.parametrize("bad", ['{"group_id": oops}', "[1, 2]"])
def test_a_malformed_json_line_costs_that_line_and_marks_its_trajectory(tmp_path, bad):
    path = tmp_path / "s.jsonl"
    _two_trajectories().to_json(path, orient="records", lines=True)
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = bad + "\n"  # a's turn 1
    lines[3] = "{" + "\n"  # b's turn 0
    path.write_text("".join(lines))
    with pytest.warns(LoadWarning, match=r"s\.jsonl:2"):
        steps = load_steps(path)
    assert steps["traj_id"].tolist() == ["a", "a", "b"]
    assert steps["t"].tolist() == [0, 2, 1]  # the t the log gave them: nothing renumbered
    assert steps["incomplete"].tolist() == [True, True, True]
    report = report_of(steps)
    assert report.skips[MALFORMED].where == [f"{path}:2", f"{path}:4"]
    (note,) = [n for n in report.notes if "malformed" in n]
    assert "line 2: trajectory 'a' of group 'g' (between two of its turns)" in note
    assert "line 4: trajectory 'b' of group 'g' (before its first turn left" in note
    with pytest.raises(LogFormatError, match=r"s\.jsonl:2: (malformed JSON line|expected one)"):
        load_steps(path, strict=True)


def test_a_csv_record_with_another_number_of_fields_costs_that_line(tmp_path):
    path = tmp_path / "s.csv"
    _two_trajectories().to_csv(path, index=False)
    rows = path.read_text().splitlines(keepends=True)
    rows[4] = rows[4].rstrip("\n") + ",extra,fields\n"  # b's turn 0, line 5
    rows[2] = ",".join(rows[2].split(",")[:3]) + "\n"  # a's turn 1, cut short, line 3
    path.write_text("".join(rows))
    with pytest.warns(LoadWarning, match=r"s\.csv:3"):
        steps = load_steps(path)
    assert steps["t"].tolist() == [0, 2, 1]
    assert steps["incomplete"].all()
    assert report_of(steps).skips[MALFORMED].where == [f"{path}:3", f"{path}:5"]
    with pytest.raises(LogFormatError, match=r"s\.csv:3: malformed CSV record: 3 field\(s\), "
                                             r"the header names 7"):
        load_steps(path, strict=True)


def test_a_csv_quote_never_closed_is_an_error(tmp_path):
    path = tmp_path / "s.csv"
    text = _two_trajectories().to_csv(index=False)
    path.write_text(text.replace("s1", '"s1', 1))
    with pytest.raises(LogFormatError, match=r"s\.csv:3: a quoted field opened on this line "
                                             "is never closed"):
        load_steps(path)


def test_a_gap_in_t_without_a_skipped_line_stays_an_error(tmp_path):
    path = tmp_path / "s.csv"
    _two_trajectories().drop(index=1).to_csv(path, index=False)
    with pytest.raises(StepTableError, match="skips a step index"):
        load_steps(path)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_non_utf8_bytes_are_replaced_and_reported(tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    _write(step_table(), path)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"room 1", b"room \xff1", 1))
    loaded = load_steps(path)
    assert loaded["state_key"].str.contains("\ufffd").sum() == 1
    notes = report_of(loaded).notes
    assert any("invalid UTF-8" in n and "byte 0xff" in n for n in notes)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_rewards_name_the_rows(tmp_path, suffix, bad):
    steps = step_table()
    steps["episode_reward"] = steps["episode_reward"].where(steps["traj_id"] != "r1", bad)
    path = tmp_path / f"s{suffix}"
    _write(steps, path)
    with pytest.raises(StepTableError, match="episode_reward") as err:
        load_steps(path)
    label = "row" if suffix == ".parquet" else "line"
    assert f"rows named by {label} number" in str(err.value)
    first_bad = int(np.flatnonzero(steps["traj_id"] == "r1")[0])
    expected = first_bad if suffix == ".parquet" else first_bad + (2 if suffix == ".csv" else 1)
    assert f": {expected}" in str(err.value)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_empty_files(tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    if suffix == ".parquet":
        step_table().iloc[:0].to_parquet(path)
    else:
        path.write_bytes(b"")
    with pytest.raises(LogFormatError, match="empty|no rows"):
        load_steps(path)


def test_header_only_csv(tmp_path):
    (tmp_path / "s.csv").write_text("group_id,traj_id,t\n")
    with pytest.raises(LogFormatError, match="a header but no rows"):
        load_steps(tmp_path / "s.csv")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_duplicated_rows(tmp_path, suffix):
    steps = step_table()
    path = tmp_path / f"s{suffix}"
    _write(pd.concat([steps, steps.iloc[[0, 2]]], ignore_index=True), path)
    with pytest.warns(LoadWarning, match="exact duplicate"):
        loaded = load_steps(path)
    assert len(loaded) == len(steps)
    assert report_of(loaded).n_skipped == 2

    clash = steps.iloc[[0]].assign(action="something else")
    _write(pd.concat([steps, clash], ignore_index=True), path)
    with pytest.raises(LogFormatError, match="hold the same step .*with different content"):
        load_steps(path)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_one_megabyte_observations(tmp_path, suffix):
    steps = step_table(groups=1, trajs=2)
    steps["observation"] = "o" * (1 << 20)
    steps["state_key"] = steps["state_key"] + "|" + "s" * (1 << 20)
    path = tmp_path / f"s{suffix}"
    _write(steps, path)
    loaded = load_steps(path)
    assert loaded["observation"].str.len().min() == 1 << 20
    assert loaded["state_key"].str.len().min() > 1 << 20


_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_text, min_size=1, max_size=6), action=_text)
def test_unicode_round_trips_through_every_table_format(tmp_path, keys, action):
    """Any text a log can hold (outside control characters and surrogates) comes back as is."""
    steps = pd.DataFrame({"group_id": "g", "traj_id": "r", "t": range(len(keys)),
                          "state_key": keys, "action": action, "episode_reward": 1.0,
                          "is_action_valid": True})
    for suffix in (".csv", ".jsonl", ".parquet"):
        path = tmp_path / f"u{suffix}"
        _write(steps, path)
        loaded = load_steps(path)
        assert loaded["state_key"].tolist() == keys, suffix
        assert set(loaded["action"]) == {action}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_text_that_looks_missing_stays_text(tmp_path, suffix):
    steps = step_table(groups=1, trajs=1, length=1)
    steps = pd.concat([steps] * 4, ignore_index=True).assign(t=range(4))
    steps["state_key"] = ["NA", "None", "nan", "null"]
    steps["action"] = "None"
    path = tmp_path / f"s{suffix}"
    _write(steps, path)
    loaded = load_steps(path)
    assert loaded["state_key"].tolist() == ["NA", "None", "nan", "null"]
    assert set(loaded["action"]) == {"None"}


def test_empty_text_cell_in_csv_is_missing(tmp_path):
    (tmp_path / "s.csv").write_text("group_id,traj_id,t,state_key,action,episode_reward\n"
                                    "g,r,0,,look,1.0\n")
    with pytest.raises(StepTableError, match="'state_key' has null/NaN values in 1 row\\(s\\): 2"):
        load_steps(tmp_path / "s.csv")


def test_jsonl_extra_columns_and_blank_lines(tmp_path):
    path = tmp_path / "s.jsonl"
    rows = step_table().assign(note="hi").to_dict("records")
    path.write_text("\n".join(json.dumps(r) for r in rows[:3]) + "\n\n"
                    + "\n".join(json.dumps(r) for r in rows[3:]) + "\n")
    loaded = load_steps(path)
    assert len(loaded) == len(rows) and (loaded["note"] == "hi").all()


def test_report_on_the_frame_is_plain_data(tmp_path):
    """pandas writes attrs into Parquet and copies them on every operation: plain data only."""
    path = tmp_path / "s.jsonl"
    step_table().to_json(path, orient="records", lines=True)
    path.write_text(path.read_text() + '{"group_id": ')
    with pytest.warns(LoadWarning):
        loaded = load_steps(path)
    loaded.to_parquet(tmp_path / "out.parquet")
    assert report_of(pd.read_parquet(tmp_path / "out.parquet")).n_skipped == 1
    assert report_of(loaded.iloc[:2]).n_skipped == 1


def test_columns_found_are_only_the_files_columns(tmp_path):
    frame = step_table().drop(columns=["is_action_valid", "state_key"]).rename(
        columns={"group_id": "uid"})
    frame.to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(LogFormatError) as err:
        load_steps(tmp_path / "s.csv")
    found = str(err.value).split("Columns found: ")[1]
    assert found.split(", ") == list(frame.columns)  # not group_id (alias), is_action_valid


def test_our_csv_of_text_with_a_bare_carriage_return_reads_back(tmp_path):
    from loaders.tables import write_csv

    frame = step_table()
    frame["action"] = [f"go\r{i}" if i % 2 else f'say "x",\n{i}' for i in range(len(frame))]
    write_csv(frame, tmp_path / "s.csv")
    back = load_steps(tmp_path / "s.csv")
    assert back["action"].tolist() == frame["action"].tolist()
    assert back["t"].tolist() == frame["t"].tolist()


@pytest.mark.parametrize(("text", "match"), [
    ("group_id,traj_id\r,t,state_key,action,episode_reward\ng,r,0,s,a,1\n",
     r"s.csv:1: the header holds a bare carriage return"),
    ("group_id,traj_id,t,state_key,action,episode_reward,action\ng,r,0,s,a,1,b\n",
     r"s.csv:1: column name\(s\) 'action' appear more than once"),
    ("group_id,traj_id,t,state_key,action,episode_reward\ng,r,0,s,a,1,x,y\ng,r,1,s,a,1,x,y\n",
     r"s.csv: no record has the 6 field\(s\) the header names"),
])
def test_broken_csv_headers_and_rows_are_named(tmp_path, text, match):
    (tmp_path / "s.csv").write_bytes(text.encode())
    with pytest.raises(LogFormatError, match=match):
        load_steps(tmp_path / "s.csv")


def test_parquet_binary_text_and_duplicate_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(step_table(), preserve_index=False)
    i = table.schema.get_field_index("action")
    utf8 = table.set_column(i, "action", pa.array([b"go"] * len(table), pa.binary()))
    pq.write_table(utf8, tmp_path / "ok.parquet")
    steps = load_steps(tmp_path / "ok.parquet")
    assert set(steps["action"]) == {"go"}
    assert any("stored as binary" in n for n in report_of(steps).notes)
    bad = table.set_column(i, "action", pa.array([b"go"] * 3 + [b"\xff"] * (len(table) - 3)))
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(LogFormatError, match=r"bad.parquet row 3: column 'action' holds bytes"):
        load_steps(tmp_path / "bad.parquet")
    twice = pa.Table.from_arrays([*table.columns, table.column("t")],
                                 names=[*table.column_names, "t"])
    pq.write_table(twice, tmp_path / "twice.parquet")
    with pytest.raises(LogFormatError, match=r"twice.parquet: column name\(s\) 't' appear"):
        load_steps(tmp_path / "twice.parquet")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_is_action_valid_must_be_zero_or_one(tmp_path, suffix):
    _write(step_table().assign(is_action_valid=2.5), tmp_path / f"s{suffix}")
    with pytest.raises(StepTableError, match="'is_action_valid' is not boolean"):
        load_steps(tmp_path / f"s{suffix}")


def test_a_skipped_line_beside_ids_that_are_no_text_leaves_the_check_to_name_them(tmp_path):
    path = tmp_path / "s.jsonl"
    rows = _two_trajectories().to_dict("records")
    rows[0]["group_id"] = ["not", "text"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]) + "{oops\n"
                    + "".join(json.dumps(r) + "\n" for r in rows[2:]))
    with pytest.raises(StepTableError, match="group_id"):
        load_steps(path)
