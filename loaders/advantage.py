"""The advantage a trainer recorded for each step: read under its aliases, one value a step.

A log may carry the credit its trainer trained with: a column ``advantage`` (the step table's
name, :data:`g2po.steps.OPTIONAL_COLUMNS`) or ``advantages`` (verl's batch key,
:data:`loaders.mapping.ALIASES`) in a table or a run's step files, a reward extra of either
name on each line of a verl ``rollout_data_dir`` dump (verl's v1 trainer may write no extras
at all: then the log simply has none), a 2-D ``advantages`` tensor of a batch dump, or any
other column named with ``--map advantage=COLUMN``. It is a fact about the run, audited
against the recomputation (:mod:`g2po.analysis.recorded`); nothing here computes credit.

Trainers that train on tokens record one value per response token. :func:`step_values`
reduces such a list (a JSON list, or a list / array cell) to the step's one value only where
that is unambiguous, by this rule: entries equal to 0 or NaN are masked tokens (verl multiplies
the advantage by the response mask) and are left out; the step's value is the one value every
other entry shares (within a relative 1e-6), 0 when every entry is masked. A list whose
unmasked entries differ (per-token credit, GAE-style) is an error naming the row: which of
them is the step's is not for a reader to guess.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from loaders.errors import LogFormatError
from loaders.mapping import ALIASES
from loaders.report import LoadReport

__all__ = ["ADVANTAGE", "advantage_sources", "read_advantage", "step_values", "as_list"]

#: The step-table column of the recorded advantage.
ADVANTAGE = "advantage"
#: Relative spread of a step's unmasked per-token values still read as one value.
_SAME = 1e-6


def advantage_sources(columns: Sequence[str]) -> list[str]:
    """``columns`` with the aliases of :data:`ADVANTAGE` added where it is asked for, so a
    reader of a few columns also reads a recorded advantage stored under another name."""
    names = list(columns)
    if ADVANTAGE in names:
        names += [a for a in ALIASES[ADVANTAGE] if a not in names]
    return names


def read_advantage(frame: pd.DataFrame, source: str, report: LoadReport,
                   label: str = "line") -> pd.DataFrame:
    """``frame`` with its recorded advantage as the column :data:`ADVANTAGE`: taken from an
    alias when that name is absent (the report says from which), per-token lists reduced by
    :func:`step_values`. Frames without one come back unchanged."""
    if ADVANTAGE not in frame.columns:
        alias = next((a for a in ALIASES[ADVANTAGE] if a in frame.columns), None)
        if alias is None:
            return frame
        frame = frame.rename(columns={alias: ADVANTAGE})
        report.note(f"{ADVANTAGE} (the trainer's recorded advantage) read from column "
                    f"{alias!r}")
    column = frame[ADVANTAGE]
    if pd.api.types.is_numeric_dtype(column.dtype):
        return frame
    values = step_values(column, source, label)
    if values is column:
        return frame
    report.note(f"{source}: {ADVANTAGE} holds a list per step (per-token values): each "
                "reduced to the step's one value (masked 0 / NaN tokens left out)")
    return frame.assign(**{ADVANTAGE: values})


def as_list(value: object) -> object:
    """A JSON list in text becomes a list; anything else is left as it is."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return value  # not JSON: validation names the row as not numeric
    return value


def _place(source: str, label: str, row: object) -> str:
    """Where a row is, as the other readers say it: ``file:line`` or ``file row N``."""
    if label == "line":
        return f"{source}:{row}" if source else f"line {row}"
    return f"{source} {label} {row}".strip()


def step_values(column: pd.Series, source: str = "", label: str = "line") -> pd.Series:
    """(n,) recorded advantages with each per-token list reduced to the step's value (the
    module's rule); the column itself when it holds no list. Scalars and text that is not a
    list are kept for validation to judge. Raises :class:`LogFormatError` naming the row
    (``label`` and the frame's index) of an empty list, a list holding something other than
    numbers, or unmasked values that differ.

    >>> step_values(pd.Series([[0.0, 0.5, 0.5], "[0, 0]", 1.5])).tolist()
    [0.5, 0.0, 1.5]
    """
    cells = [as_list(v) for v in column.tolist()]
    is_list = np.array([isinstance(v, list | tuple | np.ndarray) for v in cells], dtype=bool)
    if not is_list.any():
        return column
    rows = np.flatnonzero(is_list)
    arrays = []
    for i in rows:
        try:
            array = np.asarray(cells[i], dtype=np.float64)
        except (TypeError, ValueError):
            array = None
        where = _place(source, label, column.index[i])
        if array is None or array.ndim != 1:
            raise LogFormatError(f"{where}: field {ADVANTAGE!r} holds a list that is not a "
                                 "flat list of numbers")
        if not len(array):
            raise LogFormatError(f"{where}: field {ADVANTAGE!r} holds an empty list: no value "
                                 "for the step")
        arrays.append(array)
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays)
    starts = np.cumsum(lengths) - lengths
    live = (flat != 0) & ~np.isnan(flat)
    low = np.minimum.reduceat(np.where(live, flat, np.inf), starts)
    high = np.maximum.reduceat(np.where(live, flat, -np.inf), starts)
    count = np.add.reduceat(live.astype(np.int64), starts)
    total = np.add.reduceat(np.where(live, flat, 0.0), starts)
    spread = np.where(count > 0, high - low, 0.0)
    differ = spread > _SAME * np.maximum(np.abs(low), np.abs(high))
    if differ.any():
        first = int(np.flatnonzero(differ)[0])
        raise LogFormatError(
            f"{_place(source, label, column.index[rows[first]])}: field {ADVANTAGE!r} holds "
            f"per-token values that differ ({low[first]:.6g} … {high[first]:.6g}; "
            f"{int(differ.sum())} step(s) so): which is the step's advantage is ambiguous; "
            "give one value per step (--map advantage=COLUMN)")
    out = pd.Series(cells, index=column.index, dtype=object)
    out.iloc[rows] = np.where(count > 0, total / np.maximum(count, 1), 0.0)
    try:
        return out.astype(np.float64)
    except (TypeError, ValueError):  # text beside the lists: validation names its rows
        return out
