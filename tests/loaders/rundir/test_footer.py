"""A step file's footer: row groups holding whole groups, a damaged footer, a file without one."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from loaders import (
    LogFormatError,
    RunWriter,
    open_log,
    open_run,
)
from loaders.rundir import META_KEY, step_path
from tests.loaders.builders import step_table
from tests.loaders.rundir.conftest import MANIFEST


def test_small_groups_share_row_groups(tmp_path):
    steps = step_table(groups=40, trajs=2, length=2)
    RunWriter(tmp_path / "r", {}).write_step(1, steps)
    assert pq.ParquetFile(step_path(tmp_path / "r", 1)).num_row_groups == 1
    log = open_run(tmp_path / "r")
    assert len(log.load_group(1, "g17")) == (steps["group_id"] == "g17").sum()


def test_corrupt_footer_is_an_error_naming_the_file_when_browsing(tmp_path):
    from tests.loaders.builders import rewrite_footer

    writer = RunWriter(tmp_path / "r", MANIFEST)
    writer.write_step(1, step_table(groups=3))
    rewrite_footer(step_path(tmp_path / "r", 1), b'{"groups": [')
    run = open_run(tmp_path / "r")
    for browse in (lambda: run.groups(1), lambda: run.load_group(1, "g0")):
        with pytest.raises(LogFormatError, match="step-000001.parquet: the footer's g2po.step "
                                                 "metadata is not JSON"):
            browse()


def test_step_file_from_another_tool(tmp_path):
    """A Parquet step file without our footer: summaries from its columns, groups by filter."""
    (tmp_path / "r" / "rollouts").mkdir(parents=True)
    steps = step_table(groups=3, train_step=5)
    steps.to_parquet(tmp_path / "r" / "rollouts" / "step-000005.parquet", index=False)
    log = open_log(tmp_path / "r")
    assert log.summary()["n_steps"].tolist() == [len(steps)]
    assert log.groups(5) == ["g0", "g1", "g2"]
    assert len(log.load_group(5, "g1")) == (steps["group_id"] == "g1").sum()
    assert META_KEY not in (pq.read_metadata(step_path(tmp_path / "r", 5)).metadata or {})
