import io
import json

import pandas as pd

import loaders
from app.export import table_bytes
from app.views.export import export_table, file_stem
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from tests.app.builders import XSS_IMG, app_test, write_cut_csv
from tests.loaders.builders import SYSTEM, agent_loop_entries, write_verl_dump


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
    table = export_table(steps, G2POParams(w=0.5), OutcomeRule(), ["grpo", "gigpo"])
    assert len(table) == len(steps)
    assert {"adv", "grpo_adv", "gigpo_adv"} <= set(table.columns)
    round_trip = pd.read_csv(io.BytesIO(table.to_csv(index=False).encode()))
    assert len(round_trip) == len(steps)


def test_file_names_never_carry_log_text():
    stem = file_stem("run", "step1", XSS_IMG + "/../x")
    assert stem and all(c.isalnum() or c in ".-" for c in stem)


def test_node_ids_match_the_graph_and_the_record_names_every_parameter(runs_root):
    from app.export import read_parquet_metadata, table_bytes
    from app.views.export import table_metadata
    from g2po.analysis.state_graph import state_graph

    log = loaders.open_log(runs_root / "run_a")
    group = log.groups(2)[1]
    steps = log.load_group(2, group)
    params, rule = G2POParams(gamma=0.9, state_key="normalized"), OutcomeRule()
    table = export_table(steps, params, rule, ["gigpo"])
    graph = state_graph(steps, rule=rule, params=params)
    assert table["node"].tolist() == graph.steps["node"].tolist()
    assert table["next_node"].tolist() == graph.steps["next_node"].tolist()
    added = [c for c in table.columns if c not in steps.columns]
    meta = table_metadata(params, rule, ["gigpo"], {"run": "run_a", "train_step": 2}, added)
    by_name = {e["name"]: e for e in meta["estimators"]}
    assert by_name["g2po"]["params"] == {"gamma": 0.9, "w": 1.0, "mode": "mean_std_norm",
                                         "penalty": 0.1, "success_reward": 10.0,
                                         "terminal": "binary", "success_threshold": None}
    assert {"node", "next_node", "adv", "td_error"} <= set(by_name["g2po"]["columns"])
    assert by_name["gigpo"]["params"]["omega"] == 1.0  # its own default, recorded too
    assert by_name["gigpo"]["params"]["gamma"] == 0.9  # the shared one from the sidebar
    assert by_name["gigpo"]["columns"] == ["gigpo_adv"]
    assert meta["state_key"] == "normalized" and meta["source"]["train_step"] == 2
    data = table_bytes(table, "parquet", metadata=meta)
    assert read_parquet_metadata(data) == meta
    assert pd.read_parquet(io.BytesIO(data))["node"].tolist() == table["node"].tolist()


def test_the_page_shows_the_record_and_offers_the_csv_sidecar(runs_root):
    at = app_test("export", ["--log", str(runs_root)])
    assert not at.exception
    assert {"node", "next_node"} <= set(at.dataframe[0].value.columns)
    labels = [b.label for b in at.get("download_button")]
    assert any("JSON sidecar" in label for label in labels)
    record = at.json[0].value
    record = json.loads(record) if isinstance(record, str) else record
    assert record["estimators"][0]["name"] == "g2po"
    assert record["source"]["group_id"] == at.selectbox(
        key=next(s.key for s in at.selectbox if s.key and s.key.startswith("group:"))).value
    at.radio(key="exp_fmt").set_value("parquet").run()
    assert not any("JSON sidecar" in b.label for b in at.get("download_button"))
    assert "g2po.export" in "\n".join(c.value for c in at.caption)


def test_the_table_marks_trajectories_cut_by_the_runs_rule_as_the_graph_does(tmp_path):
    from g2po.analysis.state_graph import state_graph
    from g2po.outcomes import OutcomeRule

    steps = loaders.open_log(write_cut_csv(tmp_path / "cut.csv")).load_step(0)
    ruled = OutcomeRule(truncate_at=6)
    plain = export_table(steps, G2POParams(), OutcomeRule(), [])
    table = export_table(steps, G2POParams(), ruled, [])
    graph = state_graph(steps, rule=ruled)
    assert table["truncated"].tolist() == graph.steps["truncated"].tolist()
    assert table.groupby("traj_id")["truncated"].first().sum() == 3 and \
        not plain["truncated"].any()
    assert table["next_node"].tolist() == graph.steps["next_node"].tolist()
    pd.testing.assert_series_equal(table["adv"], plain["adv"])  # valued as failure all the same


def test_a_verl_dumps_export_has_the_current_observation_beside_the_response(tmp_path):
    """The observation column is the text the state key came from, next to the response; the
    whole model input travels in its own column, nothing lost."""
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    steps = loaders.open_log(tmp_path / "d").load_step(1)
    data = table_bytes(export_table(steps, G2POParams(), OutcomeRule(), []), "csv")
    back = pd.read_csv(io.BytesIO(data), keep_default_na=False)
    columns = back.columns.tolist()
    assert columns.index("response") == columns.index("observation") + 1
    assert (back["observation"] == back["state_key"]).all()
    assert not back["observation"].str.contains(SYSTEM, regex=False).any()
    assert back["prompt"].str.startswith("system\n" + SYSTEM).all()
    assert sorted(back["prompt"]) == sorted(e["input"] for e in agent_loop_entries(1))
