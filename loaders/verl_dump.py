"""A verl rollout dump directory opened for browsing (:class:`VerlDump`), or one dump file.

The directory's files are read by :mod:`loaders.verl`; a dump directory is summarised
without reading its text (:mod:`loaders.verl_scan`), and the summaries are kept between opens
(:mod:`loaders.summary_cache`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule
from g2po.state_keys import resolve_state_key
from loaders.errors import LogFormatError, NoLogFoundError
from loaders.files import file_key, part_stat
from loaders.lines import MALFORMED
from loaders.log import MERGE_RATE_COLUMNS, Log, TableLog
from loaders.report import LoadReport, attach_report
from loaders.summary import step_summaries
from loaders.summary_cache import CacheEntry, CacheProblem, StepTables, SummaryCache
from loaders.verl import load_verl_file, verl_step_files
from loaders.verl_scan import scan_columns, scan_files
from loaders.workers import map_ahead

__all__ = ["VerlDump", "open_verl_dump"]


class VerlDump(Log):
    """A verl rollout dump directory of ``{global_step}.jsonl`` files, read one training step
    at a time; the last two steps read are kept in memory. (One dump file alone is opened as a
    table: see :func:`open_verl_dump`.)

    Summaries (:meth:`trajectories`, :meth:`summary`, :meth:`groups`) read only the fields
    they need, files in parallel (:mod:`loaders.verl_scan`), and are kept on disk
    (:mod:`loaders.summary_cache`, unless ``summary_cache`` is False): a later open reads
    again only the files that changed or were added. The same pass counts each file's state
    nodes under the exact state key, so :meth:`merge_rates` comes with the summary; another
    strategy is counted (in the workers, kept on disk beside it) when first asked for.

    A malformed line is skipped and its trajectory marked incomplete (:mod:`loaders.incomplete`)
    wherever the dump is read; with ``strict`` it is an error naming the line (a file whose
    summary was cached with a skipped line is read again, to say so).
    """

    format = "verl"

    def __init__(self, path: str | Path, *, state_regex: str | None = None,
                 action_regex: str | None = None, strict: bool = False,
                 summary_cache: bool = True):
        path = Path(path)
        if not path.is_dir():
            raise NoLogFoundError(f"{path}: no such directory")
        super().__init__(path, {"format": "verl", "source": str(path)},
                         LoadReport(str(path), self.format))
        self.options = {"state_regex": state_regex, "action_regex": action_regex,
                         "strict": strict}
        self.strict = strict
        self._cache: dict[int, tuple[tuple[int, int], pd.DataFrame]] = {}
        #: each step file's trajectory table, and what the file was when read
        self._tables = StepTables()
        self._store = SummaryCache(path) if summary_cache else None
        self._store_read = False
        self._store_dirty = False
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        """Re-list the dump files. Empty files (verl opens a step's file, then writes it) hold
        no rows yet: they are left out of the training steps, and the report says so."""
        files = verl_step_files(self.path)
        if not files:
            raise NoLogFoundError(f"{self.path}: no verl dump files ({{global_step}}.jsonl)")
        empty = sorted(s for s, p in files.items() if p.stat().st_size == 0)
        if empty:
            self._base_report.note(f"{len(empty)} empty dump file(s) left out (steps being "
                             f"dumped?): {', '.join(files[s].name for s in empty[:5])}")
        self._files = {s: p for s, p in files.items() if s not in empty}
        if not self._files:
            raise LogFormatError(f"{self.path}: every verl dump file is empty; no rows yet")
        self.has_train_steps = True

    def train_steps(self) -> list[int]:
        return sorted(self._files)

    def trajectories(self, train_step: int) -> pd.DataFrame:
        """:func:`loaders.summary.trajectory_table` of one step file, from the fields it needs
        (kept in memory and on disk until the file changes); ``task`` = the lines' ``gts``
        where it is a short string."""
        self._check_step(train_step)
        return self._trajectory_tables([train_step])[train_step]

    def groups(self, train_step: int) -> list[str]:
        return sorted(self.trajectories(train_step)["group_id"].unique().tolist())

    def summary(self, rule: OutcomeRule | None = None) -> pd.DataFrame:
        """:meth:`Log.summary`, from every step file's trajectory table in one pass."""
        rule = rule or self.rule()
        with self._lock:
            self._fresh_tables(self.train_steps())
            rows = self._tables.rows()
        return step_summaries(rows, rule)

    def merge_rates(self, state_key: str = "exact") -> pd.DataFrame:
        """:meth:`Log.merge_rates`, from the state nodes the summary pass counted (kept on
        disk with the summaries): instant once :meth:`summary` ran under the exact key; a
        strategy not counted yet reads the files again, in worker processes."""
        if not isinstance(state_key, str):
            return super().merge_rates(state_key)
        resolve_state_key(state_key)  # an unknown strategy is an error before any reading
        key = self._nodes_key(state_key)
        steps = self.train_steps()
        with self._lock:
            self._fresh_tables(steps, (state_key,))
            nodes = [self._tables.entries[s].nodes[key] for s in steps]
            rows = self._tables.rows()
        lengths = rows.groupby("train_step", sort=True)["length"].sum()
        n_rows = lengths.reindex(steps, fill_value=0).to_numpy()
        return pd.DataFrame({"train_step": steps, "merge_rate": merge_rate(
            np.asarray(nodes, dtype=np.float64), n_rows)}, columns=MERGE_RATE_COLUMNS)

    def _nodes_key(self, state_key: str) -> str:
        """The name a file's node count under ``state_key`` is kept by: the strategy, and the
        ``state_regex`` the keys were extracted with."""
        regex = self.options["state_regex"]
        if isinstance(regex, re.Pattern):
            regex = f"{regex.pattern} (flags {regex.flags})"
        return state_key if regex is None else json.dumps([state_key, str(regex)])

    def _trajectory_tables(self, steps: list[int]) -> dict[int, pd.DataFrame]:
        """The trajectory tables of ``steps``: from memory or the disk cache where the file
        is unchanged, else read (several files in worker processes)."""
        with self._lock:
            self._fresh_tables(steps)
            return {s: self._tables.table(s) for s in steps}

    def _fresh_tables(self, steps: list[int], state_keys: tuple[str, ...] = ()) -> None:
        """Bring the tables of ``steps``, and their node counts under the exact key and
        ``state_keys``, up to date with their files (under the lock)."""
        self._read_store()
        for step in [s for s in self._tables.entries if s not in self._files]:
            self._tables.drop(step)  # a file gone since
            self._store_dirty = True
        wanted = {self._nodes_key(k): k for k in ("exact", *state_keys)}
        stats = {step: part_stat(self._files[step], "dump file") for step in steps}
        entries = self._tables.entries
        refused = self.options["strict"]
        stale = [s for s in steps if s not in entries or not entries[s].fresh(stats[s])
                 or entries[s].name != self._files[s].name
                 or not wanted.keys() <= entries[s].nodes.keys()
                 or refused and MALFORMED in entries[s].report.get("skipped", {})]
        # a file unchanged keeps the counts it has (other strategies, other regexes)
        kept = {s: entries[s].nodes for s in stale if s in entries
                and entries[s].fresh(stats[s]) and entries[s].name == self._files[s].name}
        try:
            jobs = [(str(self._files[s]), s, True, sorted(set(wanted.values())),
                     self.options["state_regex"], refused) for s in stale]
            for step, scan in zip(stale, scan_files(jobs)):
                st = stats[step]
                nodes = {**kept.get(step, {}),
                         **{self._nodes_key(k): n for k, n in scan.nodes.items()}}
                entry = CacheEntry(self._files[step].name, step, st.st_size, st.st_mtime_ns,
                                   len(scan.trajectories), "task" in scan.trajectories.columns,
                                   scan.report, nodes)
                self._tables.put(entry, scan.trajectories)
                self._record(str(self._files[step]), LoadReport.from_dict(scan.report))
                self._store_dirty = True
        finally:
            if self._store_dirty:
                self._write_store()
                self._store_dirty = False

    def _read_store(self) -> None:
        """Take the disk cache's tables (once per open)."""
        if self._store_read or self._store is None:
            return
        self._store_read = True
        try:
            cached = self._store.read()
        except CacheProblem as err:
            self._base_report.note(f"summary cache {self._store.path} not used ({err}); "
                                   "rebuilt from the dump")
            self._store_dirty = True
            return
        if cached is None:
            return
        entries, rows = cached
        self._tables.load(entries, rows)
        for step, entry in entries.items():
            path = self._files.get(step)
            if path is not None and str(path) not in self._part_reports:
                self._record(str(path), LoadReport.from_dict(entry.report))

    def _write_store(self) -> None:
        if self._store is None:
            return
        try:
            self._store.write(self._tables.entries, self._tables.rows())
        except OSError as err:
            self._base_report.note(f"summary cache not written ({err.strerror or err}): the "
                                   "dump is read again on every open")

    def columns_of_steps(self, train_steps: Sequence[int], columns: Sequence[str]
                         ) -> Iterator[tuple[int, pd.DataFrame]]:
        """:meth:`Log.columns_of_steps`, the files read in worker processes a few steps
        ahead (:func:`loaders.verl_scan.scan_columns`; memory: a few steps' columns, never
        the prompts)."""
        steps = list(train_steps)
        for step in steps:
            self._check_step(step)
        jobs = [(str(self._files[s]), s, tuple(columns), self.options) for s in steps]
        for step, (frame, report) in zip(steps, map_ahead(scan_columns, jobs, [__name__])):
            read = LoadReport.from_dict(report)
            self._record(str(self._files[step]), read)
            read.warn()
            attach_report(frame, self.report)
            yield step, frame

    def step_source(self, train_step: int) -> Path:
        self._check_step(train_step)
        return self._files[train_step]

    @property
    def read_options(self) -> dict:
        return dict(self.options)

    def load_step(self, train_step: int) -> pd.DataFrame:
        self._check_step(train_step)
        path = self._files[train_step]
        key = file_key(path, "dump file")
        cached = self._cache.get(train_step)
        if cached and cached[0] == key:
            return cached[1].copy(deep=False)
        report = LoadReport(str(path), self.format)
        steps = load_verl_file(path, report, **self.options)
        self._record(str(path), report)
        report.warn()
        attach_report(steps, self.report)
        self._cache[train_step] = (key, steps)
        while len(self._cache) > 2:
            self._cache.pop(next(iter(self._cache)))
        return steps.copy(deep=False)


def open_verl_dump(path: str | Path, **options) -> Log:
    """Open a verl rollout dump, a directory or one file, for browsing."""
    path = Path(path)
    if path.is_dir():
        return VerlDump(path, **options)
    report = LoadReport(str(path), "verl")
    steps = load_verl_file(path, report, **options)
    return TableLog(path, steps, "verl", report, {"format": "verl", "source": str(path)})
