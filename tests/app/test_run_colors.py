"""Run colours kept on disk: the same run, the same colour, in any company and after restarts."""

from __future__ import annotations

import json

from app.charts import RUN_PALETTE
from app.run_colors import REGISTRY, RunColors, run_colors_for


def test_a_run_keeps_its_colour_whatever_else_is_open(tmp_path):
    path = tmp_path / REGISTRY
    alone = RunColors(path).colors(["/runs/b"])
    restarted = RunColors(path)  # a new server: only the file remains
    with_others = restarted.colors(["/runs/a", "/runs/b", "/runs/c"])
    assert with_others["/runs/b"] == alone["/runs/b"]
    assert len(set(with_others.values())) == 3
    assert RunColors(path).colors(["/runs/c"])["/runs/c"] == with_others["/runs/c"]
    stored = json.loads(path.read_text())["runs"]
    assert sorted(stored) == ["/runs/a", "/runs/b", "/runs/c"]


def test_runs_first_seen_apart_still_differ_while_colours_last(tmp_path):
    """New runs take the colours given least so far: runs seen in separate sessions collide
    only after every colour was given out."""
    path = tmp_path / REGISTRY
    seen = {}
    for i in range(len(RUN_PALETTE)):
        seen.update(RunColors(path).colors([f"/runs/{i}"]))
    assert len(set(seen.values())) == len(RUN_PALETTE)


def test_an_unreadable_or_unwritable_registry_still_gives_lasting_colours(tmp_path):
    path = tmp_path / REGISTRY
    path.write_text("{not json")
    colors = RunColors(path)
    first = colors.colors(["/runs/a"])
    assert colors.colors(["/runs/b", "/runs/a"])["/runs/a"] == first["/runs/a"]
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    nowhere = RunColors(blocked / REGISTRY)
    kept = nowhere.colors(["/runs/a"])
    assert nowhere.colors(["/runs/z", "/runs/a"])["/runs/a"] == kept["/runs/a"]


def test_the_default_registry_is_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "cache"))
    colors = run_colors_for(["/runs/x"])
    assert (tmp_path / "cache" / REGISTRY).is_file()
    assert colors["/runs/x"] in RUN_PALETTE
