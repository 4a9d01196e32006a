"""scripts/bench_verl_dump.py at a tiny scale: the dump it writes is verl's, and it measures."""

from __future__ import annotations

import json

import loaders
from g2po.agent_format import current_observation
from tests.scripts import load_script


def test_the_dump_is_shaped_like_verls_agent_loop_output(tmp_path, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "cache"))
    bench = load_script("bench_verl_dump")
    lines, size = bench.generate_dump(tmp_path / "dump", 2, 2, 3, 6)
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["1.jsonl", "2.jsonl"]
    first = [json.loads(x) for x in (tmp_path / "dump" / "1.jsonl").read_text().splitlines()]
    assert list(first[0]) == ["input", "output", "gts", "score", "step", "uid"]
    keys = [(e["uid"].rsplit("_", 2)[0], *map(int, e["uid"].rsplit("_", 2)[1:])) for e in first]
    assert keys == sorted(keys)  # sorted by uid, session, turn, as verl dumps them
    assert current_observation(first[1]["input"]).startswith("You arrive at ")
    assert 1500 < size / lines < 3500  # ~2.3 kB a line
    log = loaders.open_log(tmp_path / "dump")
    summary = log.summary()
    assert int(summary["n_steps"].sum()) == lines
    assert summary["invalid_rate"].isna().all()  # no is_action_valid in verl's dump
    m = bench.measure(tmp_path / "dump")
    assert m["rows"] == lines and m["train_steps"] == 2
    assert m["labels"] == m["groups_last"] == 2
    assert m["unknown_reason"] and m["open_s"] > 0 and m["peak_rss_mb"] > 0
