"""The log formats the loaders read, named once: what detection returns, what ``--format``
accepts, how messages name each, the file names that mark it and the options that apply to it.

Detection (:mod:`loaders.detect`), :func:`loaders.open_log`, ``g2po validate``, the CLI's
``--format`` and "read … as …" line and the app's open-logs form all read this table; a new
format is added here first.

>>> [f.name for f in LOG_FORMATS.values() if f.table]
['csv', 'jsonl', 'parquet']
>>> format_words("verl")
'a verl rollout dump'
>>> upload_types()
['csv', 'jsonl', 'ndjson', 'json', 'parquet', 'pq']
"""

from __future__ import annotations

from dataclasses import dataclass

from loaders.errors import LoaderError

__all__ = ["LogFormat", "LOG_FORMATS", "FORMATS", "TABLE", "TABLE_FORMATS", "FORMAT_CHOICES",
           "COMMON_OPTIONS", "EXPECTED", "check_format", "format_words", "options_for",
           "upload_types"]


@dataclass(frozen=True)
class LogFormat:
    """One log format.

    Attributes
    ----------
    name : the format's name (``--format`` value, ``Log.format``, ``g2po validate``'s
        ``format``).
    words : how a message names a log of it ("read X as a CSV table").
    suffixes : file-name endings (lower case) that mark a file of this format.
    sniffed : endings whose files may be of this format; their content decides
        (a ``.json`` file is JSON lines or some other JSON document).
    options : keyword arguments of :func:`loaders.open_log` that apply to it, besides
        :data:`COMMON_OPTIONS`.
    table : one generic table (read by :mod:`loaders.tables`; ``--format table`` picks it
        by the file's name).
    """

    name: str
    words: str
    suffixes: tuple[str, ...] = ()
    sniffed: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    table: bool = False


#: Every format, in the order ``--format`` and messages list them.
LOG_FORMATS: dict[str, LogFormat] = {f.name: f for f in (
    LogFormat("run", "a g2po run directory"),
    LogFormat("verl", "a verl rollout dump", options=("state_regex", "action_regex")),
    LogFormat("csv", "a CSV table", (".csv",), options=("mapping",), table=True),
    LogFormat("jsonl", "a JSON-lines table", (".jsonl", ".ndjson"), (".json",),
              options=("mapping",), table=True),
    LogFormat("parquet", "a Parquet table", (".parquet", ".pq"), options=("mapping",),
              table=True),
    LogFormat("pickle", "a pickled batch dump", (".pkl", ".pickle"),
              options=("mapping", "trust_pickle")),
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
EXPECTED = ("expected a g2po run directory (run.json, rollouts/step-*.parquet), a verl dump "
            "directory ({global_step}.jsonl files), or a .csv / .jsonl / .parquet table, or a "
            ".pkl batch dump")


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
