"""The log formats the loaders read, each one registered object (:class:`LogFormat`): how it
is detected, opened, mapped and described, in one place.

:data:`LOG_FORMATS` holds them in detection order. :func:`loaders.detect.detect_format` walks
it (a folder: each entry's ``folder`` part; a file: each entry's ``file`` part, on what was
read of the file once, :class:`Sniff`), :func:`loaders.open_log` opens with the entry's
``open`` part and the options it takes, and messages, ``--format``, ``g2po validate`` and the
app (uploads, the mapping form, the live watcher, the curves beside a dump) read its other
parts. A new format is one entry here, beside its reader; ``tests/loaders/test_formats.py``
walks the registry and fails on an entry that lacks a part.

Importing this module imports no reader (nor pandas: the ``g2po`` command lists the names
for ``--format`` at once); each entry's ``folder``, ``file`` and ``open`` parts import their
reader when called.

>>> [f.name for f in LOG_FORMATS.values() if f.table]
['csv', 'jsonl', 'parquet']
>>> format_words("verl")
'a verl rollout dump'
>>> upload_types()
['csv', 'jsonl', 'ndjson', 'json', 'parquet', 'pq']
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from loaders.errors import LoaderError, NoLogFoundError

if TYPE_CHECKING:
    from loaders.log import Log

__all__ = ["LogFormat", "Sniff", "LOG_FORMATS", "FORMATS", "TABLE", "TABLE_FORMATS",
           "FORMAT_CHOICES", "COMMON_OPTIONS", "EXPECTED", "CURVES_GIVEN_AS_LOG",
           "check_format", "format_words", "options_for", "upload_types"]


@dataclass(frozen=True)
class Sniff:
    """What detection reads of a file, once: its ``path``, its lower-case ``suffix`` and its
    first bytes (``head``, at most :data:`loaders.files.SNIFF_BYTES`)."""

    path: Path
    suffix: str
    head: bytes
    #: whether ``head`` is the whole file
    whole: bool

    @cached_property
    def first(self) -> bytes:
        """The first line that is not blank, stripped."""
        return next((line.strip() for line in self.head.split(b"\n") if line.strip()), b"")

    @cached_property
    def first_complete(self) -> bool:
        """Whether :attr:`first` is a whole line (the head holds its end)."""
        return b"\n" in self.head or self.whole

    @cached_property
    def first_parses(self) -> bool:
        """Whether :attr:`first` is a whole line that parses as JSON."""
        return self.first_complete and _json_object(self.first) is not _NOT_JSON

    @cached_property
    def record(self) -> dict | None:
        """The first of the head's whole lines (up to 20) that is a JSON object: a malformed
        first line does not hide what the file is."""
        lines = [line.strip() for line in self.head.split(b"\n")]
        if not self.whole:
            lines = lines[:-1]  # the head's last line may be cut
        for line in [x for x in lines if x][:20]:
            value = _json_object(line)
            if isinstance(value, dict):
                return value
        return None


_NOT_JSON = object()


def _json_object(line: bytes) -> object:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return _NOT_JSON


@dataclass(frozen=True)
class LogFormat:
    """One log format, every part the product asks of it.

    Attributes
    ----------
    name : the format's name (``--format`` value, ``Log.format``, ``g2po validate``'s
        ``format``).
    words : how a message names a log of it ("read X as a CSV table").
    expected : what a path of this format holds, for a message listing what a log is.
    open : ``open(path, **options)`` -> :class:`loaders.log.Log`: the reader, called with
        the options of :attr:`options` the user set and ``strict``.
    folder : whether a directory is a log of this format (None: only files are).
    file : whether a file is, from a :class:`Sniff` (may raise
        :class:`~loaders.errors.NoLogFoundError` where the name claims the format and the
        content refuses it); None: only folders are.
    text : whether its files are text: detection tries it only after the checks every text
        log passes (not empty, not binary).
    suffixes : file-name endings (lower case) that mark a file of this format.
    sniffed : endings whose files may be of this format; their content decides (a ``.json``
        file is JSON lines or some other JSON document).
    options : keyword arguments of :func:`loaders.open_log` that apply to it, besides
        :data:`COMMON_OPTIONS` (``mapping``: mapped onto the step table by a column mapping).
    table : one generic table (read by :mod:`loaders.tables`; ``--format table`` picks it by
        the file's name; the app offers it for uploads and a mapping form for its columns).
    step_files : one file per training step, which grows while a run writes it: checked in
        worker processes by ``g2po validate``, watched for new steps by the app.
    curves_beside : training curves are looked for beside it when none are given
        (:func:`loaders.curves.find_curves`).
    """

    name: str
    words: str
    expected: str
    open: Callable[..., Log]
    folder: Callable[[Path], bool] | None = None
    file: Callable[[Sniff], bool] | None = None
    text: bool = False
    suffixes: tuple[str, ...] = ()
    sniffed: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    table: bool = False
    step_files: bool = False
    curves_beside: bool = False


# -- the run directory -------------------------------------------------------------------------

def _open_run(path: Path, *, strict: bool = False) -> Log:
    from loaders.rundir.reader import open_run

    return open_run(path)  # Parquet has no lines; strict reaches metrics.jsonl (open_log)


def _run_folder(path: Path) -> bool:
    from loaders.rundir.layout import is_run_dir

    return is_run_dir(path)


def _run_file(sniff: Sniff) -> bool:
    from loaders.rundir.layout import MANIFEST

    return sniff.path.name == MANIFEST


# -- verl dumps --------------------------------------------------------------------------------

def _open_verl(path: Path, *, state_regex: str | None = None, action_regex: str | None = None,
               strict: bool = False) -> Log:
    from loaders.verl_dump import open_verl_dump

    return open_verl_dump(path, state_regex=state_regex, action_regex=action_regex,
                          strict=strict)


def _verl_folder(path: Path) -> bool:
    from loaders.verl import verl_step_files

    return bool(verl_step_files(path))


def _verl_file(sniff: Sniff) -> bool:
    """JSON lines whose first object has verl's fields (not named as a CSV file)."""
    from loaders.verl import is_verl_record

    return sniff.suffix not in _CSV_SUFFIXES and sniff.first.startswith(b"{") and \
        sniff.record is not None and is_verl_record(sniff.record)


# -- tables ------------------------------------------------------------------------------------

_CSV_SUFFIXES = (".csv",)
_JSONL_SUFFIXES, _JSONL_SNIFFED = (".jsonl", ".ndjson"), (".json",)
_PARQUET_SUFFIXES = (".parquet", ".pq")


def _table_opener(name: str) -> Callable[..., Log]:
    def open_table(path: Path, *, mapping=None, strict: bool = False) -> Log:
        from loaders.tables import open_table as read

        return read(path, name, mapping, strict=strict)

    open_table.__doc__ = f"Open a {name} table with its column mapping."
    return open_table


def _csv_file(sniff: Sniff) -> bool:
    """``.csv``; or, without a suffix, comma-separated text that is not a JSON object."""
    return sniff.suffix in _CSV_SUFFIXES or (
        not sniff.suffix and b"," in sniff.first and not sniff.first.startswith(b"{"))


def _jsonl_file(sniff: Sniff) -> bool:
    """A JSON-lines name or a first line that opens an object; the content must agree."""
    if sniff.suffix not in (*_JSONL_SUFFIXES, *_JSONL_SNIFFED) and \
            not sniff.first.startswith(b"{"):
        return False
    if not sniff.first.startswith(b"{"):
        raise NoLogFoundError(f"{sniff.path}: not JSON lines (its first line is not a JSON "
                              f"object); {EXPECTED}")
    # A malformed first line of a .jsonl is the reader's to report, with its number; a .json
    # file that is not one object per line is some other JSON document.
    if sniff.suffix in _JSONL_SNIFFED and sniff.first_complete and not sniff.first_parses:
        raise NoLogFoundError(f"{sniff.path}: a JSON document, not JSON lines (one object "
                              f"per line); {EXPECTED}")
    from loaders.curves import is_file_logger_line

    if is_file_logger_line(sniff.record):
        raise NoLogFoundError(CURVES_GIVEN_AS_LOG.format(path=sniff.path))
    return True


#: What a file of training curves given as a log is, and how to give it.
CURVES_GIVEN_AS_LOG = (
    "{path}: verl's file-logger metrics (training curves: one {{\"step\": N, \"data\": "
    "{{…}}}} line per step), not rollouts. Give it with --metrics after the --log of the dump "
    "it belongs to (g2po validate DUMP --metrics FILE; streamlit run app/main.py -- --log "
    "DUMP --metrics FILE); a dump finds it by itself when it lies beside it")


def _parquet_file(sniff: Sniff) -> bool:
    if sniff.head[:4] == b"PAR1":
        return True
    if sniff.suffix in _PARQUET_SUFFIXES:
        raise NoLogFoundError(f"{sniff.path}: not a Parquet file (it does not start with PAR1)")
    return False


# -- pickled batch dumps -----------------------------------------------------------------------

def _open_pickle(path: Path, *, mapping=None, trust_pickle: bool = False,
                 strict: bool = False) -> Log:
    from loaders.pickles import open_pickle

    return open_pickle(path, trust_pickle=trust_pickle, mapping=mapping)


def _pickle_folder(path: Path) -> bool:
    from loaders.files import is_regular_file
    from loaders.pickles import PICKLE_SUFFIXES

    return any(p.suffix.lower() in PICKLE_SUFFIXES and is_regular_file(p)
               for p in path.iterdir())


def _pickle_file(sniff: Sniff) -> bool:
    from loaders.pickles import PICKLE_SUFFIXES, is_pickle_bytes

    return is_pickle_bytes(sniff.head) or sniff.suffix in PICKLE_SUFFIXES


#: Every format, in the order ``--format`` and messages list them. Detection tries those
#: that are not :attr:`~LogFormat.text` first, then the text ones (after the checks every text
#: log passes), each in this order.
LOG_FORMATS: dict[str, LogFormat] = {f.name: f for f in (
    LogFormat("run", "a g2po run directory",
              "a g2po run directory (run.json, rollouts/step-*.parquet)",
              _open_run, folder=_run_folder, file=_run_file, step_files=True),
    LogFormat("verl", "a verl rollout dump",
              "a verl dump directory ({global_step}.jsonl files)", _open_verl,
              folder=_verl_folder, file=_verl_file, text=True,
              options=("state_regex", "action_regex"), step_files=True, curves_beside=True),
    LogFormat("csv", "a CSV table", "a .csv step table", _table_opener("csv"),
              file=_csv_file, text=True, suffixes=_CSV_SUFFIXES, options=("mapping",),
              table=True),
    LogFormat("jsonl", "a JSON-lines table", "a .jsonl step table", _table_opener("jsonl"),
              file=_jsonl_file, text=True, suffixes=_JSONL_SUFFIXES, sniffed=_JSONL_SNIFFED,
              options=("mapping",), table=True),
    LogFormat("parquet", "a Parquet table", "a .parquet step table", _table_opener("parquet"),
              file=_parquet_file, suffixes=_PARQUET_SUFFIXES, options=("mapping",),
              table=True),
    LogFormat("pickle", "a pickled batch dump", "a .pkl batch dump", _open_pickle,
              folder=_pickle_folder, file=_pickle_file, options=("mapping", "trust_pickle")),
)}
FORMATS = tuple(LOG_FORMATS)
#: The ``--format`` value for any generic table, told apart by the file's name.
TABLE = "table"
TABLE_FORMATS = tuple(f.name for f in LOG_FORMATS.values() if f.table)
FORMAT_CHOICES = (*FORMATS, TABLE)
#: Options of :func:`loaders.open_log` that apply to every format (and to a log whose format
#: is not known yet).
COMMON_OPTIONS = ("outcome", "metrics", "strict")
#: What a path must hold to be a log, for messages that found none.
EXPECTED = "expected " + ", ".join(f.expected for f in list(LOG_FORMATS.values())[:-1]) \
    + " or " + list(LOG_FORMATS.values())[-1].expected


def check_format(format: str) -> str:
    """Validate a ``--format`` value (``table`` is accepted for any of csv/jsonl/parquet)."""
    if format not in FORMAT_CHOICES:
        raise LoaderError(f"unknown format {format!r}; one of {', '.join(FORMATS)}")
    return format


def format_words(name: str) -> str:
    """How a message names a log of format ``name`` (the name itself when unknown)."""
    known = LOG_FORMATS.get(name)
    return known.words if known else name


def options_for(name: str | None) -> tuple[str, ...]:
    """The options of :func:`loaders.open_log` that apply to a log of format ``name`` (None:
    not known yet, only :data:`COMMON_OPTIONS`)."""
    known = LOG_FORMATS.get(name) if name else None
    return (*COMMON_OPTIONS, *(known.options if known else ()))


def upload_types() -> list[str]:
    """The file endings (no dot) of the tables an upload may be: every table format's names
    and sniffed names."""
    return [s.removeprefix(".") for f in LOG_FORMATS.values() if f.table
            for s in (*f.suffixes, *f.sniffed)]
