"""Reading a log across training steps: which group of each training step holds which task, and
one group per training step with only the columns asked for.

A task (one game, one instruction) gets a new group id at every training step in many trainers,
so following it across training means matching it step by step. The match comes from the
``task`` column where the log has one, else from the group id itself (for runs that keep group
ids stable across training steps). For run directories it is read from the step files' footers:
the ``g2po.step`` layout names each group's row group, and Parquet's column statistics give that
row group's task when the row group holds one group (min = max); only row groups packing several
small groups have their two columns (``group_id``, ``task``) read. No step rows are loaded.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from g2po.steps import REQUIRED_COLUMNS
from loaders.checks import finish_steps
from loaders.errors import LoaderError, LogFormatError
from loaders.files import file_key
from loaders.incomplete import INCOMPLETE
from loaders.log import Log
from loaders.report import LoadReport
from loaders.rundir.footer import META_KEY
from loaders.rundir.reader import Run

__all__ = ["TaskIndex", "task_index", "task_column", "load_groups", "load_groups_coded",
           "TASK_COLUMN", "HISTORY_COLUMNS"]

#: The step-table column that names a task across training steps.
TASK_COLUMN = "task"
#: The columns a state's history needs: the required ones (the estimator's inputs) and the step.
HISTORY_COLUMNS = ("train_step", *REQUIRED_COLUMNS, INCOMPLETE)
_THREADS = 4
#: (path, mtime_ns, size) → the file's ``g2po.step`` group layout and {group_id: task}; small,
#: kept for many files. A rewritten file has a new key and is read anew.
_LAYOUTS: dict[tuple[str, int, int], tuple[list[dict], dict[str, str] | None]] = {}
_LAYOUTS_MAX = 16384
#: The parsed footers themselves (~0.3 MiB each in memory: string statistics), for the files
#: read most recently, so that reading groups after matching tasks does not parse them again.
_FOOTERS: OrderedDict[tuple[str, int, int], pq.FileMetaData] = OrderedDict()
_FOOTERS_MAX = 256
_LOCK = threading.Lock()


@dataclass(frozen=True)
class TaskIndex:
    """Which group of each training step holds which task.

    by : what identifies a task across training steps: ``task`` (the column) or ``group_id``.
    table : one row per (train_step, group_id): ``train_step`` (int), ``group_id`` (str),
        ``task`` (str; the group id itself when ``by`` is ``group_id``), sorted by step and group.
    """

    by: str
    table: pd.DataFrame

    def tasks(self) -> list[str]:
        """Every task, the one seen at the most training steps first (ties by name)."""
        counts = self.table.groupby("task", sort=True)["train_step"].nunique()
        return counts.sort_values(ascending=False, kind="stable").index.tolist()

    def task_of(self, train_step: int, group_id: str) -> str:
        """The task of one group; raises :class:`LoaderError` naming the group if unknown."""
        hit = self.table[(self.table["train_step"] == train_step) &
                         (self.table["group_id"] == str(group_id))]
        if hit.empty:
            raise LoaderError(f"training step {train_step} has no group {str(group_id)!r}")
        return str(hit["task"].iloc[0])

    def groups_of(self, task: str, prefer: Mapping[int, str] | None = None) -> pd.DataFrame:
        """One group per training step where ``task`` occurs: columns train_step, group_id,
        n_groups (groups of the task that step). Where a step holds the task in several
        groups, the one ``prefer`` names for that step (the group the user came from) when it
        is one of them, else the first by group id."""
        rows = self.table[self.table["task"] == str(task)]
        counts = rows.groupby("train_step")["group_id"].transform("size")
        rows = rows.assign(n_groups=counts.to_numpy())
        if prefer:
            wanted = rows["train_step"].map({int(k): str(v) for k, v in prefer.items()})
            first = (rows["group_id"] == wanted).to_numpy()
            rows = rows.assign(_first=~first).sort_values(["train_step", "_first", "group_id"],
                                                          kind="stable")
        out = rows.drop_duplicates("train_step")
        return out[["train_step", "group_id", "n_groups"]].reset_index(drop=True)

    def groups_at(self, task: str, train_step: int) -> list[str]:
        """Every group holding ``task`` at ``train_step``, by id (several trainers give one
        task several groups in a training step)."""
        rows = self.table[(self.table["task"] == str(task)) &
                          (self.table["train_step"] == int(train_step))]
        return rows["group_id"].astype(str).tolist()

    def shared_steps(self, task: str) -> dict[int, list[str]]:
        """Training step → its groups, for the steps that hold ``task`` in several groups."""
        rows = self.table[self.table["task"] == str(task)]
        groups = rows.groupby("train_step")["group_id"].agg(list)
        return {int(s): [str(g) for g in gs] for s, gs in groups.items() if len(gs) > 1}


def task_column(log: Log) -> str:
    """``task`` when the log's step rows carry a task column, else ``group_id``."""
    steps = log.train_steps()
    if not steps:
        return "group_id"
    if isinstance(log, Run):
        path = log.step_file(steps[-1])
        try:
            names = pq.read_schema(path).names
        except (pa.ArrowInvalid, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        return TASK_COLUMN if TASK_COLUMN in names else "group_id"
    columns = log.trajectories(steps[-1]).columns  # a verl dump reads only what it needs
    return TASK_COLUMN if TASK_COLUMN in columns else "group_id"


def task_index(log: Log, by: str | None = None) -> TaskIndex:
    """The task of every group of every training step of ``log``.

    ``by``: ``task`` or ``group_id``; None picks :func:`task_column`. For run directories only
    footers are read (and the two columns of row groups that pack several groups); other logs
    are tables in memory and are read directly.
    """
    by = by or task_column(log)
    if by not in (TASK_COLUMN, "group_id"):
        raise ValueError(f"tasks are matched by 'task' or 'group_id', got {by!r}")
    steps = log.train_steps()
    if by == "group_id":
        maps = [{str(g): str(g) for g in log.groups(step)} for step in steps]
    elif isinstance(log, Run):  # footers parsed in threads (pyarrow releases the GIL)
        paths = [log.step_file(step) for step in steps]
        with ThreadPoolExecutor(max_workers=_THREADS) as pool:
            maps = list(pool.map(_run_step_tasks, paths))
    else:
        maps = [_table_step_tasks(log, step) for step in steps]
    counts = [len(m) for m in maps]
    table = pd.DataFrame({
        "train_step": np.repeat(np.asarray(steps, dtype=np.int64), counts),
        "group_id": pd.array([g for m in maps for g in m], dtype=str),
        "task": pd.array([t for m in maps for t in m.values()], dtype=str),
    })
    return TaskIndex(by, table.sort_values(["train_step", "group_id"]).reset_index(drop=True))


def _table_step_tasks(log: Log, step: int) -> dict[str, str]:
    """{group: task} of one step, from its trajectory table (a group's first task; a group
    without one is a task of its own, named by its id)."""
    rows = log.trajectories(step)
    if TASK_COLUMN not in rows.columns:
        raise LoaderError(f"{log.path}: training step {step} has no column {TASK_COLUMN!r}; "
                          "match tasks by group_id instead")
    task = rows.groupby("group_id", sort=True)[TASK_COLUMN].first()
    named = task.where(task.notna(), task.index.to_series())
    return dict(zip(named.index.astype(str), named.astype(str), strict=True))


def _file_meta(path: Path) -> tuple[tuple[str, int, int], pq.FileMetaData, list[dict]]:
    """A step file's cache key, parsed footer and ``g2po.step`` group layout (empty when the
    file was written by another tool). Safe to call from several threads."""
    key = (str(path), *file_key(path))
    with _LOCK:
        meta = _FOOTERS.get(key)
        known = _LAYOUTS.get(key)
        if meta is not None:
            _FOOTERS.move_to_end(key)
    if meta is not None and known is not None:
        return key, meta, known[0]
    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError) as err:
        raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
    layout = json.loads((meta.metadata or {}).get(META_KEY, b"{}")).get("groups", [])
    with _LOCK:
        _FOOTERS[key] = meta
        while len(_FOOTERS) > _FOOTERS_MAX:
            _FOOTERS.popitem(last=False)
        if key not in _LAYOUTS:
            if len(_LAYOUTS) >= _LAYOUTS_MAX:
                _LAYOUTS.clear()
            _LAYOUTS[key] = (layout, None)
    return key, meta, layout


def _run_step_tasks(path: Path) -> dict[str, str]:
    """group_id → task of one step file, from its footer where the statistics suffice."""
    known = _LAYOUTS.get((str(path), *file_key(path)))
    if known is not None and known[1] is not None:  # matched before: no footer needed
        return known[1]
    key, meta, layout = _file_meta(path)
    names = meta.schema.to_arrow_schema().names
    if TASK_COLUMN not in names:
        raise LoaderError(f"{path}: no column {TASK_COLUMN!r}; match tasks by group_id instead")
    column = names.index(TASK_COLUMN)
    mapping: dict[str, str] = {}
    unresolved: set[int] = set()
    for entry in layout:
        rg = entry.get("row_group")
        if rg is None:
            unresolved.add(-1)
            continue
        stats = meta.row_group(rg).column(column).statistics
        if stats is not None and stats.has_min_max and stats.min == stats.max and \
                stats.null_count == 0:
            mapping[str(entry["group_id"])] = str(stats.min)
        else:
            unresolved.add(int(rg))
    if unresolved or not layout:
        mapping.update(_read_tasks(path, None if (-1 in unresolved or not layout)
                                   else sorted(unresolved)))
    with _LOCK:
        _LAYOUTS[key] = (layout, mapping)
    return mapping


def _read_tasks(path: Path, row_groups: list[int] | None) -> dict[str, str]:
    """group_id → task from the two columns (of some row groups, or the whole file)."""
    try:
        file = pq.ParquetFile(path)
        table = (file.read(columns=["group_id", TASK_COLUMN]) if row_groups is None else
                 file.read_row_groups(row_groups, columns=["group_id", TASK_COLUMN]))
    except (pa.ArrowInvalid, OSError) as err:
        raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
    frame = table.to_pandas().drop_duplicates("group_id")
    return dict(zip(frame["group_id"].astype(str), frame[TASK_COLUMN].astype(str), strict=True))


def load_groups_coded(log: Log, pairs: Iterable[tuple[int, str]],
                      columns: Sequence[str] = HISTORY_COLUMNS) -> tuple[pd.DataFrame, list[str]]:
    """:func:`load_groups` with each state key replaced by its number in a list of the distinct
    keys (returned beside the frame; ``state_key`` holds the number as text).

    Observations are long and a task has few distinct ones: for run directories the keys are
    read as Parquet dictionaries and never expanded into one string per step, which is most of
    the cost of reading a task across hundreds of training steps.
    """
    pairs = [(int(s), str(g)) for s, g in pairs]
    if not isinstance(log, Run) or not pairs:
        frame = load_groups(log, pairs, columns)
        if frame.empty:
            return frame, []
        codes, uniques = pd.factorize(frame["state_key"], sort=False)
        return frame.assign(state_key=pd.array(codes.astype(str), dtype=str)), \
            [str(u) for u in uniques]
    table = _read_groups(log, pairs, columns, dictionary=True)
    keys = table.column("state_key").unify_dictionaries()
    dictionary = keys.chunk(0).dictionary if keys.num_chunks else pa.array([], pa.string())
    codes = pa.chunked_array([c.indices for c in keys.chunks], type=keys.type.index_type)
    table = table.set_column(table.schema.get_field_index("state_key"), "state_key",
                             codes.cast(pa.string()))
    report = LoadReport(str(log.path), log.format)
    frame = finish_steps(table.to_pandas(), str(log.path), report, label="row")
    return frame, dictionary.to_pylist()


def load_groups(log: Log, pairs: Iterable[tuple[int, str]],
                columns: Sequence[str] = HISTORY_COLUMNS) -> pd.DataFrame:
    """The step rows of several (train_step, group_id) groups, one frame, validated, with only
    ``columns`` (those the log has; the required ones always).

    For run directories each group is one row group read with column projection (the text
    columns a history does not need, observations and responses, stay on disk), several files
    at once in threads; other logs go through ``Log.load_group``.
    """
    pairs = [(int(s), str(g)) for s, g in pairs]
    if not pairs:
        return pd.DataFrame(columns=list(columns))
    if not isinstance(log, Run):
        frames = [log.load_group(s, g) for s, g in pairs]
        frame = pd.concat(frames, ignore_index=True)
        keep = [c for c in columns if c in frame.columns]
        return frame[keep]

    table = _read_groups(log, pairs, columns, dictionary=False)
    report = LoadReport(str(log.path), log.format)
    return finish_steps(table.to_pandas(), str(log.path), report, label="row")


def _read_groups(log: Run, pairs: list[tuple[int, str]], columns: Sequence[str],
                 dictionary: bool) -> pa.Table:
    """The groups' rows as one Arrow table (``state_key`` dictionary-encoded with
    ``dictionary``), one row group per group, files read in threads."""

    def one(pair: tuple[int, str]) -> pa.Table:
        step, group = pair
        path = log.step_file(step)
        _, meta, layout = _file_meta(path)
        entry = next((g for g in layout if g["group_id"] == group), None)
        if entry is None:
            if not layout:  # another tool's file: no layout, filter by the column
                entry = {}
            else:
                log._no_group(step, group, log.groups(step))
        try:
            file = pq.ParquetFile(path, metadata=meta,
                                  read_dictionary=["state_key"] if dictionary else None)
            names = file.schema_arrow.names
            wanted = [c for c in columns if c in names]
            if "row_group" in entry:
                table = file.read_row_group(entry["row_group"], columns=wanted)
                table = table.slice(entry["start"], entry["stop"] - entry["start"])
            else:
                table = pq.read_table(path, columns=wanted, filters=[("group_id", "==", group)],
                                      read_dictionary=["state_key"] if dictionary else None)
        except (pa.ArrowInvalid, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        if "train_step" not in table.column_names:
            table = table.append_column("train_step", pa.array(np.full(len(table), step)))
        return table.replace_schema_metadata(None)

    with ThreadPoolExecutor(max_workers=min(_THREADS, len(pairs))) as pool:
        tables = list(pool.map(one, pairs))
    return pa.concat_tables(tables, promote_options="permissive")
