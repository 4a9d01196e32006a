"""The registry of log formats: every entry has every part, and detection and opening walk it."""

from __future__ import annotations

import inspect
import pickle
from pathlib import Path

import pytest

import loaders
from loaders import RunWriter, detect_format, open_log
from loaders.formats import (
    COMMON_OPTIONS,
    EXPECTED,
    FORMAT_CHOICES,
    LOG_FORMATS,
    TABLE_FORMATS,
    LogFormat,
    Sniff,
    options_for,
)
from tests.loaders.builders import agent_loop_entries, step_table, write_verl_dump


def _sample(name: str, root: Path) -> Path:
    """A small log of format ``name``, on disk under ``root``."""
    steps = step_table(train_step=1)
    writers = {
        "run": lambda: RunWriter(root / "run", {}).write_step(1, steps).parents[1],
        "verl": lambda: write_verl_dump(root / "dump", 1, agent_loop_entries(1)).parent,
        "csv": lambda: steps.to_csv(root / "s.csv", index=False) or root / "s.csv",
        "jsonl": lambda: steps.to_json(root / "s.jsonl", orient="records", lines=True)
        or root / "s.jsonl",
        "parquet": lambda: steps.to_parquet(root / "s.parquet") or root / "s.parquet",
        "pickle": lambda: (root / "s.pkl").write_bytes(pickle.dumps(steps)) and root / "s.pkl",
    }
    return writers[name]()


@pytest.mark.parametrize("name", list(LOG_FORMATS))
def test_every_format_has_every_part(name):
    entry = LOG_FORMATS[name]
    assert isinstance(entry, LogFormat) and entry.name == name
    assert entry.words and entry.expected and entry.expected in EXPECTED
    assert entry.folder is not None or entry.file is not None, "no way to detect it"
    assert callable(entry.open), "no way to open it"
    takes = set(inspect.signature(entry.open).parameters)
    assert takes == {"path", "strict", *entry.options}, "open takes other options"
    known = set(inspect.signature(loaders.open_log).parameters)
    assert set(entry.options) <= known and set(COMMON_OPTIONS) <= known
    assert set(options_for(name)) == {*COMMON_OPTIONS, *entry.options}
    if entry.table:
        assert entry.suffixes and "mapping" in entry.options and entry.file is not None
    assert all(s.startswith(".") and s == s.lower() for s in (*entry.suffixes, *entry.sniffed))
    assert name in FORMAT_CHOICES


@pytest.mark.parametrize("name", list(LOG_FORMATS))
def test_each_format_is_detected_and_opened_through_its_entry(tmp_path, name):
    path = _sample(name, tmp_path)
    assert detect_format(path) == name
    options = {"trust_pickle": True} if "trust_pickle" in LOG_FORMATS[name].options else {}
    log = open_log(path, **options)
    assert log.format == name and log.train_steps() == [1]
    rows = len(agent_loop_entries(1)) if name == "verl" else len(step_table())
    assert len(log.load_step(1)) == rows


def test_the_table_formats_are_the_tables_the_table_reader_reads():
    from loaders.tables import TABLES

    assert set(TABLE_FORMATS) == set(TABLES)


def test_a_verl_file_whose_first_line_is_malformed_is_still_a_verl_dump(tmp_path):
    path = write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    lines = path.read_text().splitlines(keepends=True)
    path.write_text('{"input": "cut\n' + "".join(lines[1:]))
    assert detect_format(path) == "verl"
    sniff = Sniff(path, ".jsonl", path.read_bytes(), whole=True)
    assert not sniff.first_parses and sniff.record is not None


def test_the_registry_module_imports_no_reader():
    import subprocess
    import sys

    code = ("import sys, loaders.formats; print(sorted(m for m in sys.modules if "
            "m.startswith(('loaders.', 'pandas', 'numpy')) and m != 'loaders.formats'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "['loaders.errors']"


def test_training_curves_given_as_a_log_say_what_they_are(tmp_path, capsys):
    import json

    from g2po.cli import main

    path = tmp_path / "exp.jsonl"
    path.write_text("".join(json.dumps({"step": s, "data": {"a": 1.0}}) + "\n" for s in (1, 2)))
    with pytest.raises(loaders.NoLogFoundError, match="verl's file-logger metrics.*--metrics"):
        detect_format(path)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "not rollouts. Give it with --metrics after the --log of the dump" in out
    write_verl_dump(tmp_path / "d", 1, agent_loop_entries(1))
    found, notes = loaders.find_logs(tmp_path)  # beside a dump: its curves, not a run
    assert list(found) == [tmp_path / "d"]
    assert any("exp.jsonl: verl's file-logger metrics" in n for n in notes)
