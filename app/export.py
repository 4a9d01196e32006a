"""Files the export view offers: the per-step advantage table as CSV or Parquet bytes, and how
it was computed (the estimators with every parameter, the state key, the source), stored in the
Parquet file's metadata or, for CSV, in a JSON sidecar file."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import g2po
from g2po.estimators import estimator_params
from loaders import write_csv

__all__ = ["table_bytes", "guard_formulas", "export_metadata", "metadata_bytes",
           "read_parquet_metadata", "EXPORT_FORMATS", "FORMULA_START", "METADATA_KEY"]

EXPORT_FORMATS = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
#: A text cell starting with one of these is read as a formula by spreadsheet programs
#: (CSV injection): log text, e.g. a web page's, could run ``=HYPERLINK(…)`` or worse.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: The Parquet schema-metadata key holding :func:`export_metadata`'s JSON.
METADATA_KEY = b"g2po.export"


def export_metadata(estimators: dict[str, dict], columns: dict[str, list[str]],
                    state_key: str, source: dict) -> dict:
    """How an exported table was computed: for each estimator its ``params`` (every parameter
    it takes: the defaults, overridden by ``estimators[name]``) and the ``columns`` it wrote;
    the ``state_key`` strategy; the ``source`` (run, path, training step, group); the g2po
    version and the time of export."""
    return {
        "format": "g2po-advantages",
        "g2po_version": g2po.__version__,
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source,
        "state_key": state_key,
        "estimators": [{"name": name,
                        "params": {**_plain_defaults(name), **params},
                        "columns": columns.get(name, [])}
                       for name, params in estimators.items()],
    }


def _plain_defaults(name: str) -> dict:
    out = {}
    for param, value in estimator_params(name).items():
        if isinstance(value, (int, float, str, bool)) or value is None:
            out[param] = value
    return out


def metadata_bytes(metadata: dict) -> bytes:
    """The CSV's sidecar file: the metadata as indented UTF-8 JSON."""
    return (json.dumps(metadata, indent=2, ensure_ascii=False, default=str) + "\n").encode()


def read_parquet_metadata(data: bytes | str) -> dict | None:
    """The export metadata of a Parquet file (bytes or a path), or None when it has none."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    meta = pq.read_schema(source).metadata or {}
    return json.loads(meta[METADATA_KEY]) if METADATA_KEY in meta else None


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


def table_bytes(frame: pd.DataFrame, fmt: str, *, guard: bool = True,
                metadata: dict | None = None) -> bytes:
    """``frame`` serialised as ``csv`` (UTF-8, no index, by :func:`loaders.write_csv`
    so that our reader reads it back unchanged; with ``guard``, text cells that would
    run as spreadsheet formulas are quoted, see :func:`guard_formulas`; ``metadata`` goes in
    the sidecar, :func:`metadata_bytes`) or ``parquet`` (no index, the values as they are: no
    program evaluates Parquet cells; ``metadata`` as JSON under :data:`METADATA_KEY`)."""
    if fmt == "csv":
        return write_csv(guard_formulas(frame) if guard else frame).encode("utf-8")
    if fmt == "parquet":
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if metadata is not None:
            table = table.replace_schema_metadata({
                **(table.schema.metadata or {}),
                METADATA_KEY: json.dumps(metadata, ensure_ascii=False, default=str).encode()})
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        return buffer.getvalue()
    raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
