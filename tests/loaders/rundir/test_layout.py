"""What a run's ``run.json`` and ``rollouts/`` may hold, and what a reader says about the rest."""

from __future__ import annotations

import pytest

from loaders import (
    LogFormatError,
    RunWriter,
    open_log,
    open_run,
)
from tests.loaders.builders import step_table
from tests.loaders.rundir.conftest import MANIFEST


def test_manifest_problems(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.json").write_text('{"format": "g2po-run", "version": 99}')
    with pytest.raises(LogFormatError, match="version 99 is newer"):
        open_run(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "run.json").write_text('{"format": "wandb"}')
    with pytest.raises(LogFormatError, match="field 'format' is 'wandb'"):
        open_run(tmp_path / "b")
    (tmp_path / "c" / "rollouts").mkdir(parents=True)
    log = open_run(tmp_path / "c")
    assert log.train_steps() == [] and any("run.json missing" in n for n in log.report.notes)


@pytest.mark.parametrize(("manifest", "says"), [
    ('{"format": "g2po-run", "version": "1"}', "field 'version' must be a whole number"),
    ('{"format": "g2po-run", "version": 7}', "newer than this reader"),
    ("[1, 2]", "a run manifest is a JSON object"),
])
def test_manifest_problems_are_named(tmp_path, manifest, says):
    RunWriter(tmp_path / "r", MANIFEST).write_step(1, step_table())
    (tmp_path / "r" / "run.json").write_text(manifest)
    with pytest.raises(LogFormatError, match=says):
        open_run(tmp_path / "r")


def test_entries_of_rollouts_not_named_like_step_files_are_noted(tmp_path):
    (tmp_path / "r" / "rollouts").mkdir(parents=True)
    step_table().to_parquet(tmp_path / "r" / "rollouts" / "step-000001.parquet")
    for name in ("STEP-000002.PARQUET", "step-3.csv", ".step-000004.parquet.tmp-9"):
        (tmp_path / "r" / "rollouts" / name).write_bytes(b"x")
    log = open_log(tmp_path / "r")
    assert log.train_steps() == [1]
    notes = log.report.notes
    assert any("run.json missing" in n for n in notes)
    assert any("2 entr(ies) not named step-NNNNNN.parquet, not read: STEP-000002.PARQUET, "
               "step-3.csv" in n for n in notes), notes
