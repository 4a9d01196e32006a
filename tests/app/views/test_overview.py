import pandas as pd

from app.views.overview import AUTO_MERGE_RATE_ROWS, merge_rate_column
from tests.app.builders import app_test, texts


def charts(at):
    return at.get("plotly_chart")


def test_overview_charts_every_metric_of_every_run(runs_root):
    at = app_test("overview", ["--log", str(runs_root)])
    assert not at.exception
    assert at.title[0].value == "Run overview"
    assert len(charts(at)) == 5  # reward, success, length, invalid, merge rate
    table = next(d.value for d in at.dataframe if "merge_rate" in d.value.columns)
    assert set(table["run"]) == {"run_a", "run_b"}
    assert len(table) == 3 + 2
    assert table["merge_rate"].between(0, 1).all()
    assert "2 run(s)" in texts(at)


def test_choosing_a_step_opens_it_in_the_group_explorer(runs_root):
    at = app_test("overview", ["--log", str(runs_root)])
    at.selectbox(key="ov_step").select(2).run()
    at.button(key="ov_go").click().run()
    assert not at.exception
    assert at.title[0].value == "Group explorer"
    run_key = f"auto:{(runs_root / 'run_a').resolve()}"
    assert at.selectbox(key=f"train_step:{run_key}").value == 2


def test_only_one_run_shown_when_one_is_chosen(runs_root):
    at = app_test("overview", ["--log", str(runs_root)])
    at.multiselect(key="runs").unselect("run_b").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "merge_rate" in d.value.columns)
    assert set(table["run"]) == {"run_a"}


def test_logged_merge_rate_wins_and_big_runs_ask_first():
    metrics = pd.DataFrame({"train_step": [1], "g2po/merge_rate": [0.3]})
    assert merge_rate_column(metrics) == "g2po/merge_rate"
    assert merge_rate_column(pd.DataFrame({"train_step": [1]})) is None
    assert AUTO_MERGE_RATE_ROWS >= 100_000


def test_a_run_keeps_its_colour_when_another_is_added(runs_root):
    at = app_test("overview", ["--log", str(runs_root)])
    at.multiselect(key="runs").set_value(["run_b"]).run()
    alone = at.get("plotly_chart")[0].proto.spec
    at.multiselect(key="runs").set_value(["run_a", "run_b"]).run()
    both = at.get("plotly_chart")[0].proto.spec
    colour_b = at.session_state["_g2po_run_colors"][f"auto:{(runs_root / 'run_b').resolve()}"]
    assert f'"{colour_b}"' in alone and f'"{colour_b}"' in both
    colour_a = at.session_state["_g2po_run_colors"][f"auto:{(runs_root / 'run_a').resolve()}"]
    assert colour_a != colour_b and f'"{colour_a}"' in both and f'"{colour_a}"' not in alone
