"""Generic tables (CSV, JSON lines, Parquet) with a column mapping onto the step table.

Rows are indexed by their line in the file (CSV, JSONL) or their row number (Parquet), so a
problem found anywhere later names the line to fix.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from loaders.checks import finish_steps
from loaders.errors import LogFormatError
from loaders.files import read_bytes, regular_file
from loaders.formats import TABLE_FORMATS
from loaders.lines import TRUNCATED, decode_text, read_jsonl
from loaders.log import TableLog
from loaders.mapping import ALIASES, MappingSpec, apply_mapping, parse_mapping, require_columns
from loaders.report import LoadReport
from loaders.token_lists import lists_as_json

__all__ = ["read_table", "load_table", "open_table", "parquet_frame",
           "write_csv"]

# pandas' default NA strings; text columns (state keys, actions) keep them as text ("None" is a
# fine action), only an empty cell is missing there.
_NA_STRINGS = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_TEXT_COLUMNS = ("group_id", "traj_id", "state_key", "action", "observation", "response",
                 "env", "task")


def read_table(path: str | Path, format: str, report: LoadReport,
               text_columns: tuple[str, ...] = ()) -> tuple[pd.DataFrame, str]:
    """The raw table and what its index counts (``line`` or ``row``). ``text_columns`` are
    read as strings from CSV, so ids like ``007`` keep their zeros."""
    path = Path(path)
    if format == "jsonl":
        rows, numbers = read_jsonl(path, report)
        if not rows:
            raise LogFormatError(f"{path}: no complete row yet (its only line is unfinished)")
        return pd.DataFrame.from_records(rows, index=numbers), "line"
    if format == "csv":
        return _read_csv(path, report, text_columns), "line"
    if format == "parquet":
        try:
            table = pq.ParquetFile(regular_file(path)).read()
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        frame = parquet_frame(table, path, report)
        if frame.empty:
            raise LogFormatError(f"{path}: the file holds no rows")
        return frame, "row"
    raise ValueError(f"unknown table format {format!r}; one of {', '.join(TABLE_FORMATS)}")


def parquet_frame(table: pa.Table, path: str | Path, report: LoadReport) -> pd.DataFrame:
    """A Parquet table as a frame indexed by row number: column names must be unique, and
    binary columns must hold UTF-8 text (decoded, with a note) so no bytes reach the app.

    Raises :class:`LogFormatError` naming the column (and the first row) at fault.
    """
    names = table.schema.names
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise LogFormatError(f"{path}: column name(s) {', '.join(map(repr, repeated))} appear "
                             "more than once; each column needs its own name")
    for i, column in enumerate(table.schema):
        if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
            continue
        try:
            text = table.column(i).cast(pa.large_string())
        except pa.ArrowInvalid:
            values = table.column(i).to_pylist()
            row = next(r for r, v in enumerate(values)
                       if v is not None and not _is_utf8(v))
            raise LogFormatError(f"{path} row {row}: column {column.name!r} holds bytes that "
                                 "are not UTF-8 text") from None
        table = table.set_column(i, pa.field(column.name, pa.large_string()), text)
        report.note(f"{path}: column {column.name!r} is stored as binary; read as UTF-8 text")
    try:
        return table.to_pandas()
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        pass  # the pandas metadata asks for a dtype a column cannot take: read it as it is
    try:
        return table.to_pandas(ignore_metadata=True)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as err:
        raise LogFormatError(f"{path}: a column cannot be read into a table: {err}") from None


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read_csv(path: Path, report: LoadReport, text_columns: tuple[str, ...]) -> pd.DataFrame:
    data = read_bytes(path)
    if not data.strip():
        raise LogFormatError(f"{path}: the file is empty: no rows to read")
    text = decode_text(data, path, report)
    first_line = text[: text.find("\n")] if "\n" in text else text
    if "\r" in first_line.removesuffix("\r"):
        column = first_line.index("\r") + 1
        raise LogFormatError(f"{path}:1: the header holds a bare carriage return (\\r) at "
                             f"column {column}; column names are one line of text")
    try:
        records = csv.reader(io.StringIO(text, newline=""))
        header = next(records, [])
    except csv.Error as err:
        raise LogFormatError(f"{path}:1: malformed CSV header: {err}") from None
    repeated = sorted({n for n in header if header.count(n) > 1})
    if repeated:
        raise LogFormatError(f"{path}:1: column name(s) {', '.join(map(repr, repeated))} appear "
                             "more than once in the header; each column needs its own name")
    if not text.endswith("\n") and "\n" in text:
        cut = text.rfind("\n") + 1
        try:
            last = next(csv.reader(io.StringIO(text[cut:], newline="")), [])
            unfinished = len(last) < len(header) or text[cut:].count('"') % 2 == 1
        except csv.Error:
            unfinished = True
        if unfinished:
            report.skip(TRUNCATED, f"{path}:{text.count(chr(10), 0, cut) + 1}")
            text = text[:cut]
    try:
        na = {c: [""] if c in text_columns else _NA_STRINGS for c in header}
        frame = pd.read_csv(io.StringIO(text), dtype={c: str for c in text_columns},
                            keep_default_na=False, na_values=na)
    except pd.errors.ParserError as err:
        raise LogFormatError(f"{path}: malformed CSV: {err}".strip()) from None
    except pd.errors.EmptyDataError:
        raise LogFormatError(f"{path}: the file holds no header and no rows") from None
    except (ValueError, OverflowError, TypeError) as err:
        raise LogFormatError(f"{path}: malformed CSV: {err}") from None
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas makes the extra leading fields an index when rows are wider than the header
        raise LogFormatError(f"{path}: the rows hold more fields than the {len(header)} "
                             "columns the header names; every row needs one field per column")
    if frame.empty:
        raise LogFormatError(f"{path}: the file holds a header but no rows")
    frame.index = frame.index + 2  # line 1 is the header
    return frame


def write_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """Write a table as CSV that :func:`read_table` reads back unchanged: fields holding a
    carriage return are quoted too (pandas quotes only the delimiter, quotes and ``\n``, and a
    bare ``\r`` would end the row for every CSV reader); list cells (the per-token columns)
    are JSON lists (:func:`loaders.token_lists.lists_as_json`). Returns the text when
    ``path`` is None.
    """
    return lists_as_json(frame).to_csv(path, index=False, lineterminator="\r\n")


def load_table(path: str | Path, format: str, mapping: MappingSpec = None,
               report: LoadReport | None = None) -> pd.DataFrame:
    """Read a generic table, map its columns, validate: a step table with the report attached.

    Raises :class:`LogFormatError` (malformed file, missing field) or
    :class:`g2po.errors.StepTableError` (values breaking the schema), naming lines.
    """
    path = Path(path)
    report = report or LoadReport(str(path), format)
    mapping = parse_mapping(mapping)
    text = tuple({*(mapping.get(c, c) for c in _TEXT_COLUMNS),
                  *(a for c in _TEXT_COLUMNS for a in ALIASES.get(c, ()))})
    frame, label = read_table(path, format, report, text)
    found = list(frame.columns)
    frame = apply_mapping(frame, mapping, str(path), report)
    frame = require_columns(frame, str(path), report, found)
    frame = finish_steps(frame, str(path), report, label)
    report.warn(stacklevel=4)
    return frame


def open_table(path: str | Path, format: str, mapping: MappingSpec = None) -> TableLog:
    """A generic table opened for browsing (it is read whole: one file is one table)."""
    report = LoadReport(str(path), format)
    steps = load_table(path, format, mapping, report)
    return TableLog(Path(path), steps, format, report)
