"""Naming the logs found under a folder: the rule the app's sidebar and ``g2po url`` share."""

from __future__ import annotations

from pathlib import Path

import pytest

from loaders.discover import distinct_names, find_logs, log_name
from tests.loaders.builders import step_table


def test_a_log_is_named_by_its_path_below_the_folder_it_was_found_in(tmp_path):
    for sub in ("a/steps.csv", "exp/b.csv", "c.csv"):
        (tmp_path / sub).parent.mkdir(parents=True, exist_ok=True)
        step_table().to_csv(tmp_path / sub, index=False)
    found, _ = find_logs(tmp_path)
    assert sorted(log_name(log, tmp_path) for log in found) == ["a/steps.csv", "c.csv",
                                                                 "exp/b.csv"]
    one = tmp_path / "a" / "steps.csv"
    assert log_name(one, one) == "steps.csv"
    assert log_name(tmp_path / "a" / ".", tmp_path / "a" / ".") == "a"  # named where it is


@pytest.mark.parametrize(("names", "paths", "want"), [
    (["r", "r"], ["/a/x/r", "/a/y/r"], ["x/r", "y/r"]),
    (["r", "r", "s"], ["/a/r", "/a/r", "/a/s"], ["r", "r (2)", "s"]),  # one path, two options
])
def test_distinct_names(names, paths, want):
    assert distinct_names(names, paths) == want
    assert Path(paths[0]).name == names[0]
