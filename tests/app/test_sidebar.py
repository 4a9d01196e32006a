"""The sidebar's group picker: groups named by their task where the log has one."""

from __future__ import annotations

import re

from tests.app.builders import app_test
from tests.loaders.builders import agent_loop_entries, write_verl_dump


def test_verl_groups_are_listed_by_their_gts_task_name(tmp_path):
    dump = tmp_path / "rollout_data"
    entries = agent_loop_entries(1, prompts=3)
    for e in entries:
        prompt = int(e["uid"].split("_")[0][-1])
        e["gts"] = f"pick_and_place-Mug-{prompt}" if prompt < 2 else {"answer": 4}
    write_verl_dump(dump, 1, entries)
    at = app_test("group", ["--log", str(dump)])
    assert not at.exception
    picker = at.selectbox(key=f"group:auto:{dump.resolve()}:1")
    labels = picker.options
    assert len(labels) == 3
    named = [label for label in labels if label.startswith("pick_and_place-Mug-")]
    assert len(named) == 2  # a structured gts names nothing: that group shows its id
    assert all(re.search(r" · success \d+% of \d+$", label) for label in labels), labels
    assert sorted(n.split(" · ")[0] for n in named) == ["pick_and_place-Mug-0",
                                                       "pick_and_place-Mug-1"]
