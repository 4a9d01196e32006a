"""Generic tables (CSV, JSON lines, Parquet) with a column mapping onto the step table.

Rows are indexed by their line in the file (CSV, JSONL) or their row number (Parquet), so a
problem found anywhere later names the line to fix. A malformed line of a text table (a JSON
line that is no object; a CSV record with another number of fields than the header) is
skipped, reported with its ``file:line`` and its trajectory marked incomplete
(:mod:`loaders.incomplete`), unless ``strict``.
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
from loaders.incomplete import mark_incomplete
from loaders.lines import MALFORMED, TRUNCATED, decode_text, read_jsonl
from loaders.log import TableLog
from loaders.mapping import ALIASES, MappingSpec, apply_mapping, parse_mapping, require_columns
from loaders.report import LoadReport
from loaders.token_lists import lists_as_json

__all__ = ["read_table", "load_table", "open_table", "parquet_frame", "write_csv",
           "count_rows", "TABLES"]

# pandas' default NA strings; text columns (state keys, actions) keep them as text ("None" is a
# fine action), only an empty cell is missing there.
_NA_STRINGS = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_TEXT_COLUMNS = ("group_id", "traj_id", "state_key", "action", "observation", "response",
                 "env", "task")


#: The table formats this module reads.
TABLES = ("csv", "jsonl", "parquet")


def read_table(path: str | Path, format: str, report: LoadReport,
               text_columns: tuple[str, ...] = (), *, strict: bool = False,
               malformed: dict[int, str] | None = None) -> tuple[pd.DataFrame, str]:
    """The raw table and what its index counts (``line`` or ``row``). ``text_columns`` are
    read as strings from CSV, so ids like ``007`` keep their zeros. The malformed lines
    skipped (line number -> text) are put into ``malformed`` when given; ``strict`` makes
    the first an error."""
    path = Path(path)
    skipped = {} if malformed is None else malformed
    if format == "jsonl":
        read = read_jsonl(path, report, strict=strict)
        if not read.rows:
            raise LogFormatError(f"{path}: no complete row yet (its only line is unfinished)")
        skipped.update(read.malformed)
        return pd.DataFrame.from_records(read.rows, index=read.numbers), "line"
    if format == "csv":
        return _read_csv(path, report, text_columns, strict, skipped), "line"
    if format == "parquet":
        try:
            table = pq.ParquetFile(regular_file(path)).read()
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        frame = parquet_frame(table, path, report)
        if frame.empty:
            raise LogFormatError(f"{path}: the file holds no rows")
        return frame, "row"
    raise ValueError(f"unknown table format {format!r}; one of {', '.join(TABLES)}")


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


def _read_csv(path: Path, report: LoadReport, text_columns: tuple[str, ...], strict: bool,
              malformed: dict[int, str]) -> pd.DataFrame:
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
    na = {c: [""] if c in text_columns else _NA_STRINGS for c in header}
    try:
        frame = _parse_csv(text, path, header, text_columns, na)
        lines = None
        if frame.shape[1] and frame.iloc[:, -1].isna().any():  # a short record, maybe
            frame, lines = _without_malformed(text, path, header, text_columns, na, strict,
                                              malformed, frame)
    except pd.errors.ParserError as err:  # a record wider than the header
        frame, lines = _without_malformed(text, path, header, text_columns, na, strict,
                                          malformed, err)
    for line in malformed:
        report.skip(MALFORMED, f"{path}:{line}")
    if frame.empty:
        raise LogFormatError(f"{path}: the file holds a header but no rows")
    frame.index = frame.index + 2 if lines is None else pd.Index(lines)  # line 1: the header
    return frame


def _parse_csv(text: str, path: Path, header: list[str], text_columns: tuple[str, ...],
               na: dict) -> pd.DataFrame:
    """pandas' reading of CSV text (a :class:`pd.errors.ParserError` passes through)."""
    try:
        frame = pd.read_csv(io.StringIO(text), dtype={c: str for c in text_columns},
                            keep_default_na=False, na_values=na)
    except pd.errors.ParserError:
        raise
    except pd.errors.EmptyDataError:
        raise LogFormatError(f"{path}: the file holds no header and no rows") from None
    except (ValueError, OverflowError, TypeError) as err:
        raise LogFormatError(f"{path}: malformed CSV: {err}") from None
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas makes the extra leading fields an index when rows are wider than the header
        raise pd.errors.ParserError("rows wider than the header")
    return frame


def _without_malformed(text: str, path: Path, header: list[str], text_columns: tuple[str, ...],
                       na: dict, strict: bool, malformed: dict[int, str],
                       found: pd.DataFrame | Exception) -> tuple[pd.DataFrame, list[int]]:
    """The table without its malformed records (another number of fields than the header:
    put into ``malformed`` by first line), read again, and each row's first line. ``found``:
    pandas' first reading (its frame, kept when no record is malformed, or its error).
    Raises :class:`LogFormatError` under ``strict``, for a quote never closed, and for a table
    none of whose records is whole."""
    physical = text.splitlines(keepends=True)
    records = csv.reader(io.StringIO(text, newline=""))
    next(records, None)
    kept_lines: list[int] = []
    kept_text = [physical[0]] if physical else []
    bad: dict[int, str] = {}
    end = 1
    for fields in records:
        start, end = end + 1, records.line_num
        raw = "".join(physical[start - 1:end])
        if not fields:
            continue  # a blank line holds no row
        if end >= len(physical) and raw.count('"') % 2 == 1:
            raise LogFormatError(f"{path}:{start}: a quoted field opened on this line is never "
                                 "closed (the rest of the file is inside it)")
        if len(fields) != len(header):
            if strict:
                raise LogFormatError(f"{path}:{start}: malformed CSV record: {len(fields)} "
                                     f"field(s), the header names {len(header)}")
            bad[start] = raw
            continue
        kept_lines.append(start)
        kept_text.append(raw)
    if not bad:
        if isinstance(found, Exception):
            raise LogFormatError(f"{path}: malformed CSV: {found}".strip())
        return found, kept_lines
    if not kept_lines:
        first = min(bad)
        raise LogFormatError(f"{path}: no record has the {len(header)} field(s) the header "
                             f"names (line {first} has another number; every row needs one "
                             "field per column)")
    try:
        frame = _parse_csv("".join(kept_text), path, header, text_columns, na)
    except pd.errors.ParserError as err:
        raise LogFormatError(f"{path}: malformed CSV: {err}".strip()) from None
    if len(frame) != len(kept_lines):
        raise LogFormatError(f"{path}: malformed CSV: {len(bad)} record(s) with another number "
                             f"of fields than the header (first: line {min(bad)})")
    malformed.update(bad)
    return frame, kept_lines


def count_rows(path: str | Path, format: str, stop_after: int) -> int | None:
    """The rows of a table file without reading it (Parquet: from its footer; JSONL: its
    lines, 1 MiB at a time; CSV: its lines and, only when there are more than
    ``stop_after`` (quoted fields may hold newlines), its records), counting stopped past
    ``stop_after``; None where the file does not tell (its reader names the problem)."""
    path = Path(path)
    if format == "parquet":
        try:
            return pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowException, OSError):
            return None
    rows = -1 if format == "csv" else 0  # a CSV's first line is its header
    with open(path, "rb") as f:
        while rows <= stop_after and (chunk := f.read(1 << 20)):
            rows += chunk.count(b"\n")
    if format == "csv" and rows > stop_after:
        rows = -1
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            try:
                for rows, _ in enumerate(csv.reader(f)):  # the header is 0
                    if rows > stop_after:
                        break
            except csv.Error:
                return None
    return rows


def write_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """Write a table as CSV that :func:`read_table` reads back unchanged: fields holding a
    carriage return are quoted too (pandas quotes only the delimiter, quotes and ``\n``, and a
    bare ``\r`` would end the row for every CSV reader); list cells (the per-token columns)
    are JSON lists (:func:`loaders.token_lists.lists_as_json`). Returns the text when
    ``path`` is None.
    """
    return lists_as_json(frame).to_csv(path, index=False, lineterminator="\r\n")


def load_table(path: str | Path, format: str, mapping: MappingSpec = None,
               report: LoadReport | None = None, *, strict: bool = False) -> pd.DataFrame:
    """Read a generic table, map its columns, validate: a step table with the report attached.

    A malformed line is skipped and its trajectory marked incomplete, unless ``strict``.
    Raises :class:`LogFormatError` (malformed file, missing field) or
    :class:`g2po.errors.StepTableError` (values breaking the schema), naming lines.
    """
    path = Path(path)
    report = report or LoadReport(str(path), format)
    mapping = parse_mapping(mapping)
    text = tuple({*(mapping.get(c, c) for c in _TEXT_COLUMNS),
                  *(a for c in _TEXT_COLUMNS for a in ALIASES.get(c, ()))})
    malformed: dict[int, str] = {}
    frame, label = read_table(path, format, report, text, strict=strict, malformed=malformed)
    found = list(frame.columns)
    frame = apply_mapping(frame, mapping, str(path), report)
    frame = require_columns(frame, str(path), report, found)
    frame = mark_incomplete(frame, malformed, str(path), report)
    frame = finish_steps(frame, str(path), report, label)
    report.warn(stacklevel=4)
    return frame


def open_table(path: str | Path, format: str, mapping: MappingSpec = None, *,
               strict: bool = False) -> TableLog:
    """A generic table opened for browsing (it is read whole: one file is one table)."""
    report = LoadReport(str(path), format)
    steps = load_table(path, format, mapping, report, strict=strict)
    return TableLog(Path(path), steps, format, report)
