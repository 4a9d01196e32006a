import json

import pandas as pd

from app.views.overview import merge_rate_column
from tests.app.builders import app_test, shown, texts


def charts(at):
    """The per-metric charts (not the alarm shares' chart below them)."""
    return [c for c in at.get("plotly_chart") if c.key != "ov_alarm_shares_chart"]


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
    # the active run's alarm shares, a plotly chart as every other (one chart library loads)
    shares = [c for c in at.get("plotly_chart") if c.key == "ov_alarm_shares_chart"]
    spec = json.loads(shares[0].proto.spec)
    assert spec["layout"]["yaxis"]["tickformat"] == ".0%"
    assert {"no signal (G2PO)", "no signal (GRPO)"} <= {t["name"] for t in spec["data"]}


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


def test_logged_merge_rate_wins():
    metrics = pd.DataFrame({"train_step": [1], "g2po/merge_rate": [0.3]})
    assert merge_rate_column(metrics) == "g2po/merge_rate"
    assert merge_rate_column(pd.DataFrame({"train_step": [1]})) is None


def test_a_dumps_merge_rate_is_shown_at_once_and_after_a_restart_from_its_cache(tmp_path):
    """No box to tick, whatever the run's size: a verl dump's merge rate comes with its
    summary; after a restart it is the summary cache's (shown by swapping in other content
    of the same size, time put back: the page still shows the counted rates)."""
    import os
    import re

    import streamlit as st

    import loaders
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    dump = tmp_path / "rollout_data"
    for step in (1, 2):
        write_verl_dump(dump, step, agent_loop_entries(step, prompts=3, sessions=3, turns=4))
    expected = loaders.Log.merge_rates(loaders.open_log(dump))  # the rows read in full

    def shown_rates(at):
        assert not at.exception
        assert "ov_compute_merge" not in [c.key for c in at.checkbox]  # nothing to ask
        assert "ov_merge_rate" in [c.key for c in charts(at)]
        table = next(d.value for d in at.dataframe if "merge_rate" in d.value.columns)
        return table["merge_rate"].tolist()

    assert shown_rates(app_test("overview", ["--log", str(dump)])) \
        == expected["merge_rate"].tolist()
    path = dump / "1.jsonl"
    stat = path.stat()
    path.write_text(re.sub(r"You are in room \d\.", "You are in room 0.", path.read_text()))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    st.cache_data.clear()
    st.cache_resource.clear()  # a new server: only the caches on disk remain
    assert shown_rates(app_test("overview", ["--log", str(dump)])) \
        == expected["merge_rate"].tolist()


def test_a_run_keeps_its_colour_when_another_is_added(runs_root):
    at = app_test("overview", ["--log", str(runs_root)])
    at.multiselect(key="runs").set_value(["run_b"]).run()
    alone = at.get("plotly_chart")[0].proto.spec
    at.multiselect(key="runs").set_value(["run_a", "run_b"]).run()
    both = at.get("plotly_chart")[0].proto.spec
    colour_b = at.session_state["_g2po_run_colors"][str((runs_root / "run_b").resolve())]
    assert f'"{colour_b}"' in alone and f'"{colour_b}"' in both
    colour_a = at.session_state["_g2po_run_colors"][str((runs_root / "run_a").resolve())]
    assert colour_a != colour_b and f'"{colour_a}"' in both and f'"{colour_a}"' not in alone


def test_a_run_keeps_its_colour_after_a_restart_with_a_run_that_sorts_first(runs_root):
    """The issue's case: run_b alone, then the app started again with run_a too."""
    import streamlit as st

    import app.run_colors

    first = app_test("overview", ["--log", str(runs_root / "run_b")])
    colour_b = first.session_state["_g2po_run_colors"][str((runs_root / "run_b").resolve())]
    st.cache_data.clear()
    st.cache_resource.clear()
    app.run_colors._DEFAULT.clear()  # a new server: only the registry on disk remains
    again = app_test("overview", ["--log", str(runs_root)])
    colours = again.session_state["_g2po_run_colors"]
    assert colours[str((runs_root / "run_b").resolve())] == colour_b
    assert colours[str((runs_root / "run_a").resolve())] != colour_b
    spec = again.get("plotly_chart")[0].proto.spec
    assert f'"{colour_b}"' in spec


def test_a_dump_without_validity_shows_the_invalid_rate_as_unknown(runs_root, tmp_path):
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    dump = tmp_path / "rollout_data"
    for step in (1, 2):
        write_verl_dump(dump, step, agent_loop_entries(step))
    at = app_test("overview", ["--log", str(dump)])
    assert not at.exception
    assert [m.label for m in at.metric] == ["Invalid-action rate"]
    assert at.metric[0].value == "unknown"
    assert "ov_invalid_rate" not in [c.key for c in charts(at)]  # no chart of zeros
    assert len(charts(at)) == 4  # reward, success rate, length, merge rate
    why = [shown(c.value) for c in at.caption if "assumed valid" in c.value]
    assert len(why) == 1 and why[0].startswith("rollout_data: is_action_valid absent")
    table = next(d.value for d in at.dataframe if "invalid_rate" in d.value.columns)
    assert table["invalid_rate"].isna().all()
    # beside a run that knows its invalid actions: that run's chart, the dump named unknown
    both = app_test("overview", ["--log", str(runs_root / "run_a"), "--log", str(dump)])
    assert not both.exception
    assert not both.metric and len(charts(both)) == 5
    assert any("assumed valid" in c.value for c in both.caption)
