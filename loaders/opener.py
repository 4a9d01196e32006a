"""Opening any supported log: the format detected or checked, its options checked, the
format's own opener called (:data:`loaders.formats.LOG_FORMATS`; :func:`open_log`), and one
validated step table read through it (:func:`load_steps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from g2po.outcomes import OutcomeRule
from loaders.curves import curves_kind, find_curves
from loaders.detect import detect_format
from loaders.errors import LoaderError, NoLogFoundError
from loaders.formats import LOG_FORMATS, TABLE, TABLE_FORMATS, check_format
from loaders.log import Log
from loaders.mapping import MappingSpec

__all__ = ["open_log", "load_steps", "check_metrics", "check_outcome_overrides"]


def open_log(
    path: str | Path,
    format: str | None = None,
    *,
    mapping: MappingSpec = None,
    trust_pickle: bool = False,
    state_regex: str | None = None,
    action_regex: str | None = None,
    outcome: Mapping[str, object] | None = None,
    metrics: str | Path | None = None,
    strict: bool = False,
) -> Log:
    """Open any supported log for browsing; see :class:`loaders.log.Log` for what it offers.

    Parameters
    ----------
    path : a file or directory.
    format : one of :data:`loaders.formats.FORMATS` (``table`` = csv/jsonl/parquet by
        extension); detected from the content and name when None.
    mapping : step-table column -> source column, for tables and batch dumps: a dict, a
        YAML/JSON file, or ``["group_id=uid", …]``.
    trust_pickle : allow unpickling a batch dump (unpickling runs code from the file).
    state_regex, action_regex : verl dumps: extract the state key from ``input`` / the action
        from ``output`` (group ``state`` or 1, else the whole match; the last match counts).
    outcome : fields of :class:`g2po.outcomes.OutcomeRule` the user set (``success_reward``,
        ``success_threshold``, ``terminal``, ``truncate_at``); they override the log's own
        rule (:meth:`Log.rule`) wherever the log is summarised or estimated.
    metrics : the log's training curves, kept apart from it: verl's file-logger JSONL or a
        TensorBoard run's folder (:mod:`loaders.curves`). A verl dump without it takes the
        curves found beside it (:func:`loaders.curves.find_curves`), and says so; ``""``
        means none (nothing is looked for).
    strict : a malformed line (a JSON line that does not parse, a CSV record with another
        number of fields than its header) is an error naming it; by default it is skipped,
        reported, and its trajectory marked incomplete (:mod:`loaders.incomplete`).

    Raises
    ------
    NoLogFoundError : nothing readable at ``path``.
    LogFormatError, g2po.errors.StepTableError : the content breaks its format (messages name
        file, line and field).
    UntrustedPickleError : a pickle without ``trust_pickle``.
    """
    path = Path(path)
    fmt = check_format(format) if format else detect_format(path)
    if fmt == TABLE:
        fmt = detect_format(path)
        if fmt not in TABLE_FORMATS:
            raise LoaderError(f"{path}: --format table expects a .csv, .jsonl or .parquet file")
    if not path.exists():
        raise NoLogFoundError(f"{path}: no such file or directory")
    given = {"mapping": mapping, "state_regex": state_regex, "action_regex": action_regex}
    _check_options(fmt, **given)
    given["trust_pickle"] = trust_pickle or None  # a flag for every log given: pickles take it
    overrides = check_outcome_overrides(outcome)
    entry = LOG_FORMATS[fmt]
    if path.is_dir() and entry.folder is None:
        raise LoaderError(f"{path}: a {fmt} log is a file, not a directory")
    log = entry.open(path, strict=bool(strict),
                     **{k: v for k, v in given.items() if v is not None and k in entry.options})
    log.strict = bool(strict)
    log.outcome_overrides = overrides
    if metrics == "":
        pass
    elif metrics is not None:
        log.metrics_source = check_metrics(metrics)
    elif entry.curves_beside and path.is_dir():
        log.metrics_source, notes = find_curves(path)
        for note in notes:
            log._base_report.note(note)
    return log


def check_metrics(path: str | Path) -> Path:
    """A ``--metrics`` path, checked to hold training curves; :class:`LoaderError` says what
    it holds instead."""
    path = Path(path).expanduser()
    try:
        curves_kind(path)
    except NoLogFoundError as err:
        raise LoaderError(f"--metrics {err}") from None
    return path


def check_outcome_overrides(outcome: Mapping[str, object] | None) -> dict[str, object]:
    """The user's outcome-rule fields, checked: a :class:`LoaderError` names a bad one."""
    overrides = {k: v for k, v in (outcome or {}).items() if v is not None}
    unknown = sorted(set(overrides) - set(OutcomeRule.__dataclass_fields__))
    if unknown:
        raise LoaderError(f"outcome rule: unknown field(s) {', '.join(unknown)}; known: "
                          f"{', '.join(OutcomeRule.__dataclass_fields__)}")
    try:
        OutcomeRule(**overrides)
    except ValueError as err:
        raise LoaderError(f"outcome rule: {err}") from None
    return overrides


def _check_options(fmt: str, **options) -> None:
    ok = LOG_FORMATS[fmt].options
    wrong = [k for k, v in options.items() if v is not None and k not in ok]
    if wrong:
        raise LoaderError(f"option(s) {', '.join(wrong)} do not apply to a {fmt} log")


def load_steps(
    path: str | Path,
    format: str | None = None,
    *,
    train_step: int | None = None,
    group_id: str | None = None,
    **options,
) -> pd.DataFrame:
    """One validated step table from any supported log: all of it, or one training step, or
    one group (read alone where the format allows: a run directory reads one row group).

    ``options`` are those of :func:`open_log`. The frame carries its
    :class:`LoadReport` in ``frame.attrs["load_report"]``.

    >>> import tempfile, pathlib
    >>> from g2po.synthetic import synthetic_steps
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "steps.csv"
    >>> synthetic_steps(300).to_csv(p, index=False)
    >>> load_steps(p)["group_id"].nunique()
    1
    """
    log = open_log(path, format, **options)
    return log.load(train_step=train_step, group_id=group_id)
