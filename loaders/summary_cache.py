"""A log's per-file trajectory tables, kept on disk between opens (Parquet and JSON, no pickle).

Summarising a verl dump reads every byte of it (gigabytes for a whole run); what that yields,
one :func:`loaders.summary.trajectory_table` per step file, is small (one row per trajectory)
and independent of the outcome rule, so it is kept: in the user cache (``$G2PO_CACHE`` or
``~/.cache/g2po``), ``summaries/<hash of the log's resolved path>.parquet``, one Parquet file
holding every file's table (with a ``train_step`` column) and, in its key-value metadata
(``g2po.summaries``, JSON), each file's name, size and modification time (ns), the report of
its reading, its number of trajectories, and its state nodes under each state-key strategy
counted so far (for the state-merge rate, read in the same pass). The log's own folder is
never written to.

A file whose size or modification time differs from its entry (or that has none: a run being
written adds files) is read again; the others come from the cache. A cache that cannot be read,
or whose content disagrees with its own entries, is not trusted: it is ignored, said so in the
log's report, and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from g2po.cache import atomic_file, user_cache_dir
from loaders.summary import TRAJECTORY_COLUMNS

__all__ = ["CACHE_VERSION", "CacheEntry", "SummaryCache", "StepTables", "CacheProblem"]

#: Bumped whenever what a cached table holds, or how it is computed, changes.
CACHE_VERSION = 2
META_KEY = b"g2po.summaries"
_FLOATS = ("reward", "invalid", "won", "done")


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_text_or_null(kind: pa.DataType) -> bool:
    return _is_text(kind) or pa.types.is_null(kind)


class CacheProblem(Exception):
    """A cache file that cannot be trusted; the message says why."""


@dataclass(frozen=True)
class CacheEntry:
    """What one log file's cached table was computed from, and what it holds.

    name : the file's name in the log's folder. train_step : its training step. size,
    mtime_ns : the file's ``stat()`` when it was read. n_traj : rows of its table. task :
    whether its table has a ``task`` column. report : its :class:`LoadReport` as plain data.
    nodes : its state nodes (:func:`loaders.log.state_nodes`) by state-key strategy and
    read options (the key the log gives them).
    """

    name: str
    train_step: int
    size: int
    mtime_ns: int
    n_traj: int
    task: bool
    report: dict
    nodes: dict[str, int]

    def fresh(self, stat: os.stat_result) -> bool:
        """Whether the file is still the one that was read."""
        return stat.st_size == self.size and stat.st_mtime_ns == self.mtime_ns


def _entry(item: object) -> CacheEntry:
    if not isinstance(item, dict):
        raise CacheProblem("a file entry is not an object")
    try:
        entry = CacheEntry(**item)
    except TypeError as err:
        raise CacheProblem(f"a file entry has other fields: {err}") from None
    whole = (entry.train_step, entry.size, entry.mtime_ns, entry.n_traj)
    if not isinstance(entry.name, str) or not isinstance(entry.report, dict) \
            or not isinstance(entry.task, bool) \
            or not isinstance(entry.nodes, dict) \
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in (*whole, *entry.nodes.values())):
        raise CacheProblem(f"the entry of {entry.name!r} has fields of the wrong type")
    return entry


class SummaryCache:
    """The cache file of one log (``kind`` names the reader, so two readers of one folder
    keep apart)."""

    def __init__(self, log_path: str | Path, kind: str = "verl"):
        self.source = str(Path(log_path).resolve())
        digest = hashlib.sha256(f"{kind}\0{self.source}".encode()).hexdigest()[:32]
        self.path = user_cache_dir() / "summaries" / f"{digest}.parquet"

    def read(self) -> tuple[dict[int, CacheEntry], pd.DataFrame] | None:
        """Each file's entry by training step, and every file's trajectory table as one frame
        (``train_step`` column, sorted by it); None when there is no cache yet. Raises
        :class:`CacheProblem` for a cache that is unreadable or inconsistent."""
        if not self.path.is_file():
            return None
        try:
            table = pq.read_table(self.path)
        except (pa.ArrowException, OSError) as err:
            raise CacheProblem(f"not a readable Parquet file ({err})") from None
        try:
            meta = json.loads((table.schema.metadata or {})[META_KEY])
        except (KeyError, ValueError, UnicodeDecodeError, RecursionError) as err:
            raise CacheProblem(f"its {META_KEY.decode()} metadata is missing or not JSON "
                               f"({type(err).__name__})") from None
        if not isinstance(meta, dict) or meta.get("version") != CACHE_VERSION:
            raise CacheProblem(f"written by another version (not {CACHE_VERSION})")
        if meta.get("source") != self.source:
            raise CacheProblem("it describes another log")
        if not isinstance(meta.get("files"), list):
            raise CacheProblem("it lists no files")
        entries = [_entry(item) for item in meta["files"]]
        by_step = {e.train_step: e for e in entries}
        if len(by_step) != len(entries):
            raise CacheProblem("two entries claim one training step")
        frame = self._frame(table)
        step = frame["train_step"].to_numpy()
        if (np.diff(step) < 0).any():
            raise CacheProblem("its rows are not in training-step order")
        found = dict(zip(*np.unique(step, return_counts=True)))
        expected = {e.train_step: e.n_traj for e in entries if e.n_traj}
        if {int(k): int(v) for k, v in found.items()} != expected:
            raise CacheProblem("its rows do not match its entries")
        return by_step, frame

    @staticmethod
    def _frame(table: pa.Table) -> pd.DataFrame:
        """The cached rows with the dtypes :func:`trajectory_table` gives, checked."""
        names = set(table.column_names)
        needed = {"train_step", *TRAJECTORY_COLUMNS}
        if not needed <= names or not names <= needed | {"task"}:
            raise CacheProblem(f"its columns are not those of a trajectory table: "
                               f"{sorted(names)}")
        schema = table.schema
        kinds = {"train_step": pa.types.is_integer, "length": pa.types.is_integer,
                 "group_id": _is_text, "traj_id": _is_text, "task": _is_text_or_null,
                 **dict.fromkeys(_FLOATS, pa.types.is_floating)}
        wrong = [n for n in sorted(names) if not kinds[n](schema.field(n).type)]
        if wrong:
            raise CacheProblem(f"column(s) {', '.join(wrong)} have the wrong type")
        try:
            frame = table.to_pandas()
            for name in ("group_id", "traj_id"):
                if frame[name].isna().any():
                    raise CacheProblem(f"column {name!r} has nulls")
                frame[name] = frame[name].astype(str)
            for name in ("train_step", "length"):
                frame[name] = frame[name].astype(np.int64)
            for name in _FLOATS:
                frame[name] = frame[name].astype(np.float64)
            if "task" in frame.columns:
                task = frame["task"].astype(object)
                frame["task"] = task.where(task.notna(), None)
        except (TypeError, ValueError, pa.ArrowException) as err:
            raise CacheProblem(f"a column has the wrong type ({err})") from None
        return frame

    def write(self, entries: dict[int, CacheEntry], rows: pd.DataFrame) -> None:
        """Store the entries and every file's table (``rows``: with ``train_step``, sorted by
        it), replacing the file atomically. Raises :class:`OSError` when the cache folder
        cannot be written."""
        frame = rows
        if "task" in frame.columns:
            frame = frame.assign(task=frame["task"].astype(object).where(frame["task"].notna(),
                                                                         None))
        arrow = pa.Table.from_pandas(frame, preserve_index=False)
        meta = {"version": CACHE_VERSION, "source": self.source,
                "files": [asdict(entry) for _, entry in sorted(entries.items())]}
        arrow = arrow.replace_schema_metadata({META_KEY: json.dumps(meta).encode("utf-8")})
        with atomic_file(self.path) as tmp:
            pq.write_table(arrow, tmp, compression="zstd")


class StepTables:
    """The trajectory tables of a log's files: one frame of all of them (``train_step``
    column, as the cache stores it and :func:`loaders.summary.step_summaries` reads it),
    cut into one step's table only when that step is asked for."""

    def __init__(self) -> None:
        self.entries: dict[int, CacheEntry] = {}
        self._rows = pd.DataFrame(columns=["train_step", *TRAJECTORY_COLUMNS])
        self._bounds: dict[int, tuple[int, int]] = {}
        self._tables: dict[int, pd.DataFrame] = {}
        self._whole = True  # _rows holds exactly the entries' tables

    def load(self, entries: dict[int, CacheEntry], rows: pd.DataFrame) -> None:
        """Take the cache's entries and rows (sorted by ``train_step``)."""
        self.entries = dict(entries)
        self._tables = {}
        self._set_rows(rows)

    def _set_rows(self, rows: pd.DataFrame) -> None:
        step = rows["train_step"].to_numpy()
        starts = np.flatnonzero(np.r_[True, step[1:] != step[:-1]]) if len(step) else []
        stops = [*starts[1:], len(step)]
        self._rows = rows
        self._bounds = {int(step[a]): (int(a), int(b)) for a, b in zip(starts, stops)}
        self._whole = True

    def put(self, entry: CacheEntry, table: pd.DataFrame) -> None:
        """A file read now: its entry and trajectory table."""
        self.entries[entry.train_step] = entry
        self._tables[entry.train_step] = table
        self._whole = False

    def drop(self, train_step: int) -> None:
        self.entries.pop(train_step, None)
        self._tables.pop(train_step, None)
        self._whole = False

    def table(self, train_step: int) -> pd.DataFrame:
        """One step's trajectory table (``task`` only where the file has labels)."""
        if train_step not in self._tables:
            lo, hi = self._bounds.get(train_step, (0, 0))
            part = self._rows.iloc[lo:hi].drop(columns="train_step").reset_index(drop=True)
            if not self.entries[train_step].task:
                part = part.drop(columns="task", errors="ignore")
            self._tables[train_step] = part
        return self._tables[train_step]

    def rows(self) -> pd.DataFrame:
        """Every step's table in one frame, ``train_step`` first, by step."""
        if not self._whole:
            steps = sorted(self.entries)
            parts = [self.table(s) for s in steps]
            rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
                columns=TRAJECTORY_COLUMNS)
            rows.insert(0, "train_step", np.repeat(np.asarray(steps, np.int64),
                                                   [len(p) for p in parts]))
            self._set_rows(rows)
        return self._rows
