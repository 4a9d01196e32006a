"""Which format a path holds, told by its content first and its name second."""

from __future__ import annotations

import json
from pathlib import Path

from loaders.errors import NoLogFoundError
from loaders.files import SNIFF_BYTES, is_regular_file, read_prefix
from loaders.formats import EXPECTED, LOG_FORMATS
from loaders.pickles import is_pickle_bytes
from loaders.rundir.layout import MANIFEST, ROLLOUTS, is_run_dir
from loaders.verl import is_verl_record, verl_step_files

__all__ = ["detect_format", "is_rollouts_folder"]

_CSV, _JSONL, _PARQUET, _PICKLE = (LOG_FORMATS[n] for n in ("csv", "jsonl", "parquet", "pickle"))
_TEXT_SUFFIXES = (*_CSV.suffixes, *_JSONL.suffixes, *_JSONL.sniffed)


def _binary(head: bytes, text_suffix: bool) -> bool:
    """Whether a file's first bytes are no text: for a file named like a text log, mostly
    bytes that are not UTF-8 (a few bad bytes or NULs are text with flaws the reader reports);
    for any other name, any NUL byte."""
    if not text_suffix:
        return b"\0" in head
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > 0.1 * max(len(text), 1)


def is_rollouts_folder(path: str | Path) -> bool:
    """A run's ``rollouts/`` folder (named so, holding ``step-`` files): its run directory is
    the log, not each step file."""
    path = Path(path)
    return path.name == ROLLOUTS and path.is_dir() and \
        any(p.name.startswith("step-") for p in path.iterdir())


def detect_format(path: str | Path) -> str:
    """The format of a file or directory, one of :data:`loaders.formats.FORMATS`.

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
        if any(p.suffix.lower() in _PICKLE.suffixes and is_regular_file(p)
               for p in path.iterdir()):
            return "pickle"
        found = sorted(p.name for p in path.iterdir())[:8]
        hint = f" (a run's {ROLLOUTS}/ folder? pass the run directory, {path.parent})" \
            if is_rollouts_folder(path) else ""
        raise NoLogFoundError(f"{path}: no logs found in this directory; {EXPECTED}. "
                              f"It holds: {', '.join(found) if found else 'nothing'}{hint}")
    if path.name == MANIFEST:
        return "run"
    suffix = path.suffix.lower()
    head = read_prefix(path)  # refuses FIFOs and devices before opening them
    if head[:4] == b"PAR1":
        return "parquet"
    if suffix in _PARQUET.suffixes:
        raise NoLogFoundError(f"{path}: not a Parquet file (it does not start with PAR1)")
    if is_pickle_bytes(head) or suffix in _PICKLE.suffixes:
        return "pickle"
    if not head:
        for named in (_CSV, _JSONL):
            if suffix in named.suffixes:
                return named.name  # the reader says empty
        raise NoLogFoundError(f"{path}: the file is empty; {EXPECTED}")
    if _binary(head, text_suffix=suffix in _TEXT_SUFFIXES):
        raise NoLogFoundError(f"{path}: binary content, not a text log; {EXPECTED}")
    first = next((line.strip() for line in head.split(b"\n") if line.strip()), b"")
    complete = b"\n" in head or len(head) < SNIFF_BYTES
    if suffix in _CSV.suffixes:
        return "csv"
    if suffix in (*_JSONL.suffixes, *_JSONL.sniffed) or first.startswith(b"{"):
        if not first.startswith(b"{"):
            raise NoLogFoundError(f"{path}: not JSON lines (its first line is not a JSON "
                                  f"object); {EXPECTED}")
        try:
            record = json.loads(first) if complete else None
        except (ValueError, RecursionError):
            # A malformed first line of a .jsonl is reported by the reader, with its number;
            # a .json file that is not one object per line is some other JSON document.
            if suffix in _JSONL.sniffed:
                raise NoLogFoundError(f"{path}: a JSON document, not JSON lines (one object "
                                      f"per line); {EXPECTED}") from None
            record = None
        return "verl" if isinstance(record, dict) and is_verl_record(record) else "jsonl"
    if b"," in first and not suffix:  # a name without extension, holding comma-separated text
        return "csv"
    raise NoLogFoundError(f"{path}: unknown log format (pass --format); {EXPECTED}")
