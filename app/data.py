"""Data access for the views: which logs a path holds, opening them, and cached reads.

Small typed functions apart from rendering, and what the app may open: only paths under the
folders it was started with (:func:`allowed_path`), tables up to a row bound
(:func:`check_rows`), uploads in a per-session folder that is removed with the session.
Opened logs live in one :class:`LogCache` bounded by memory; graphs and drawn HTML are cached
with ``st.cache_resource`` (shared, never mutated: ``st.cache_data`` would pickle and copy them
on every call); small frames (summaries, one group's rows) with ``st.cache_data``. Every cached read
takes the log's ``key`` (path and format) and its ``version`` (training steps seen), so a live
run's new steps are picked up and nothing stale is shown.
"""

from __future__ import annotations

import atexit
import hashlib
import re
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

import loaders
from app.options import AppOptions
from g2po.analysis.state_graph import StateGraph, state_graph
from g2po.outcomes import OutcomeRule, TruncationHint
from g2po.params import G2POParams
from loaders.discover import log_name
from loaders.formats import LOG_FORMATS, TABLE_FORMATS, options_for
from loaders.tables import count_rows

__all__ = [
    "LogRef",
    "RefusedPathError",
    "read_options",
    "with_mapping",
    "within",
    "allowed_path",
    "find_logs",
    "with_metrics",
    "table_format",
    "check_rows",
    "log_bytes",
    "frame_bytes",
    "LogCache",
    "log_cache",
    "open_log",
    "log_version",
    "run_summary",
    "run_truncation",
    "run_metrics",
    "group_ids",
    "group_summary",
    "load_group",
    "load_train_step",
    "group_graph",
    "graph_id",
    "merge_rates",
    "upload_root",
    "session_uploads",
    "save_upload",
    "forget_uploads",
    "LOADER_ERRORS",
]

#: Errors a bad log or a bad parameter raises on purpose; views show them as messages.
LOADER_ERRORS = (loaders.LoaderError, ValueError, KeyError, TypeError, FileNotFoundError,
                 OSError, ArithmeticError)


class RefusedPathError(loaders.LoaderError):
    """A path outside the folders the app was started with. The message is the same whether
    or not the path exists, and names nothing of what it holds."""


@dataclass(frozen=True)
class LogRef:
    """A log to open: its display ``name``, ``path``, forced ``format`` (None: detect) and
    ``read``, the keyword arguments of :func:`loaders.open_log` (sorted (name, value) pairs;
    a mapping as sorted pairs too, so a ref is hashable)."""

    name: str
    path: str
    format: str | None = None
    read: tuple[tuple[str, object], ...] = ()

    @property
    def key(self) -> str:
        key = f"{self.format or 'auto'}:{self.path}"
        return f"{key}:{self.read!r}" if self.read else key

    def open_kwargs(self) -> dict:
        kwargs = dict(self.read)
        for name in ("mapping", "outcome"):  # kept as sorted pairs, so refs hash
            if kwargs.get(name):
                kwargs[name] = dict(kwargs[name])
        return kwargs


def read_options(fmt: str | None, read: tuple[tuple[str, object], ...]
                 ) -> tuple[tuple[str, object], ...]:
    """The options of ``read`` that apply to a log of format ``fmt`` (a mapping means nothing
    to a run directory, and the loaders refuse it there)."""
    applies = options_for(fmt)
    return tuple((k, v) for k, v in read if k in applies)


def with_mapping(read: tuple[tuple[str, object], ...], mapping: dict[str, str]
                 ) -> tuple[tuple[str, object], ...]:
    """``read`` with its mapping replaced by ``mapping`` (dropped when empty)."""
    rest = [(k, v) for k, v in read if k != "mapping"]
    if mapping:
        rest.append(("mapping", tuple(sorted(mapping.items()))))
    return tuple(sorted(rest))


def within(path: str | Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` (symlinks followed) is one of ``roots`` or lies under one."""
    try:
        resolved = Path(path).expanduser().resolve()
    except (OSError, RuntimeError):
        return False
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)


def allowed_path(typed: str, roots: Sequence[Path]) -> Path:
    """The resolved path of what a user typed, when it lies under ``roots``; else
    :class:`RefusedPathError` with one message for every refused path (it does not even
    repeat the path, so its length says nothing either)."""
    if within(typed, roots):
        return Path(typed).expanduser().resolve()
    raise RefusedPathError(
        "not opened: the app opens only logs under the paths it was started with (--log, "
        "--allow-dir FOLDER), the folder it was started in (while it serves this machine "
        "only) and the bundled samples")


def find_logs(path: str | Path, format: str | None = None,
              read: tuple[tuple[str, object], ...] = (),
              roots: Sequence[Path] | None = None) -> tuple[list[LogRef], list[str]]:
    """The logs under ``path`` (:func:`loaders.find_logs`: the path itself when it is a log,
    else the logs among its entries, two levels deep, like ``sample_rollouts/``) as
    :class:`LogRef` s, and notes on entries that were not logs. Each log gets the options of
    ``read`` that apply to its format. With ``roots``, entries that lead outside them
    (symbolic links) are left unopened, with a note.

    Raises :class:`loaders.NoLogFoundError` when the path does not exist or holds no log.
    """
    root = Path(path).expanduser()
    if format:
        if not root.exists():
            raise loaders.NoLogFoundError(f"{root}: no such file or directory")
        fmt = format if format != "table" else loaders.detect_format(root)
        return [LogRef(root.name or str(root), str(root.resolve()), format,
                       read_options(fmt, read))], []

    def outside(entry: Path) -> str | None:
        return None if within(entry, roots) else "leads outside the folders this app opens"

    found, notes = loaders.find_logs(root, skip=None if roots is None else outside)
    refs = [LogRef(log_name(log, root), str(log.resolve()), None,
                   read_options(fmt, read) + _curves_within(log, fmt, roots))
            for log, fmt in found.items()]
    return refs, notes


def _curves_within(log: Path, fmt: str, roots: Sequence[Path] | None
                   ) -> tuple[tuple[str, object], ...]:
    """For a log opened from the path box (``roots`` given) whose curves are looked for
    beside it (a verl dump): the curves found there when they lie under ``roots``, else none
    (``""``), so nothing outside is read."""
    if roots is None or not LOG_FORMATS[fmt].curves_beside or not log.is_dir():
        return ()
    from loaders.curves import find_curves

    curves, _ = find_curves(log)
    return (("metrics", str(curves.resolve()) if curves is not None and within(curves, roots)
             else ""),)


def with_metrics(refs: list[LogRef], path: str | Path, metrics: str) -> list[LogRef]:
    """``refs`` (found at a ``--log`` ``path``) with the training curves of ``--metrics``,
    which belong to one log: :class:`loaders.LoaderError` when ``path`` holds several."""
    if len(refs) != 1 or Path(refs[0].path) != Path(path).expanduser().resolve():
        raise loaders.LoaderError(f"--metrics {metrics}: goes with a --log that is one log; "
                                  f"{path} holds {len(refs)}")
    ref = refs[0]
    read = tuple(sorted([*((k, v) for k, v in ref.read if k != "metrics"),
                         ("metrics", str(Path(metrics).resolve()))]))
    return [LogRef(ref.name, ref.path, ref.format, read)]


def table_format(ref: LogRef) -> str | None:
    """csv / jsonl / parquet when ``ref`` is a table file (read whole to open), else None."""
    path = Path(ref.path)
    if not path.is_file():
        return None
    fmt = ref.format if ref.format not in (None, "table") else loaders.detect_format(path)
    return fmt if fmt in TABLE_FORMATS else None


def check_rows(path: str | Path, fmt: str, max_rows: int) -> None:
    """Refuse a table of more than ``max_rows`` rows before reading it, counted without
    reading it (:func:`loaders.tables.count_rows`)."""
    path = Path(path)
    rows = count_rows(path, fmt, max_rows)
    if rows is None:
        return  # the reader reports a broken file, naming it
    if rows > max_rows:
        raise loaders.LoaderError(
            f"{path.name}: more than {max_rows:,} rows; a table is read whole into memory, so "
            "the app opens tables up to --max-rows rows (write big logs as a run directory, "
            "read one group at a time, or start the app with a larger --max-rows)")


def log_bytes(log: loaders.Log) -> int:
    """The memory an opened log holds, roughly: its in-memory step tables (a table log holds
    the whole file), plus a small allowance for the listing of a run directory."""
    total = 1 << 20
    for value in vars(log).values():
        frames = [value] if isinstance(value, pd.DataFrame) else []
        if isinstance(value, dict):
            for item in value.values():
                frames += [x for x in (item if isinstance(item, tuple) else (item,))
                           if isinstance(x, pd.DataFrame)]
        total += sum(int(f.memory_usage(index=True, deep=True).sum()) for f in frames)
    return total


class LogCache:
    """Opened logs (and whole training steps read from them) kept between reruns and shared
    by every session, bounded by memory: the least recently used are dropped once the total
    passes :attr:`budget_bytes` (the newest is always kept, however big). Keys are
    :class:`LogRef` for logs, ``(log key, training step)`` for steps."""

    def __init__(self, budget_bytes: float = 2048 * 2**20) -> None:
        self.budget_bytes = budget_bytes
        self._items: OrderedDict[object, tuple[object, int]] = OrderedDict()
        self._making: dict[object, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key, make, size=log_bytes):
        """The value of ``key``, made by ``make()`` (and measured by ``size``) when absent.
        Sessions asking for the same key at once wait for one ``make()``, so a big table is
        never read twice side by side."""
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key][0]
            try:
                value = make()
                nbytes = size(value)
            finally:
                with self._lock:
                    self._making.pop(key, None)
            with self._lock:
                self._items[key] = (value, nbytes)
                while len(self._items) > 1 and self.total() > self.budget_bytes:
                    self._items.popitem(last=False)
        return value

    def drop(self, path: str) -> None:
        """Forget every opened log of ``path`` (an upload that was removed)."""
        with self._lock:
            for ref in [r for r in self._items if isinstance(r, LogRef) and r.path == path]:
                del self._items[ref]

    def total(self) -> int:
        return sum(nbytes for _, nbytes in self._items.values())

    def __len__(self) -> int:
        return len(self._items)


def frame_bytes(frame: pd.DataFrame) -> int:
    """The memory a frame holds, its text included."""
    return int(frame.memory_usage(index=True, deep=True).sum())


@st.cache_resource(show_spinner=False)
def log_cache() -> LogCache:
    """The process's :class:`LogCache` (``st.cache_resource.clear()`` empties it too)."""
    return LogCache()


def _open(ref: LogRef, max_rows: int) -> loaders.Log:
    fmt = table_format(ref)
    if fmt is not None:
        check_rows(ref.path, fmt, max_rows)
    return loaders.open_log(ref.path, ref.format, **ref.open_kwargs())


def open_log(ref: LogRef, max_rows: int = AppOptions.max_rows,
             cache_mb: float = AppOptions.cache_mb) -> loaders.Log:
    """The opened log (cheap for run directories: the manifest and a listing), from the
    process's memory-bounded cache (``cache_mb``: its budget, the same for every session).
    Tables over ``max_rows`` rows are refused unread."""
    cache = log_cache()
    cache.budget_bytes = cache_mb * 2**20
    return cache.get(ref, lambda: _open(ref, max_rows))


def log_version(log: loaders.Log) -> tuple[int, int]:
    """A token that changes when training steps are added: (count, last step)."""
    steps = log.train_steps()
    return (len(steps), steps[-1] if steps else -1)


@st.cache_data(show_spinner=False, max_entries=256)
def run_summary(_log: loaders.Log, key: str, version: tuple[int, int],
                rule: OutcomeRule | None = None) -> pd.DataFrame:
    """``Log.summary(rule)``: one row per training step under the run's outcome rule (None:
    the log's own)."""
    return _log.summary(rule)


@st.cache_data(show_spinner=False, max_entries=64)
def run_truncation(_log: loaders.Log, key: str, version: tuple[int, int],
                   rule: OutcomeRule) -> TruncationHint | None:
    """``Log.truncation_hint(rule)``: failures of the run that look cut at a step limit its
    log does not state (None: none, or the rule already counts them)."""
    return _log.truncation_hint(rule)


@st.cache_data(show_spinner=False, max_entries=256)
def run_metrics(_log: loaders.Log, key: str, version: tuple[int, int]) -> pd.DataFrame:
    """``Log.metrics()``: the scalars logged per training step (run directories)."""
    return _log.metrics()


@st.cache_data(show_spinner=False, max_entries=1024)
def group_ids(_log: loaders.Log, key: str, train_step: int) -> list[str]:
    return [str(g) for g in _log.groups(train_step)]


@st.cache_data(show_spinner=False, max_entries=1024)
def group_summary(_log: loaders.Log, key: str, train_step: int,
                  rule: OutcomeRule | None = None) -> pd.DataFrame:
    return _log.group_summary(train_step, rule)


@st.cache_data(show_spinner=False, max_entries=256)
def load_group(_log: loaders.Log, key: str, train_step: int, group_id: str) -> pd.DataFrame:
    """One group's step rows (one row group of a run directory). The loader's report stays
    on the log (the sidebar shows it), not on the frame."""
    frame = _log.load_group(train_step, group_id)
    frame.attrs = {}
    return frame


def load_train_step(_log: loaders.Log, key: str, train_step: int) -> pd.DataFrame:
    """Every row of one training step (for step-wide diagnostics and exports), kept in the
    memory-bounded :func:`log_cache` beside the logs. Not mutated."""
    def read() -> pd.DataFrame:
        frame = _log.load_step(train_step)
        frame.attrs = {}
        return frame

    return log_cache().get((key, train_step), read, frame_bytes)


@st.cache_resource(show_spinner=False, max_entries=128)
def group_graph(_log: loaders.Log, key: str, train_step: int, group_id: str,
                params: G2POParams, rule: OutcomeRule) -> StateGraph:
    """The group's state graph under ``params`` and the run's outcome ``rule`` (G2PO's
    columns on every step; the rule's cut trajectories end at the truncated terminal). Not
    mutated."""
    steps = load_group(_log, key, train_step, group_id)
    return state_graph(steps, rule=rule, params=params)


def graph_id(key: str, train_step: int, group_id: str, params: G2POParams,
             rule: OutcomeRule) -> str:
    """Names one drawn graph: the same id on a rerun means only the highlight changed."""
    digest = hashlib.sha256(repr((key, train_step, group_id, params, rule)).encode()).hexdigest()
    return digest[:20]


@st.cache_data(show_spinner=False, max_entries=64)
def merge_rates(_log: loaders.Log, key: str, version: tuple[int, int],
                state_key: str = "exact") -> pd.DataFrame:
    """:meth:`loaders.Log.merge_rates`, kept per log version and state key: a verl dump's
    comes from its summary cache (counted with the summary, in its worker processes), a run
    directory's under the exact key from two columns; other logs read every row once."""
    return _log.merge_rates(state_key)


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@st.cache_resource(show_spinner=False)
def upload_root() -> Path:
    """This server process's folder of uploaded logs, removed when the process exits (each
    session's own folder goes sooner: see :func:`session_upload_dir`)."""
    root = Path(tempfile.mkdtemp(prefix="g2po-app-uploads-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


class _Uploads:
    """Owns one session's upload folder: kept in the session's state, so the folder is
    removed when Streamlit drops the session (or the process ends)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.saved: dict[str, Path] = {}  # upload id -> file
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(folder), True)


def session_uploads(state) -> _Uploads:
    """The session's uploads (``state``: ``st.session_state``)."""
    uploads = state.get("_g2po_uploads")
    if uploads is None or not uploads.folder.is_dir():
        uploads = _Uploads(Path(tempfile.mkdtemp(prefix="s-", dir=upload_root())))
        state["_g2po_uploads"] = uploads
    return uploads


def save_upload(name: str, data: bytes, folder: Path) -> Path:
    """Store an uploaded log in ``folder`` and return its path. The file name is reduced to
    safe characters; the same name and content reuse the file on a rerun."""
    folder.mkdir(parents=True, exist_ok=True)
    safe = _SAFE_NAME.sub("_", Path(name).name).strip("._") or "upload"
    target = folder / safe
    if not target.exists() or target.stat().st_size != len(data):
        target.write_bytes(data)
    return target


def forget_uploads(uploads: _Uploads, keep: set[str]) -> list[Path]:
    """Delete the session's uploaded files whose upload is no longer in the uploader (ids in
    ``keep`` stay) and close their opened logs; returns the deleted files."""
    gone = []
    for upload_id in [u for u in uploads.saved if u not in keep]:
        path = uploads.saved.pop(upload_id)
        shutil.rmtree(path.parent, ignore_errors=True)
        log_cache().drop(str(path.resolve()))
        gone.append(path)
    return gone
