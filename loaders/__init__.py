"""Readers that turn the logs users already have into the step table (see :mod:`g2po.steps`).

Formats: the project's own run directory (:mod:`loaders.rundir`), verl's
``trainer.rollout_data_dir`` dumps (:mod:`loaders.verl`), generic CSV / JSONL / Parquet tables
with a column mapping (:mod:`loaders.tables`), and trusted pickled batch dumps of
verl-agent-style code bases (:mod:`loaders.pickles`). Two entry points:

- :func:`open_log` opens any of them for browsing (training steps, groups, one group's rows)
  without reading rows it is not asked for;
- :func:`load_steps` returns one validated step table (all of it, one training step, or one
  group);

and :func:`find_logs` lists the logs under a folder (the rule the app's path box uses).
Files are opened through :mod:`loaders.files`: special files are refused unopened, reads are
bounded.

Skipped rows and assumptions are recorded in a :class:`LoadReport`: ``log.report`` on an opened
log, and on every frame as plain data in ``frame.attrs["load_report"]`` (read it back with
:func:`report_of`).

The names are imported on first use (PEP 562): a module that needs only
:mod:`loaders.formats` (the ``g2po`` command's ``--format`` choices) does not import pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from g2po.lazy import lazy_names

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports them
    from loaders.curves import read_curves
    from loaders.detect import detect_format
    from loaders.discover import find_logs
    from loaders.errors import LoaderError, LogFormatError, NoLogFoundError, UntrustedPickleError
    from loaders.formats import FORMATS, LOG_FORMATS, LogFormat
    from loaders.log import Log, TableLog
    from loaders.mapping import parse_mapping
    from loaders.opener import check_metrics, check_outcome_overrides, load_steps, open_log
    from loaders.pickles import load_pickle
    from loaders.report import LoadReport, LoadWarning, report_of
    from loaders.rundir import Run, RunWriter, open_run
    from loaders.summary import GROUP_SUMMARY_COLUMNS, SUMMARY_COLUMNS
    from loaders.tables import load_table, write_csv
    from loaders.validate import Validation, validate_log

#: Each public name and the module it comes from (the names of ``__all__``).
_SOURCES = {
    "open_log": "loaders.opener",
    "load_steps": "loaders.opener",
    "check_outcome_overrides": "loaders.opener",
    "check_metrics": "loaders.opener",
    "read_curves": "loaders.curves",
    "detect_format": "loaders.detect",
    "find_logs": "loaders.discover",
    "write_csv": "loaders.tables",
    "FORMATS": "loaders.formats",
    "LOG_FORMATS": "loaders.formats",
    "LogFormat": "loaders.formats",
    "Log": "loaders.log",
    "TableLog": "loaders.log",
    "Run": "loaders.rundir",
    "RunWriter": "loaders.rundir",
    "open_run": "loaders.rundir",
    "LoadReport": "loaders.report",
    "LoadWarning": "loaders.report",
    "report_of": "loaders.report",
    "LoaderError": "loaders.errors",
    "LogFormatError": "loaders.errors",
    "NoLogFoundError": "loaders.errors",
    "UntrustedPickleError": "loaders.errors",
    "parse_mapping": "loaders.mapping",
    "validate_log": "loaders.validate",
    "Validation": "loaders.validate",
    "load_table": "loaders.tables",
    "load_pickle": "loaders.pickles",
    "SUMMARY_COLUMNS": "loaders.summary",
    "GROUP_SUMMARY_COLUMNS": "loaders.summary",
}

__all__ = [
    "open_log",
    "load_steps",
    "check_outcome_overrides",
    "check_metrics",
    "read_curves",
    "detect_format",
    "find_logs",
    "write_csv",
    "FORMATS",
    "LOG_FORMATS",
    "LogFormat",
    "Log",
    "TableLog",
    "Run",
    "RunWriter",
    "open_run",
    "LoadReport",
    "LoadWarning",
    "report_of",
    "LoaderError",
    "LogFormatError",
    "NoLogFoundError",
    "UntrustedPickleError",
    "parse_mapping",
    "validate_log",
    "Validation",
    "load_table",
    "load_pickle",
    "SUMMARY_COLUMNS",
    "GROUP_SUMMARY_COLUMNS",
]


__getattr__, __dir__ = lazy_names(__name__, _SOURCES, globals(), __all__)
