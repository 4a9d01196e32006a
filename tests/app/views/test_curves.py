from app.charts import RUN_PALETTE
from app.views.curves import default_metrics
from tests.app.builders import app_test, texts
from tests.app.views.conftest import assert_no_markup_from_logs


def charts(at):
    return at.get("plotly_chart")


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
    assert {"actor", "rollout"} <= {s.value for s in at.subheader}
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
        assert {"actor", "critic"} <= {s.value for s in at.subheader}
        values = at.dataframe[0].value
        assert set(values["run"]) == {"rollout_data"}
        assert sorted(set(values["train_step"])) == [1, 2, 3, 4, 5, 6]
    at = app_test("curves", ["--log", str(dump), "--metrics", str(curves / "resumed.jsonl")])
    shown = texts(at).replace("\\", "")  # as read, markdown escapes aside
    assert "starts at step 4" in shown and "steps 1-3 missing" in shown
