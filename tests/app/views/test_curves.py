import base64
import json

import numpy as np
import pandas as pd
import pytest

from app.charts import RUN_PALETTE
from app.views.curves import default_metrics
from tests.app.builders import app_test, texts
from tests.app.views.conftest import assert_no_markup_from_logs


def charts(at):
    return at.get("plotly_chart")


def array(value) -> np.ndarray:
    """A plotly JSON array: a list, or numpy's bytes in base64 (``{"dtype", "bdata"}``)."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value)


def titles(at) -> list[str]:
    """The charts' titles (their metrics), in page order."""
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts(at)]


def test_every_scalar_is_offered_grouped_and_charted_per_run(training_runs):
    at = app_test("curves", ["--log", str(training_runs)])
    assert not at.exception
    assert at.title[0].value == "Training curves"
    options = at.multiselect(key="cv_metrics").options
    assert {"actor/pg_loss", "actor/kl_loss", "adv/ec/std", "timing_s/update",
            "val-core/textworld/acc", "lr", "rollout/success_rate"} <= set(options)
    assert "note" not in options and "train_step" not in options
    assert options.index("actor/kl_loss") < options.index("adv/ec/std") < options.index("lr")
    chosen = at.multiselect(key="cv_metrics").value
    assert chosen == ["rollout/success_rate", "actor/pg_loss", "actor/kl_loss"]
    assert len(charts(at)) == 3
    # one grid, no row per namespace: a namespace's charts side by side, in namespace order
    assert titles(at) == ["actor/pg_loss", "actor/kl_loss", "rollout/success_rate"]
    assert not at.subheader
    values = at.dataframe[0].value
    assert set(values["run"]) == {"train_a", "train_b"}
    assert "namespaces" in texts(at)


def test_runs_keep_their_colours_and_smoothing_adds_raw_traces(training_runs):
    at = app_test("curves", ["--log", str(training_runs)])
    at.multiselect(key="cv_metrics").set_value(["actor/pg_loss"]).run()
    fig = charts(at)[0].proto.spec
    colours = at.session_state["_g2po_run_colors"]
    a, b = (colours[str((training_runs / n).resolve())] for n in ("train_a", "train_b"))
    assert a != b and f'"{a}"' in fig and f'"{b}"' in fig
    at.multiselect(key="runs").unselect("train_a").run()
    fig = charts(at)[0].proto.spec
    assert f'"{b}"' in fig and f'"{a}"' not in fig  # train_b keeps its colour
    at.multiselect(key="runs").select("train_a").run()
    at.slider(key="cv_smooth").set_value(0.6).run()
    assert not at.exception
    spec = charts(at)[0].proto.spec
    assert spec.count('"opacity":0.3') == 2  # one faded raw line per run
    values = at.dataframe[0].value
    assert (values["smoothed"] != values["value"]).any()
    assert a in RUN_PALETTE and b in RUN_PALETTE


def test_no_metrics_logged_says_so(runs_root, training_runs):
    at = app_test("curves", ["--log", str(training_runs / "train_a")])
    at.multiselect(key="cv_metrics").set_value([]).run()
    assert not at.exception and "at least one metric" in texts(at)
    assert default_metrics(["b/x", "a/y", "a/z"]) == ["b/x", "a/y"]
    # validation success (the trainers' val/success) comes right after the rollouts'
    assert default_metrics(["actor/pg_loss", "val/success/pick_and_place_simple", "val/success",
                            "rollout/success_rate"]) == ["rollout/success_rate", "val/success",
                                                         "actor/pg_loss"]


def test_hostile_run_names_and_text_stay_text(hostile_run):
    at = app_test("curves", ["--log", str(hostile_run)])
    assert_no_markup_from_logs(at)
    assert charts(at)


def test_a_whole_namespace_can_be_added_at_once(training_runs):
    at = app_test("curves", ["--log", str(training_runs)])
    at.selectbox(key="cv_namespace").set_value("actor").run()
    assert not at.exception
    chosen = at.multiselect(key="cv_metrics").value
    assert chosen[:3] == ["rollout/success_rate", "actor/pg_loss", "actor/kl_loss"]
    assert chosen.count("actor/kl_loss") == 1
    at.selectbox(key="cv_namespace").set_value("adv").run()
    assert at.multiselect(key="cv_metrics").value[-1] == "adv/ec/std"
    assert at.selectbox(key="cv_namespace").value is None
    assert len(charts(at)) == 4


def test_hostile_metric_names_stay_text(tmp_path):
    from loaders import RunWriter
    from tests.app.builders import XSS_IMG, XSS_MD, group_steps

    writer = RunWriter(tmp_path / "run", {})
    for step in (1, 2):
        writer.write_step(step, group_steps(seed=step, rows=200),
                          {f"{XSS_IMG}/loss": 0.1 * step, f"{XSS_MD}/x": 1.0})
    at = app_test("curves", ["--log", str(tmp_path / "run")])
    names = [n for n in at.multiselect(key="cv_metrics").options if "xss" in n]
    at.multiselect(key="cv_metrics").set_value(names).run()
    assert_no_markup_from_logs(at)
    assert len(charts(at)) == 2
    assert all(XSS_IMG not in c.proto.spec for c in charts(at))


def test_a_verl_dump_with_its_file_logger_or_tensorboard_curves_is_one_run(tmp_path):
    """--log DUMP --metrics FILE_OR_DIR: the dump's training curves (written by verl's own
    Tracking) on the page, in verl's namespaces; a resumed file logger says what is missing."""
    from tests.loaders.builders import agent_loop_entries, write_verl_curves, write_verl_dump

    curves = write_verl_curves(tmp_path / "verl_logs")
    dump = tmp_path / "rollout_data"
    for step in (1, 2, 3):
        write_verl_dump(dump, step, agent_loop_entries(step))
    for source in (curves / "both" / "exp.jsonl", curves / "both" / "tb"):
        at = app_test("curves", ["--log", str(dump), "--metrics", str(source)])
        assert not at.exception
        options = at.multiselect(key="cv_metrics").options
        assert {"actor/pg_loss", "critic/score/mean", "timing_s/gen", "perf/throughput",
                "response_length/mean", "val-core/alfworld/reward/mean@1"} <= set(options)
        assert at.multiselect(key="cv_metrics").value[:2] == ["critic/score/mean",
                                                                "actor/pg_loss"]
        assert len(charts(at)) >= 2
        assert {"actor", "critic"} <= {t.partition("/")[0] for t in titles(at)}
        values = at.dataframe[0].value
        assert set(values["run"]) == {"rollout_data"}
        assert sorted(set(values["train_step"])) == [1, 2, 3, 4, 5, 6]
    at = app_test("curves", ["--log", str(dump), "--metrics", str(curves / "resumed.jsonl")])
    shown = texts(at).replace("\\", "")  # as read, markdown escapes aside
    assert "starts at step 4" in shown and "steps 1-3 missing" in shown


def test_a_regular_expression_charts_every_metric_it_matches_and_a_bad_one_says_why(
        training_runs):
    at = app_test("curves", ["--log", str(training_runs)])
    at.text_input(key="cv_regex").set_value("LOSS$").run()  # case ignored
    assert not at.exception
    assert titles(at) == ["actor/kl_loss", "actor/pg_loss"]
    assert at.multiselect(key="cv_metrics").disabled  # the expression picks, not the list
    assert "2 metric(s) match" in texts(at)
    at.text_input(key="cv_regex").set_value("actor/(").run()
    assert not at.exception
    error = at.error[0].value
    assert "metric filter: invalid regular expression 'actor/('" in error.replace("\\", "")
    assert len(charts(at)) == 3  # the picks stand
    at.text_input(key="cv_regex").set_value("^nothing").run()
    assert "No metric matches" in texts(at) and not charts(at)


def test_the_x_axis_can_be_wall_time(training_runs, tmp_path):
    """A run directory's own times (written with each metrics line), or verl's
    timing_s/step summed; a run without either is left off the time axis, and said so."""
    import json as json_

    at = app_test("curves", ["--log", str(training_runs)])
    at.radio(key="cv_x").set_value("wall time").run()
    assert not at.exception
    layout = json.loads(charts(at)[0].proto.spec)["layout"]
    assert layout["xaxis"]["title"]["text"].startswith("wall time (s since")
    assert "Wall time from the times the logger wrote" in texts(at)
    values = at.dataframe[0].value
    assert (values["wall_time"] >= 0).all() and set(values["run"]) == {"train_a", "train_b"}

    run = tmp_path / "verl_like"
    run.mkdir()
    (run / "run.json").write_text((training_runs / "train_a" / "run.json").read_text())
    (run / "rollouts").symlink_to(training_runs / "train_a" / "rollouts")
    lines = [{"train_step": s, "actor/pg_loss": 0.1 * s, "timing_s/step": 3600.0}
             for s in (1, 2, 3, 4, 5)]
    (run / "metrics.jsonl").write_text("".join(json_.dumps(x) + "\n" for x in lines))
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "run.json").write_text((training_runs / "train_b" / "run.json").read_text())
    (bare / "rollouts").symlink_to(training_runs / "train_b" / "rollouts")
    (bare / "metrics.jsonl").write_text('{"train_step": 1, "actor/pg_loss": 1.0}\n'
                                        '{"train_step": 2, "actor/pg_loss": 2.0}\n')
    at = app_test("curves", ["--log", str(run), "--log", str(bare)])
    at.multiselect(key="cv_metrics").set_value(["actor/pg_loss"]).run()
    at.radio(key="cv_x").set_value("wall time").run()
    assert not at.exception
    fig = json.loads(charts(at)[0].proto.spec)
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("wall time (h since"), texts(at)
    (trace,) = [t for t in fig["data"] if t.get("showlegend")]
    assert list(array(trace["x"])) == [0.0, 1.0, 2.0, 3.0, 4.0]  # hours
    assert list(array(trace["customdata"])) == [1, 2, 3, 4, 5]  # a click still names its step
    shown = texts(at).replace("\\", "")
    assert "No wall time for bare" in shown and "verl's timing_s/step, summed" in shown


def test_a_validation_success_curve_gets_its_noise_band_and_window_mean(training_runs, tmp_path):
    """val/success with its episode counts: a band (g2po.evaluation.validation_curve's) behind
    the values and the window mean, dashed; each trace carries its training steps; unticking
    the noise takes both away; a metric that is no proportion gets neither."""
    import json as json_

    from g2po.evaluation import validation_curve

    run = tmp_path / "validated"
    run.mkdir()
    (run / "run.json").write_text((training_runs / "train_a" / "run.json").read_text())
    (run / "rollouts").symlink_to(training_runs / "train_a" / "rollouts")
    lines = [{"train_step": s, "actor/pg_loss": 0.1 * s} for s in (1, 2, 3, 4)]
    for line, success in zip(lines[1::2], (0.25, 0.75)):
        line.update({"val/success": success, "val/episodes": 16})
    (run / "metrics.jsonl").write_text("".join(json_.dumps(x) + "\n" for x in lines))
    at = app_test("curves", ["--log", str(run)])
    at.multiselect(key="cv_metrics").set_value(["val/success", "actor/pg_loss"]).run()
    assert not at.exception and at.checkbox(key="cv_noise").value
    at.number_input(key="cv_window").set_value(2).run()
    fig = json.loads(charts(at)[titles(at).index("val/success")].proto.spec)
    band = [t for t in fig["data"] if t.get("fill") == "toself"]
    mean = [t for t in fig["data"] if t.get("line", {}).get("dash") == "dash"]
    assert len(band) == 1 and len(mean) == 1
    want = validation_curve(pd.DataFrame(lines), window=2)
    assert list(array(mean[0]["y"])) == pytest.approx(want["window_mean"].tolist())
    assert list(array(band[0]["y"])) == pytest.approx(
        want["high"].tolist() + want["low"].tolist()[::-1])
    assert list(array(mean[0]["customdata"])) == [2, 4]
    other = json.loads(charts(at)[titles(at).index("actor/pg_loss")].proto.spec)
    assert not [t for t in other["data"] if t.get("fill") == "toself"]
    at.checkbox(key="cv_noise").uncheck().run()
    fig = json.loads(charts(at)[titles(at).index("val/success")].proto.spec)
    assert not [t for t in fig["data"] if t.get("fill") == "toself"]
