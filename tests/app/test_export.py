import io

import pandas as pd
import pytest

from app.export import guard_formulas, table_bytes


def test_csv_and_parquet_round_trip():
    frame = pd.DataFrame({"a": [1, 2], "text": ["<script>x</script>", "é,\"q\""]})
    assert pd.read_csv(io.BytesIO(table_bytes(frame, "csv"))).equals(frame)
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(table_bytes(frame, "parquet"))),
                                  frame, check_dtype=False)


def test_unknown_format():
    with pytest.raises(ValueError, match="csv, parquet"):
        table_bytes(pd.DataFrame(), "xlsx")


def test_csv_quotes_text_a_spreadsheet_would_run_as_a_formula():
    frame = pd.DataFrame({
        "step": [0, 1, 2, 3],
        "adv": [-1.5, 0.25, -0.0, 2.0],
        "observation": ['=HYPERLINK("http://evil","x")', "+cmd|' /C calc'!A0", "@SUM(1)",
                        "a normal page"],
        "action": ["-2+3", "go north", "\tclick", None],
    })
    back = pd.read_csv(io.BytesIO(table_bytes(frame, "csv")), keep_default_na=False)
    assert back["observation"].tolist() == ["'" + frame["observation"][0],
                                            "'" + frame["observation"][1], "'@SUM(1)",
                                            "a normal page"]
    assert back["action"].tolist() == ["'-2+3", "go north", "'\tclick", ""]
    assert back["adv"].tolist() == frame["adv"].tolist()  # negative numbers stay numbers
    assert back["step"].tolist() == [0, 1, 2, 3]
    raw = pd.read_csv(io.BytesIO(table_bytes(frame, "csv", guard=False)), keep_default_na=False)
    assert raw["observation"].tolist() == frame["observation"].tolist()
    kept = pd.read_parquet(io.BytesIO(table_bytes(frame, "parquet")))
    assert kept["observation"].tolist() == frame["observation"].tolist()


def test_the_guard_leaves_the_callers_frame_alone_and_quotes_risky_headers():
    frame = pd.DataFrame({"=x": ["=1"], "ok": pd.Series(["-y"], dtype=object)})
    guarded = guard_formulas(frame)
    assert list(guarded.columns) == ["'=x", "ok"]
    assert guarded.iloc[0].tolist() == ["'=1", "'-y"]
    assert frame.iloc[0].tolist() == ["=1", "-y"] and list(frame.columns) == ["=x", "ok"]


def test_metadata_travels_in_parquet_and_the_csv_sidecar():
    import json

    from app.export import export_metadata, metadata_bytes, read_parquet_metadata

    meta = export_metadata({"grpo": {}}, {"grpo": ["adv"]}, "exact", {"run": "<b>r</b>"})
    assert meta["estimators"] == [{"name": "grpo", "params": {"mode": "mean_std_norm"},
                                   "columns": ["adv"]}]
    frame = pd.DataFrame({"adv": [0.5]})
    assert read_parquet_metadata(table_bytes(frame, "parquet", metadata=meta)) == meta
    assert read_parquet_metadata(table_bytes(frame, "parquet")) is None
    assert json.loads(metadata_bytes(meta)) == meta
    assert table_bytes(frame, "csv", metadata=meta) == table_bytes(frame, "csv")


def test_the_apps_csv_of_text_with_a_bare_carriage_return_reads_back(tmp_path):
    """What the export page writes, our loaders read: a bare \\r in log text stays in its cell."""
    from loaders import load_steps
    from tests.loaders.builders import step_table

    frame = step_table()
    frame["action"] = [f"go\r{i}" if i % 2 else f"=cmd\r\n{i}" for i in range(len(frame))]
    (tmp_path / "e.csv").write_bytes(table_bytes(frame, "csv", guard=False))
    assert load_steps(tmp_path / "e.csv")["action"].tolist() == frame["action"].tolist()
    (tmp_path / "g.csv").write_bytes(table_bytes(frame, "csv"))
    guarded = load_steps(tmp_path / "g.csv")["action"].tolist()
    assert guarded == [a if a[0] != "=" else "'" + a for a in frame["action"]]
