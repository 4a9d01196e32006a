
import pandas as pd

from app.charts import (
    advantage_lines,
    correlation_heatmap,
    histogram,
    overview_figure,
    overview_runs,
)
from app.safe import escape_html
from g2po.analysis.compare import compare_estimators, rank_correlation
from g2po.outcomes import OutcomeRule
from tests.app.builders import XSS_IMG, group_steps, hostile


def test_overview_has_one_trace_per_run_in_the_order_clicks_name():
    summary = pd.DataFrame({"run": ["b", "a", "b", "a"], "train_step": [1, 1, 2, 2],
                            "success_rate": [0.1, 0.2, 0.3, float("nan")]})
    fig = overview_figure(summary, "success_rate")
    assert [t.name for t in fig.data] == overview_runs(summary, "success_rate") == ["a", "b"]
    assert list(fig.data[1].y) == [0.1, 0.3]


def test_hover_text_from_logs_is_escaped():
    steps = hostile(group_steps(rows=300))
    group = steps[steps["group_id"] == steps["group_id"].iloc[0]]
    result = compare_estimators(group, ["g2po", "grpo"], rule=OutcomeRule())
    fig = advantage_lines(result.table, result.estimators,
                          sorted(result.table["traj_id"].unique())[:3])
    dumped = fig.to_json()
    assert XSS_IMG not in dumped and "&lt;img" in dumped
    heat = correlation_heatmap(rank_correlation(result.table, result.estimators), "t")
    assert len(heat.data) == 1
    run_fig = overview_figure(pd.DataFrame({"run": [XSS_IMG], "train_step": [1],
                                            "mean_reward": [1.0]}), "mean_reward")
    assert run_fig.data[0].name.startswith("&lt;img")
    assert histogram(pd.Series([1.0, 2.0]), "t", "x").data


def test_trajectory_panels_take_their_titles_escaped():
    steps = hostile(group_steps(rows=300))
    group = steps[steps["group_id"] == steps["group_id"].iloc[0]]
    result = compare_estimators(group, ["grpo"], rule=OutcomeRule())
    ids = sorted(result.table["traj_id"].unique())[:3]
    assert XSS_IMG in ids
    titles = {t: f"{t} · success · {i + 2} steps" for i, t in enumerate(ids)}
    fig = advantage_lines(result.table, ["grpo"], ids, titles=titles)
    texts = [a.text for a in fig.layout.annotations]
    assert sorted(texts) == sorted(escape_html(v) for v in titles.values())
    assert XSS_IMG not in fig.to_json()


def test_run_colours_stay_when_runs_come_and_go():
    from app.charts import RUN_PALETTE, assign_run_colors

    first = assign_run_colors(["b"], {})
    both = assign_run_colors(["a", "b"], first)
    assert both["b"] == first["b"] and both["a"] != both["b"]
    # a new run's colour does not depend on the order runs are listed in
    names = [f"run-{i}" for i in range(6)]
    assert assign_run_colors(names, {}) == assign_run_colors(names[::-1], {})
    # a handful of runs open together never share a colour, until the palette runs out
    many = assign_run_colors([f"r{i}" for i in range(len(RUN_PALETTE) + 3)], {})
    assert len(set(many.values())) == len(RUN_PALETTE)
    # a new run takes a colour no open run holds, the least given so far
    used = {c: 5 for c in RUN_PALETTE}
    used[RUN_PALETTE[3]] = 0
    assert assign_run_colors(["new"], {}, used)["new"] == RUN_PALETTE[3]
    held = assign_run_colors(["old", "new"], {"old": RUN_PALETTE[3]}, used)
    assert held["old"] == RUN_PALETTE[3] and held["new"] != RUN_PALETTE[3]


def test_metric_figure_names_each_traces_run_and_escapes():
    from app.charts import history_figure, metric_figure
    from g2po.analysis.history import metric_series

    frames = {XSS_IMG: pd.DataFrame({"train_step": [1, 2], "m": [1.0, 2.0]}),
              "b": pd.DataFrame({"train_step": [1, 2], "m": [3.0, 4.0]})}
    series = metric_series(frames, ["m"], 0.5)
    colors = {XSS_IMG: "#000001", "b": "#000002"}
    fig, runs = metric_figure(series, "m", colors, smoothed=True)
    # band, raw then smoothed, per run ("<" < "b")
    assert runs == [XSS_IMG, XSS_IMG, XSS_IMG, "b", "b", "b"]
    lines = [t for t in fig.data if t.fill != "toself"]
    assert [t.line.color for t in lines] == ["#000001", "#000001", "#000002", "#000002"]
    band = fig.data[3]
    assert band.fill == "toself" and band.fillcolor == "rgba(0,0,2,0.15)"
    # from the largest raw value over the smoothing's reach (2 points at 0.5) back the smallest
    assert list(band.y) == [3.0, 4.0, 3.0, 3.0] and list(band.customdata) == [1, 2, 2, 1]
    assert XSS_IMG not in fig.to_json()
    raw, runs = metric_figure(series, "m", colors)
    assert runs == [XSS_IMG, "b"] and list(raw.data[1].y) == [3.0, 4.0]
    # the legend names the runs always, one entry each, even for a single run
    one, _ = metric_figure(series[series["run"] == "b"], "m", colors, smoothed=True)
    assert one.layout.showlegend and [t.name for t in one.data if t.showlegend] == ["b"]
    # against wall time: x from that column, each point's training step still in customdata
    timed = series.assign(wall=series["train_step"] * 60.0)
    fig, _ = metric_figure(timed, "m", colors, x="wall", x_title="wall time (s)")
    assert list(fig.data[1].x) == [60.0, 120.0] and list(fig.data[1].customdata) == [1, 2]
    assert fig.layout.xaxis.title.text == "wall time (s)"
    history = pd.DataFrame({"train_step": [1, 2], "visits": [3, 0], "value": [1.0, None]})
    assert len(history_figure(history, {"visits": "visits"}, "t", "bars").data) == 1
