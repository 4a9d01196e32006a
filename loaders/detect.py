"""Which format a path holds, told by its content first and its name second."""

from __future__ import annotations

import json
from pathlib import Path

from loaders.errors import LoaderError, NoLogFoundError
from loaders.files import SNIFF_BYTES, is_regular_file, read_prefix
from loaders.pickles import PICKLE_SUFFIXES, is_pickle_bytes
from loaders.rundir import MANIFEST, ROLLOUTS, is_run_dir
from loaders.verl import is_verl_record, verl_step_files

__all__ = ["FORMATS", "detect_format", "check_format"]

#: ``run`` (g2po run directory), ``verl`` (rollout_data_dir dumps), generic tables, ``pickle``.
FORMATS = ("run", "verl", "csv", "jsonl", "parquet", "pickle")
_EXPECTED = ("expected a g2po run directory (run.json, rollouts/step-*.parquet), a verl dump "
             "directory ({global_step}.jsonl files), or a .csv / .jsonl / .parquet table, or a "
             ".pkl batch dump")


_TEXT_SUFFIXES = (".csv", ".jsonl", ".ndjson", ".json")


def _binary(head: bytes, text_suffix: bool) -> bool:
    """Whether a file's first bytes are no text: for a file named like a text log, mostly
    bytes that are not UTF-8 (a few bad bytes or NULs are text with flaws the reader reports);
    for any other name, any NUL byte."""
    if not text_suffix:
        return b"\0" in head
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > 0.1 * max(len(text), 1)


def check_format(format: str) -> str:
    """Validate a ``--format`` value (``table`` is accepted for any of csv/jsonl/parquet)."""
    if format not in (*FORMATS, "table"):
        raise LoaderError(f"unknown format {format!r}; one of {', '.join(FORMATS)}")
    return format


def detect_format(path: str | Path) -> str:
    """The format of a file or directory, one of :data:`FORMATS`.

    Directories: ``run.json`` or ``rollouts/`` makes a run, ``N.jsonl`` files a verl dump,
    ``.pkl`` files a batch dump. Files (regular ones only; only a bounded prefix is read):
    Parquet and pickle by their first bytes; JSON lines whose first object has verl's fields
    (input, output, score) are a verl dump; then the extension, checked against the content
    (a ``.parquet`` without Parquet's magic bytes, a ``.jsonl`` whose first line is no JSON
    object, binary bytes in a text file are no log). Raises :class:`NoLogFoundError` when
    nothing fits.
    """
    path = Path(path)
    if not path.exists():
        raise NoLogFoundError(f"{path}: no such file or directory")
    if path.is_dir():
        if is_run_dir(path):
            return "run"
        if verl_step_files(path):
            return "verl"
        if any(p.suffix.lower() in PICKLE_SUFFIXES and is_regular_file(p)
               for p in path.iterdir()):
            return "pickle"
        found = sorted(p.name for p in path.iterdir())[:8]
        hint = f" (a run's {ROLLOUTS}/ folder? pass the run directory, {path.parent})" \
            if path.name == ROLLOUTS and any(n.startswith("step-") for n in found) else ""
        raise NoLogFoundError(f"{path}: no logs found in this directory; {_EXPECTED}. "
                              f"It holds: {', '.join(found) if found else 'nothing'}{hint}")
    if path.name == MANIFEST:
        return "run"
    suffix = path.suffix.lower()
    head = read_prefix(path)  # refuses FIFOs and devices before opening them
    if head[:4] == b"PAR1":
        return "parquet"
    if suffix in (".parquet", ".pq"):
        raise NoLogFoundError(f"{path}: not a Parquet file (it does not start with PAR1)")
    if is_pickle_bytes(head) or suffix in PICKLE_SUFFIXES:
        return "pickle"
    if not head:
        if suffix in (".csv", ".jsonl", ".ndjson"):
            return suffix.removeprefix(".").replace("ndjson", "jsonl")  # the reader says empty
        raise NoLogFoundError(f"{path}: the file is empty; {_EXPECTED}")
    if _binary(head, text_suffix=suffix in _TEXT_SUFFIXES):
        raise NoLogFoundError(f"{path}: binary content, not a text log; {_EXPECTED}")
    first = next((line.strip() for line in head.split(b"\n") if line.strip()), b"")
    complete = b"\n" in head or len(head) < SNIFF_BYTES
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json") or first.startswith(b"{"):
        if not first.startswith(b"{"):
            raise NoLogFoundError(f"{path}: not JSON lines (its first line is not a JSON "
                                  f"object); {_EXPECTED}")
        try:
            record = json.loads(first) if complete else None
        except (ValueError, RecursionError):
            # A malformed first line of a .jsonl is reported by the reader, with its number;
            # a .json file that is not one object per line is some other JSON document.
            if suffix == ".json":
                raise NoLogFoundError(f"{path}: a JSON document, not JSON lines (one object "
                                      f"per line); {_EXPECTED}") from None
            record = None
        return "verl" if isinstance(record, dict) and is_verl_record(record) else "jsonl"
    if b"," in first and not suffix:  # a name without extension, holding comma-separated text
        return "csv"
    raise NoLogFoundError(f"{path}: unknown log format (pass --format); {_EXPECTED}")
