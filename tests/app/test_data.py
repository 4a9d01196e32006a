import shutil
from pathlib import Path

import pandas as pd
import pytest

import loaders
from app import data
from app.data import (
    LogCache,
    LogRef,
    RefusedPathError,
    allowed_path,
    check_rows,
    find_logs,
    forget_uploads,
    frame_bytes,
    load_train_step,
    log_bytes,
    log_cache,
    open_log,
    save_upload,
    session_uploads,
    upload_root,
    with_mapping,
    with_metrics,
)
from tests.app.builders import group_steps, write_run


def test_a_folder_of_runs_lists_each_run(runs_root):
    refs, notes = find_logs(runs_root)
    assert [r.name for r in refs] == ["run_a", "run_b"]
    assert not notes


def test_a_run_directory_or_a_file_is_one_log(runs_root, tmp_path):
    refs, _ = find_logs(runs_root / "run_a")
    assert refs == [LogRef("run_a", str((runs_root / "run_a").resolve()), None)]
    table = tmp_path / "steps.csv"
    group_steps(rows=100).to_csv(table, index=False)
    (ref,), _ = find_logs(table)
    assert ref.path == str(table.resolve())
    assert loaders.open_log(ref.path).train_steps() == [0]


def test_unreadable_entries_are_named_not_dropped(runs_root, tmp_path):
    (tmp_path / "notes.md").write_text("readme")
    (tmp_path / "weird.bin").write_bytes(b"\x00\x01")
    group_steps(rows=100).to_csv(tmp_path / "t.csv", index=False)
    refs, notes = find_logs(tmp_path)
    assert [r.name for r in refs] == ["t.csv"]
    assert len(notes) == 1 and "weird.bin" in notes[0]


def test_missing_and_empty_paths_raise_clear_errors(tmp_path):
    with pytest.raises(loaders.NoLogFoundError, match="no such file"):
        find_logs(tmp_path / "nope")
    with pytest.raises(loaders.NoLogFoundError, match="no logs found"):
        find_logs(tmp_path)


def test_uploads_get_safe_names_and_are_reused(tmp_path):
    path = save_upload("../../etc/<evil>.csv", b"a,b\n1,2\n", tmp_path)
    assert path.parent == tmp_path and path.name == "evil_.csv"
    assert save_upload("../../etc/<evil>.csv", b"a,b\n1,2\n", tmp_path) == path
    assert Path(path).read_bytes() == b"a,b\n1,2\n"


def test_only_paths_under_the_roots_are_allowed(runs_root, tmp_path):
    roots = [runs_root.resolve()]
    assert allowed_path(str(runs_root / "run_a"), roots) == (runs_root / "run_a").resolve()
    assert allowed_path(str(runs_root), roots) == runs_root.resolve()
    refused = set()
    for path in (tmp_path, runs_root / ".." / "x", "/etc/passwd", tmp_path / "missing",
                 f"{runs_root}_evil"):  # a sibling sharing the root's name as a prefix
        with pytest.raises(RefusedPathError) as err:
            allowed_path(str(path), roots)
        refused.add(str(err.value))
    assert len(refused) == 1  # one message for all: it tells nothing about the path


def test_entries_linking_out_of_the_roots_are_left_out(runs_root, tmp_path):
    (tmp_path / "link").symlink_to(runs_root / "run_b")
    shutil.copytree(runs_root / "run_a", tmp_path / "run_a")
    refs, notes = find_logs(tmp_path, roots=[tmp_path.resolve()])
    assert [r.name for r in refs] == ["run_a"]
    assert notes == ["link: leads outside the folders this app opens"]
    refs, _ = find_logs(tmp_path, roots=[tmp_path.resolve(), runs_root.resolve()])
    assert [r.name for r in refs] == ["link", "run_a"]


def test_read_options_go_only_to_formats_they_apply_to(runs_root, tmp_path):
    table = tmp_path / "t.csv"
    group_steps(rows=100).to_csv(table, index=False)
    read = (("mapping", (("group_id", "group_id"),)), ("state_regex", "x"))
    (ref,), _ = find_logs(table, read=read)
    assert ref.read == (("mapping", (("group_id", "group_id"),)),)
    assert ref.open_kwargs() == {"mapping": {"group_id": "group_id"}}
    (run,), _ = find_logs(runs_root / "run_a", read=read)
    assert run.read == () and run.key == f"auto:{(runs_root / 'run_a').resolve()}"
    assert with_mapping(ref.read, {"t": "step"}) == (("mapping", (("t", "step"),)),)
    assert with_mapping(ref.read, {}) == ()


def test_tables_over_the_row_bound_are_refused_unread(tmp_path):
    frame = group_steps(rows=120)
    for fmt, write in (("csv", lambda p: frame.to_csv(p, index=False)),
                       ("jsonl", lambda p: frame.to_json(p, orient="records", lines=True)),
                       ("parquet", frame.to_parquet)):
        path = tmp_path / f"t.{fmt}"
        write(path)
        check_rows(path, fmt, len(frame))  # exactly at the bound: fine
        with pytest.raises(loaders.LoaderError, match=f"more than {len(frame) - 1:,} rows"):
            check_rows(path, fmt, len(frame) - 1)
        with pytest.raises(loaders.LoaderError, match="--max-rows"):
            open_log(LogRef(path.name, str(path)), max_rows=10)
        assert len(open_log(LogRef(path.name, str(path)), max_rows=1000).steps) == len(frame)


def test_the_log_cache_is_bounded_by_memory_not_count(tmp_path):
    paths = []
    for i in range(4):
        path = tmp_path / f"t{i}.parquet"
        group_steps(seed=i, rows=2000).to_parquet(path)
        paths.append(path)
    first = open_log(LogRef("t0", str(paths[0])))
    size = log_bytes(first)
    assert size > first.steps.memory_usage(deep=True).sum() > 100_000
    budget_mb = 2.5 * size / 2**20  # room for two of these logs
    for path in paths:
        open_log(LogRef(path.name, str(path)), cache_mb=budget_mb)
    cache = log_cache()
    assert len(cache) == 2 and cache.total() <= budget_mb * 2**20
    # the newest stay; the least recently used went
    assert open_log(LogRef("t3.parquet", str(paths[3])), cache_mb=budget_mb) is \
        open_log(LogRef("t3.parquet", str(paths[3])), cache_mb=budget_mb)
    # whole training steps share the budget with the logs
    log = open_log(LogRef("t3.parquet", str(paths[3])), cache_mb=budget_mb)
    step = load_train_step(log, "k3", 0)
    assert load_train_step(log, "k3", 0) is step
    assert cache.total() <= budget_mb * 2**20
    one = LogCache(budget_bytes=1)
    huge = one.get(LogRef("t0", str(paths[0])), lambda: loaders.open_log(paths[0]))
    assert len(one) == 1 and huge.train_steps() == [0]  # one log over the budget still opens
    one.drop(str(paths[0]))
    assert len(one) == 0


def test_a_sessions_uploads_are_removed_with_it(tmp_path):
    import gc

    state: dict = {}
    uploads = session_uploads(state)
    saved = save_upload("a.csv", b"a,b\n1,2\n", uploads.folder / "id1")
    uploads.saved["id1"] = saved
    assert forget_uploads(uploads, {"id1"}) == [] and saved.exists()
    assert forget_uploads(uploads, set()) == [saved] and not saved.exists()
    folder = uploads.folder
    assert folder.is_dir() and folder.parent == upload_root()
    del uploads
    state.clear()  # the session is gone
    gc.collect()
    assert not folder.exists()


def test_sessions_opening_one_log_at_once_read_it_once():
    import threading
    import time

    made = []

    def make():
        made.append(1)
        time.sleep(0.2)
        return pd.DataFrame({"a": range(10)})

    cache = LogCache()
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("k", make, frame_bytes)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 4 and all(g is got[0] for g in got)


def test_curves_go_with_one_log_and_stay_within_the_roots(runs_root, tmp_path):
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    run = tmp_path / "exp"
    dump = run / "rollout_data"
    write_verl_dump(dump, 1, agent_loop_entries(1))
    curves = run / "exp.jsonl"
    curves.write_text('{"step": 1, "data": {"actor/pg_loss": 0.5}}\n')
    # the path box, with only the dump allowed: the curves beside it lie outside, unread
    refs, _ = find_logs(dump, roots=[dump.resolve()])
    assert dict(refs[0].read)["metrics"] == ""
    assert open_log(refs[0]).metrics_source is None
    # with the folder above allowed too, they are taken
    refs, _ = find_logs(dump, roots=[run.resolve()])
    assert dict(refs[0].read)["metrics"] == str(curves.resolve())
    # --metrics: for one log only
    one, _ = find_logs(dump)
    paired = with_metrics(one, dump, str(curves))
    assert dict(paired[0].read)["metrics"] == str(curves.resolve())
    assert len(open_log(paired[0]).metrics()) == 1
    several, _ = find_logs(runs_root)
    with pytest.raises(loaders.LoaderError, match="goes with a --log that is one log"):
        with_metrics(several, runs_root, str(curves))


def test_the_pages_merge_rates_are_the_logs(tmp_path):
    """The overview's cached merge rates are :meth:`loaders.Log.merge_rates` (tested in
    tests/loaders/test_merge_rates.py), under each state key."""
    log = loaders.open_log(write_run(tmp_path / "run", 3, rows=300))
    for state_key in ("exact", "normalized"):
        assert data.merge_rates(log, "k", (3, 3), state_key).equals(log.merge_rates(state_key))
