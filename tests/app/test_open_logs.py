"""Opening logs in the sidebar: runs named by what tells them apart, the path box's roots
(the folder the app was started in, while it serves this machine only), a path kept in the URL
so that a reload or a shared link opens it again, and training curves given as a log."""

from __future__ import annotations

import contextlib
import json
import shutil

from streamlit import config
from streamlit.testing.v1 import AppTest

from app.open_logs import OPEN_URL
from tests.app.builders import app_test, entry, shown, texts
from tests.loaders.builders import agent_loop_entries, write_verl_dump


@contextlib.contextmanager
def _serving(address: str):
    """The server's address as ``--server.address`` would set it."""
    saved = config.get_option("server.address")
    config.set_option("server.address", address)
    try:
        yield
    finally:
        config.set_option("server.address", saved)


def _two_dumps(root):
    for name in ("exp1", "exp2"):
        write_verl_dump(root / name / "rollout_data", 1, agent_loop_entries(1))
    return [root / name / "rollout_data" for name in ("exp1", "exp2")]


def test_two_dumps_of_one_name_are_named_by_their_parent_folders_in_every_legend(tmp_path):
    first, second = _two_dumps(tmp_path)
    at = app_test("overview", ["--log", str(first), "--log", str(second)])
    assert not at.exception
    assert at.multiselect(key="runs").options == ["exp1/rollout_data", "exp2/rollout_data"]
    table = next(d.value for d in at.dataframe if "run" in d.value.columns)
    assert set(table["run"]) == {"exp1/rollout_data", "exp2/rollout_data"}


def test_the_path_box_opens_a_path_under_the_folder_the_app_started_in(tmp_path,
                                                                          monkeypatch):
    """The README's step: start the app, type a path relative to where it was started."""
    _two_dumps(tmp_path)
    monkeypatch.chdir(tmp_path)
    with _serving("127.0.0.1"):
        at = app_test("group", [])  # the bundled samples
        at.text_input(key="path_box").input("exp1/rollout_data").run()
        at.button(key="open_path").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert at.selectbox(key="active_run").value == "rollout_data"
        # kept in the URL, where it lies: a reload opens it again
        assert at.query_params[OPEN_URL] == str(tmp_path / "exp1" / "rollout_data")


def test_served_on_a_network_the_folder_it_started_in_is_not_opened(tmp_path, monkeypatch):
    _two_dumps(tmp_path)
    monkeypatch.chdir(tmp_path)
    with _serving("0.0.0.0"):
        at = app_test("group", [])
        at.text_input(key="path_box").input("exp1/rollout_data").run()
        at.button(key="open_path").click().run()
    assert not at.exception
    (error,) = at.error
    assert "not opened" in shown(error.value) and "rollout_data" not in at.multiselect(
        key="runs").options


def test_a_link_reopens_the_paths_it_names_where_the_app_lets_them_open(tmp_path):
    first, second = _two_dumps(tmp_path)
    secret = tmp_path / "secret"
    shutil.copytree(second, secret / "rollout_data")
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": [
        "--log", str(first), "--allow-dir", str(second.parent)]}, default_timeout=60)
    at.query_params[OPEN_URL] = [str(second), str(secret / "rollout_data")]
    at.query_params["run"] = "exp2/rollout_data"
    at.run()
    assert not at.exception
    assert at.multiselect(key="runs").options == ["exp1/rollout_data", "exp2/rollout_data"]
    assert at.selectbox(key="active_run").value == "exp2/rollout_data"  # as the link said
    (error,) = at.error  # the path outside the roots: refused, naming nothing of it
    assert "not opened" in shown(error.value) and "secret" not in shown(texts(at))
    assert at.query_params[OPEN_URL] == str(second)  # what opened is what the URL keeps


def test_training_curves_given_as_a_log_say_what_they_are_and_how_to_pass_them(tmp_path):
    curves = tmp_path / "metrics.jsonl"
    curves.write_text("".join(json.dumps({"step": s, "data": {"actor/loss": 0.1 * s}}) + "\n"
                              for s in (1, 2)))
    at = app_test("group", ["--log", str(curves)])
    assert not at.exception
    said = shown(texts(at))
    assert "verl's file-logger metrics" in said and "--metrics" in said
    assert not at.get("form")  # no column-mapping form for it
