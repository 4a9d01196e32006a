"""Files the export view offers: the per-step advantage table as CSV or Parquet bytes."""

from __future__ import annotations

import io

import pandas as pd

__all__ = ["table_bytes", "guard_formulas", "EXPORT_FORMATS", "FORMULA_START"]

EXPORT_FORMATS = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
#: A text cell starting with one of these is read as a formula by spreadsheet programs
#: (CSV injection): log text, e.g. a web page's, could run ``=HYPERLINK(…)`` or worse.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def guard_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (and column names) that start like a formula carry
    a leading ``'``, which spreadsheets show as text and do not evaluate. Numbers are untouched
    (a negative number is not text)."""
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if isinstance(column.dtype, pd.StringDtype):
            text = column
        elif column.dtype == object:  # mixed values: only the strings are text
            text = column.where(column.map(lambda v: isinstance(v, str)), None).astype("str")
        else:
            continue
        risky = text.str.startswith(FORMULA_START, na=False).to_numpy(dtype=bool)
        if risky.any():
            out[name] = column.astype(object).mask(risky, "'" + text.astype(object))
    out.columns = [f"'{c}" if isinstance(c, str) and c.startswith(FORMULA_START) else c
                   for c in out.columns]
    return out


def table_bytes(frame: pd.DataFrame, fmt: str, *, guard: bool = True) -> bytes:
    """``frame`` serialised as ``csv`` (UTF-8, no index; with ``guard``, text cells that would
    run as spreadsheet formulas are quoted, see :func:`guard_formulas`) or ``parquet`` (no
    index, the values as they are: no program evaluates Parquet cells)."""
    if fmt == "csv":
        return (guard_formulas(frame) if guard else frame).to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
