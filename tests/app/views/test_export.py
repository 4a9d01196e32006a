import io

import pandas as pd

import loaders
from app.context import AppContext
from app.options import AppOptions
from app.params import SpecParams
from app.views.export import export_table, file_stem
from tests.app.builders import XSS_IMG, app_test


def test_export_page_offers_table_and_graph_downloads(runs_root):
    at = app_test("export", ["--log", str(runs_root)])
    assert not at.exception
    labels = [b.label for b in at.get("download_button")]
    assert any("advantage table (csv)" in label for label in labels)
    assert any("graph (HTML)" in label for label in labels)
    preview = at.dataframe[0].value
    assert {"adv", "adv_ep", "adv_nc", "adv_ec", "td_error"} <= set(preview.columns)
    assert at.checkbox(key="exp_guard").value  # CSV: formulas quoted unless unticked
    at.radio(key="exp_fmt").set_value("parquet").run()
    assert not [c for c in at.checkbox if c.key == "exp_guard"]
    at.radio(key="exp_scope").set_value(at.radio(key="exp_scope").options[1]).run()
    assert not at.exception
    assert any("(parquet)" in b.label for b in at.get("download_button"))


def test_export_table_adds_other_estimators(runs_root):
    steps = loaders.open_log(runs_root / "run_a").load_step(1)
    ctx = AppContext(options=AppOptions(), params=SpecParams(w=0.5))
    table = export_table(steps, ctx, ["grpo", "gigpo"])
    assert len(table) == len(steps)
    assert {"adv", "grpo_adv", "gigpo_adv"} <= set(table.columns)
    round_trip = pd.read_csv(io.BytesIO(table.to_csv(index=False).encode()))
    assert len(round_trip) == len(steps)


def test_file_names_never_carry_log_text():
    stem = file_stem("run", "step1", XSS_IMG + "/../x")
    assert stem and all(c.isalnum() or c in ".-" for c in stem)
