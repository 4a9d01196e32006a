import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import app.options
from loaders import RunWriter
from tests.app.builders import app_test, entry, group_steps, texts


def plain(at) -> str:
    """The app's texts (and success messages) with markdown escapes removed, for matching
    messages."""
    return "\n".join([texts(at), *(str(e.value) for e in at.success)]).replace(
        "\\", "").replace("\u2060", "")


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


def test_the_path_box_opens_logs_under_its_roots_and_chooses_them(runs_root, tmp_path):
    at = app_test("group", ["--log", str(runs_root / "run_a"), "--allow-dir", str(runs_root)])
    at.text_input(key="path_box").input(str(runs_root / "run_b")).run()
    at.button(key="open_path").click().run()
    assert not at.exception and not at.error
    assert at.multiselect(key="runs").value == ["run_a", "run_b"]
    assert at.selectbox(key="active_run").value == "run_b"  # chosen and shown at once
    assert "Opened run_b" in plain(at) and "Run **run_b**" in texts(at).replace("\\_", "_")
    csv = group_steps(rows=150).to_csv(index=False).encode()
    at.file_uploader(key="uploads").set_value(("mine.csv", csv, "text/csv")).run()
    assert not at.exception
    assert "upload: mine.csv" in at.multiselect(key="runs").value
    assert at.selectbox(key="active_run").value == "upload: mine.csv"
    assert "Opened upload: mine.csv" in plain(at)
    assert len(at.get("component_instance")) == 1  # its graph is drawn


def _secrets(folder: Path) -> list[Path]:
    folder.mkdir()
    (folder / "users.csv").write_text("user,password,card\nroot,hunter2,4111\n")
    (folder / "conf.json").write_text('{"api_token": "s3cr3t", "db_password": "x"}\n')
    (folder / "bad.jsonl").write_text('{"ok": 1}\n{"private_key": "BEGIN RSA PRIV\n')
    (folder / "sub").mkdir()
    return [folder / "users.csv", folder / "conf.json", folder / "bad.jsonl", folder / "sub",
            folder, folder / "nope.csv", folder / "sub" / ".." / "users.csv"]


def test_a_path_outside_the_roots_is_refused_revealing_nothing(runs_root, tmp_path):
    secrets = _secrets(tmp_path / "secrets")
    at = app_test("group", ["--log", str(runs_root / "run_a")])
    messages = set()
    for path in [*secrets, runs_root / "run_b", Path("/etc"), Path("/etc/passwd")]:
        at.text_input(key="path_box").input(str(path)).run()
        at.button(key="open_path").click().run()
        assert not at.exception
        (error,) = at.error
        messages.add(error.value)
        shown = texts(at)
        for secret in ("password", "hunter2", "api_token", "private_key", "BEGIN", "card",
                       "It holds", "Columns found", "no such file"):
            assert secret not in shown, (path, secret)
        assert at.multiselect(key="runs").options == ["run_a"]
    # the same words for a file, a folder, a missing path and /etc: nothing tells them apart
    assert len(messages) == 1, messages
    assert "--allow-dir" in messages.pop().replace("\\", "")


def test_a_symlink_out_of_a_root_is_refused(runs_root, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    secrets = _secrets(tmp_path / "secrets")
    (root / "link").symlink_to(secrets[0].parent)
    shutil.copytree(runs_root / "run_b", root / "run_b")
    at = app_test("group", ["--log", str(root / "run_b"), "--allow-dir", str(root)])
    at.text_input(key="path_box").input(str(root / "link")).run()
    at.button(key="open_path").click().run()
    assert not at.exception and "not opened" in plain(at) and "password" not in texts(at)


def test_a_table_without_the_required_columns_gets_a_mapping_form(tmp_path):
    steps = group_steps(rows=150)
    custom = steps.rename(columns={"group_id": "task_uid", "traj_id": "rollout", "t": "turn",
                                   "state_key": "obs_anchor", "action": "act",
                                   "episode_reward": "ret"})
    upload = custom.to_csv(index=False).encode()
    at = app_test("group", ["--log", str(tmp_path / "none"), "--allow-dir", str(tmp_path)])
    at.file_uploader(key="uploads").set_value(("custom.csv", upload, "text/csv")).run()
    assert not at.exception
    assert "has no column for" in plain(at)
    assert not any("upload: custom.csv" in m.value for m in at.multiselect if m.key == "runs")
    form = [s for s in at.selectbox if str(s.key).startswith("map:upload:")]
    by_role = {s.key.rsplit(":", 1)[1]: s for s in form}
    # prefilled with the loaders' suggestions
    assert by_role["t"].value == "turn" and by_role["traj_id"].value == "rollout"
    assert by_role["group_id"].value == "task_uid" and by_role["action"].value == "act"
    assert by_role["observation"].value == "observation"
    by_role["state_key"].select("observation")  # the user's choice beats the suggestion
    by_role["state_key"].select("obs_anchor")
    at.button(key=f"FormSubmitter:{form[0].key.rsplit(':', 1)[0]}-Open with this mapping") \
        .click().run()
    assert not at.exception, at.exception
    assert at.multiselect(key="runs").value == ["upload: custom.csv"]
    assert len(at.get("component_instance")) == 1
    assert "Opened upload: custom.csv" in plain(at)


def test_map_and_mapping_options_open_a_table_with_other_column_names(tmp_path):
    table = tmp_path / "custom.csv"
    group_steps(rows=150).rename(columns={"group_id": "task_uid", "t": "turn"}) \
        .to_csv(table, index=False)
    at = app_test("group", ["--log", str(table), "--map", "group_id=task_uid", "--map",
                            "t=turn"])
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.get("component_instance")) == 1
    mapping = tmp_path / "map.yaml"
    mapping.write_text("columns:\n  group_id: task_uid\n  t: turn\n")
    at = app_test("group", ["--log", str(table), "--mapping", str(mapping)])
    assert not at.exception and not at.error
    assert len(at.get("component_instance")) == 1
    at = app_test("group", ["--log", str(table), "--map", "group_id=nope"])
    assert not at.exception and "'nope'" in plain(at)


def test_uploads_are_bounded_and_removed(tmp_path):
    csv = group_steps(rows=150).to_csv(index=False).encode()
    at = app_test("group", ["--log", str(tmp_path / "none"), "--max-rows", "100"])
    at.file_uploader(key="uploads").set_value(("big.csv", csv, "text/csv")).run()
    assert not at.exception
    assert "more than 100 rows" in plain(at) and "--max-rows" in plain(at)
    at = app_test("group", ["--log", str(tmp_path / "none")])
    at.file_uploader(key="uploads").set_value(("mine.csv", csv, "text/csv")).run()
    (saved,) = at.session_state["_g2po_uploads"].saved.values()
    assert saved.read_bytes() == csv
    at.file_uploader(key="uploads").set_value([]).run()
    assert not at.exception and not saved.exists()
    assert "upload: mine.csv" not in texts(at)


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


def test_a_bug_in_a_page_is_a_short_message_never_a_traceback(runs_root, tmp_path, caplog):
    """A user's estimator that raises (not a bad-input error the views expect): the page says
    what failed, shows no traceback or server path, and the server log has the details."""
    plugin = tmp_path / "boom_plugin.py"
    plugin.write_text(
        "from g2po.estimators import register_estimator\n"
        "@register_estimator('app_test_boom', overwrite=True)\n"
        "def boom(ix):\n"
        "    raise RuntimeError('secret detail /srv/private/path')\n")
    at = app_test("compare", ["--log", str(runs_root), "--plugin", str(plugin)])
    with caplog.at_level("ERROR", logger="app"):
        at.multiselect(key="cmp_estimators").set_value(["g2po", "app_test_boom"]).run()
    assert not at.exception
    (error,) = at.error
    assert "internal error" in error.value and "server's log" in error.value.replace("\\", "")
    assert "secret detail" not in texts(at) and "Traceback" not in texts(at)
    assert "secret detail /srv/private/path" in caplog.text  # the details, for the operator
    assert at.selectbox(key="active_run").value  # the sidebar still works


def test_hostile_run_and_file_names_are_never_markdown(tmp_path):
    """Run folder names, file names and load notes reach markdown only escaped (the browser
    test checks what Chromium then draws)."""
    from tests.app.builders import write_run

    write_run(tmp_path / "![i](https:" / "evil.example)", 1, rows=150)
    write_run(tmp_path / "**bold** <b>x</b>", 1, rows=150, seed=3)
    (tmp_path / "[n](http:evil) $x$.bin").write_bytes(b"\x00junk")
    at = app_test("group", ["--log", str(tmp_path)])
    assert not at.exception
    assert at.multiselect(key="runs").value == ["![i](https:/evil.example)", "**bold** <b>x</b>"]
    csv = group_steps(rows=150).to_csv(index=False).encode()
    at.file_uploader(key="uploads").set_value(("[u](http:evil) **u**.csv", csv, "text/csv"))
    at.run()
    assert not at.exception
    values = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success")
              for e in getattr(at, kind)] + [e.label for e in at.expander]
    assert any("evil" in v for v in values)  # the names are on the page …
    for value in values:  # … and every markdown-active character in them is escaped
        assert not re.search(r"(?<!\\)(<b>|\]\(|\*\*bold|\*\*u\*\*|\$x\$)", value), value


def test_the_path_box_offers_the_mapping_form_and_short_errors(runs_root, tmp_path):
    table = tmp_path / "mine.csv"
    group_steps(rows=150).rename(columns={"t": "turn"}).to_csv(table, index=False)
    broken = tmp_path / "broken.csv"
    frame = group_steps(rows=150)
    frame["t"] = frame["t"].astype(object)
    frame.loc[3, "t"] = "three"
    frame.to_csv(broken, index=False)
    at = app_test("group", ["--log", str(runs_root / "run_a"), "--allow-dir", str(tmp_path)])
    at.text_input(key="path_box").input(str(broken)).run()
    at.button(key="open_path").click().run()
    assert not at.exception
    (error,) = at.error
    assert error.value.startswith("Cannot open broken") and "'t'" in error.value
    assert len(error.value) < 400 and at.multiselect(key="runs").options == ["run_a"]
    at.text_input(key="path_box").input(str(table)).run()
    at.button(key="open_path").click().run()
    assert not at.exception and not at.error
    form_key = f"map:path:{table.resolve()}"
    assert at.selectbox(key=f"{form_key}:t").value == "turn"
    at.button(key=f"FormSubmitter:{form_key}-Open with this mapping").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect(key="runs").value == ["run_a", "mine.csv"]
    assert at.selectbox(key="active_run").value == "mine.csv"
    assert len(at.get("component_instance")) == 1


def test_a_command_line_table_lacking_columns_gets_the_form_too(tmp_path):
    table = tmp_path / "mine.csv"
    group_steps(rows=150).rename(columns={"group_id": "task"}).to_csv(table, index=False)
    at = app_test("group", ["--log", str(table)])
    assert not at.exception and not at.error
    form_key = f"map:log:{table.resolve()}"
    assert at.selectbox(key=f"{form_key}:group_id").value == "(none)"
    at.selectbox(key=f"{form_key}:group_id").select("task")
    at.button(key=f"FormSubmitter:{form_key}-Open with this mapping").click().run()
    assert not at.exception and not at.error
    assert len(at.get("component_instance")) == 1


def test_a_url_naming_a_run_not_open_says_so_and_shows_no_other(runs_root):
    """A shared link to an upload of another session opened another run silently, keeping
    the link's success=1."""
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": [
        "--log", str(runs_root / "run_a"), "--log", str(runs_root / "run_b")]},
        default_timeout=60)
    at.query_params.update({"run": "upload: gone.csv", "step": "2", "success": "1"})
    at.run()
    assert not at.exception
    said = [w.value.replace("\\", "") for w in at.warning]
    assert len(said) == 2 and all("not open in this session" in w for w in said)
    assert all("upload the file again" in w and "gone.csv" in w for w in said)
    assert not at.get("component_instance")  # no graph of another run
    assert "run_a" not in " ".join(m.value for m in at.markdown)
    assert at.query_params["run"] == "upload: gone.csv"  # a reload says it again
    instead = at.selectbox(key="active_run_instead")
    assert instead.value is None and instead.options == ["run_a", "run_b"]
    # the user chooses another run: shown, without the link's step or outcome rule
    instead.select("run_b").run()
    assert not at.exception and not at.warning
    assert len(at.get("component_instance")) == 1
    assert at.query_params["run"] == "run_b" and at.query_params["success"] == "10"
    assert at.query_params["step"] == "2"  # run_b's last step, not the link's
    at.run()
    assert at.selectbox(key="active_run").value == "run_b"


def test_the_missing_upload_uploaded_again_opens_as_the_url_said(runs_root):
    csv = group_steps(rows=150).assign(episode_reward=lambda f: f["episode_reward"] / 10)
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": [
        "--log", str(runs_root / "run_a")]}, default_timeout=60)
    at.query_params.update({"run": "upload: mine.csv", "success": "1"})
    at.run()
    assert "not open in this session" in at.warning[0].value
    at.file_uploader(key="uploads").set_value(
        ("mine.csv", csv.to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception and not at.warning
    assert at.query_params["run"] == "upload: mine.csv"
    key = next(n.key for n in at.number_input if n.key.startswith("p_success:"))
    assert "mine.csv" in key and at.number_input(key=key).value == 1.0  # the link's rule


def test_no_log_open_and_a_url_naming_a_run(tmp_path):
    at = AppTest.from_function(entry, kwargs={"page": "group", "argv": [
        "--log", str(tmp_path / "none")]}, default_timeout=60)
    at.query_params["run"] = "upload: gone.csv"
    at.run()
    assert not at.exception
    assert any("not open in this session" in w.value for w in at.warning)


def test_the_mapping_form_offers_the_task_done_and_won_roles(tmp_path):
    """Without task, State over training followed a per-step uuid: the form names it."""
    steps = group_steps(rows=150)
    steps = steps.assign(instruction="cook " + steps["group_id"].astype(str),
                         finished=True, success=steps["episode_reward"] > 0)
    custom = steps.rename(columns={"group_id": "uuid", "t": "turn", "state_key": "obs_anchor"})
    at = app_test("state_history", ["--log", str(tmp_path / "none")])
    at.file_uploader(key="uploads").set_value(
        ("custom.csv", custom.to_csv(index=False).encode(), "text/csv")).run()
    form = [s for s in at.selectbox if str(s.key).startswith("map:upload:")]
    by_role = {s.key.rsplit(":", 1)[1]: s for s in form}
    assert {"task", "done", "won"} <= set(by_role)
    assert by_role["task"].label == "task (optional)"
    assert by_role["task"].value == "instruction" and by_role["done"].value == "finished"
    assert by_role["won"].value == "success"
    by_role["group_id"].select("uuid")
    at.button(key=f"FormSubmitter:{form[0].key.rsplit(':', 1)[0]}-Open with this mapping") \
        .click().run()
    assert not at.exception
    assert at.radio(key="sh_by").value == "task"  # tasks matched by the mapped column
