import re
import shutil

import pandas as pd
import pytest

import app.options
from loaders import RunWriter
from tests.app.builders import app_test, group_steps, texts


def plain(at) -> str:
    """The app's texts with markdown escapes removed, for matching messages."""
    return texts(at).replace("\\", "")


def test_every_page_renders_without_exception(runs_root):
    for page in ("group", "overview", "compare", "diagnostics", "export"):
        at = app_test(page, ["--log", str(runs_root)])
        assert not at.exception, page
        assert not at.error, (page, [e.value for e in at.error])


def test_no_arguments_open_every_run_of_the_sample_folder(runs_root, monkeypatch):
    monkeypatch.setattr(app.options, "SAMPLE_DIR", runs_root)
    at = app_test("group", [])
    assert not at.exception
    assert at.multiselect(key="runs").value == ["run_a", "run_b"]
    assert at.selectbox(key="active_run").options == ["run_a", "run_b"]
    at.selectbox(key="active_run").select("run_b").run()
    assert not at.exception and "Run **run_b**" in texts(at).replace("\\_", "_")


def test_an_empty_sample_folder_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(app.options, "SAMPLE_DIR", tmp_path)
    at = app_test("group", [])
    assert not at.exception
    assert "No sample rollouts found" in plain(at)
    assert "No group to show" in plain(at)


def test_bad_command_line_is_a_message(runs_root):
    at = app_test("group", ["--log", str(runs_root), "--bogus"])
    assert not at.exception
    assert "Bad command-line options" in plain(at) and "--bogus" in plain(at)


def test_missing_path_is_a_message(tmp_path):
    at = app_test("group", ["--log", str(tmp_path / "nope")])
    assert not at.exception
    assert "Cannot open --log" in plain(at) and "no such file" in plain(at)


def test_bad_table_names_the_column_and_rows(tmp_path):
    bad = tmp_path / "bad.csv"
    group_steps(rows=100).drop(columns=["episode_reward"]).to_csv(bad, index=False)
    at = app_test("group", ["--log", str(bad)])
    assert not at.exception
    assert "episode_reward" in plain(at)
    worse = tmp_path / "worse.csv"
    frame = group_steps(rows=100)
    frame["t"] = frame["t"].astype(object)
    frame.loc[3, "t"] = "three"
    frame.to_csv(worse, index=False)
    at = app_test("group", ["--log", str(worse)])
    assert not at.exception
    assert "'t'" in plain(at) and "line" in plain(at)


def test_an_empty_run_and_a_table_without_training_steps(tmp_path):
    RunWriter(tmp_path / "empty", {"env": "x"})
    at = app_test("group", ["--log", str(tmp_path / "empty")])
    assert not at.exception and "holds no training steps yet" in plain(at)
    table = tmp_path / "flat.parquet"
    group_steps(rows=200).to_parquet(table)
    at = app_test("group", ["--log", str(table)])
    assert not at.exception and not at.error
    assert "no training steps" in plain(at)
    assert len(at.get("component_instance")) == 1
    for page in ("overview", "compare", "diagnostics", "export"):
        at = app_test(page, ["--log", str(table)])
        assert not at.exception and not at.error, page


def test_a_typed_path_and_an_upload_are_opened(runs_root, tmp_path):
    at = app_test("group", ["--log", str(runs_root / "run_a")])
    at.text_input(key="path_box").input(str(runs_root / "run_b")).run()
    at.button(key="open_path").click().run()
    assert not at.exception
    assert at.multiselect(key="runs").options == ["run_a", "run_b"]
    csv = group_steps(rows=150).to_csv(index=False).encode()
    at.file_uploader(key="uploads").set_value(("mine.csv", csv, "text/csv")).run()
    assert not at.exception
    assert "upload: mine.csv" in at.multiselect(key="runs").options


def test_a_live_run_shows_new_training_steps(tmp_path, runs_root):
    live = tmp_path / "live"
    shutil.copytree(runs_root / "run_a", live)
    at = app_test("group", ["--log", str(live)])
    key = f"train_step:auto:{live.resolve()}"
    assert at.selectbox(key=key).value == 3
    assert at.toggle(key="live").value
    RunWriter(live, {}, resume=True).write_step(4, group_steps(seed=99, rows=300))
    at.run()
    assert not at.exception
    assert at.selectbox(key=key).options[-1] == "4"
    assert at.selectbox(key=key).value == 4  # it was on the newest step: it follows


def test_a_plugin_estimator_appears_in_the_comparison(runs_root, tmp_path):
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(
        "import numpy as np\n"
        "from g2po.estimators import register_estimator\n"
        "@register_estimator('app_test_zero', overwrite=True)\n"
        "def zero(ix):\n"
        "    return {'adv': np.zeros(ix.n_steps)}\n")
    at = app_test("compare", ["--log", str(runs_root), "--plugin", str(plugin)])
    assert not at.exception
    assert "app_test_zero" in at.multiselect(key="cmp_estimators").options
    at.multiselect(key="cmp_estimators").set_value(["g2po", "app_test_zero"]).run()
    assert (at.dataframe[0].value["app_test_zero"] == 0).all()


def test_a_broken_plugin_is_a_message(runs_root, tmp_path):
    plugin = tmp_path / "broken.py"
    plugin.write_text("raise RuntimeError('boom')\n")
    at = app_test("group", ["--log", str(runs_root), "--plugin", str(plugin)])
    assert not at.exception and "boom" in plain(at)


@pytest.mark.parametrize("page", ["group", "overview", "compare", "diagnostics", "export"])
def test_hostile_text_is_never_markdown(hostile_run, page):
    """Log text reaches markdown only escaped: no link, image, tag or formula forms."""
    at = app_test(page, ["--log", str(hostile_run)])
    assert not at.exception
    for element in (*at.markdown, *at.caption, *at.error, *at.warning, *at.info):
        value = element.value
        # every markdown-active character of the payloads arrives backslash-escaped
        assert not re.search(r"(?<!\\)(<|\]\(|\$x)", value), (page, value)
    frame = pd.concat([d.value.astype(str) for d in at.dataframe], ignore_index=True) \
        if at.dataframe else pd.DataFrame()
    if page in ("group", "compare"):  # the payloads are shown, as text, in the tables
        assert frame.apply(lambda c: c.str.contains("<script>", regex=False)).any().any()
