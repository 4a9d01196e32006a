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
    assert '"#636EFA"' in fig and '"#EF553B"' in fig  # train_a first colour, train_b second
    at.multiselect(key="runs").unselect("train_a").run()
    fig = charts(at)[0].proto.spec
    assert '"#EF553B"' in fig and '"#636EFA"' not in fig  # train_b keeps its colour
    at.multiselect(key="runs").select("train_a").run()
    at.slider(key="cv_smooth").set_value(0.6).run()
    assert not at.exception
    spec = charts(at)[0].proto.spec
    assert spec.count('"opacity":0.3') == 2  # one faded raw line per run
    values = at.dataframe[0].value
    assert (values["smoothed"] != values["value"]).any()
    assert RUN_PALETTE[0] == "#636EFA"


def test_no_metrics_logged_says_so(runs_root, training_runs):
    at = app_test("curves", ["--log", str(training_runs / "train_a")])
    at.multiselect(key="cv_metrics").set_value([]).run()
    assert not at.exception and "at least one metric" in texts(at)
    assert default_metrics(["b/x", "a/y", "a/z"]) == ["b/x", "a/y"]


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
