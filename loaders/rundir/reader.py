"""Reading a run directory (:class:`Run`, :func:`open_run`): cheap to open, lazy after that;
see :mod:`loaders.rundir` for the layout.

Listing a run reads footers only; its summaries, under whatever rule the reader chooses, read
the few columns they need (cached per file); loading one group reads one row group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from g2po.index import merge_rate
from loaders.advantage import advantage_sources, read_advantage
from loaders.checks import finish_steps
from loaders.errors import LoaderError, LogFormatError, NoLogFoundError
from loaders.files import file_key
from loaders.incomplete import with_marks
from loaders.lines import read_jsonl
from loaders.log import MERGE_RATE_COLUMNS, Log
from loaders.report import LoadReport, attach_report
from loaders.rundir.footer import META_KEY, footer_problem, parse_footer, plain
from loaders.rundir.layout import (
    CHECKPOINTS,
    MANIFEST,
    METRICS,
    ROLLOUTS,
    StepFiles,
    is_run_dir,
    read_manifest,
    stale_checkpoints,
)
from loaders.summary import trajectory_table
from loaders.tables import parquet_frame

__all__ = ["Run", "open_run"]


def _ids_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Group and trajectory ids as text, as in a step table (:mod:`g2po.steps`), for a file
    another tool wrote with numbers there."""
    for name in ("group_id", "traj_id"):
        if name in frame.columns and not pd.api.types.is_string_dtype(frame[name].dtype):
            frame[name] = frame[name].astype(str)
    return frame

class Run(Log):
    """A run directory opened for reading; see :mod:`loaders.rundir` for the layout.

    Cheap to open: nothing but ``run.json`` and a directory listing. Footers are read (and
    cached per file) when groups are asked for, the columns of :meth:`trajectories` when
    summaries are; all rows only when rows are.
    """

    format = "run"
    groups_indexed = True

    def __init__(self, path: str | Path):
        path = Path(path)
        if path.name == MANIFEST:
            path = path.parent
        if not path.is_dir():
            raise NoLogFoundError(f"{path}: no such run directory")
        if not is_run_dir(path):
            raise NoLogFoundError(f"{path}: not a run directory (no {MANIFEST}, no {ROLLOUTS}/)")
        super().__init__(path, {}, LoadReport(str(path), self.format))
        self._footers: dict[int, tuple[tuple[int, int], dict]] = {}
        self._trajectories: dict[int, tuple[tuple[int, int], pd.DataFrame]] = {}
        self.refresh()

    def refresh(self) -> None:
        """Re-read the manifest and the list of step files (new training steps appear)."""
        manifest_path = self.path / MANIFEST
        if manifest_path.is_file():
            self.manifest = read_manifest(manifest_path)
        else:
            self.manifest = {}
            self._base_report.note(f"{manifest_path} missing: config, model and estimator unknown")
        self.listing = StepFiles.scan(self.path)
        others, pending = self.listing.others, self.listing.pending
        if others:
            self._base_report.note(
                f"{self.path / ROLLOUTS}: {len(others)} entr(ies) not named "
                f"step-NNNNNN.parquet, not read: {', '.join(others[:5])}"
                + (" …" if len(others) > 5 else ""))
        if pending:
            self._base_report.note(f"{len(pending)} step file(s) being written or left by a crash, "
                             f"ignored: {', '.join(sorted(pending)[:3])}")
        broken = self.listing.unreadable()
        if broken:  # said to every reader, also to one that selects other steps
            said = [self.listing.why_unreadable(step) for step in broken[:3]]
            self._base_report.note(
                f"{self.path / ROLLOUTS}: {len(broken)} training step(s) cannot be read, a read "
                f"of them fails (g2po validate lists them): {'; '.join(said)}"
                + (" …" if len(broken) > 3 else ""))

    def train_steps(self) -> list[int]:
        return self.listing.steps

    def readable_train_steps(self) -> list[int]:
        broken = set(self.listing.unreadable())
        return [s for s in self.listing.steps if s not in broken]

    def step_file(self, train_step: int) -> Path:
        """The file of one training step; :class:`LogFormatError` when two entries claim it or
        it is no regular file (:meth:`StepFiles.file`)."""
        self._check_step(train_step)
        return self.listing.file(train_step)

    def problems(self) -> list[str]:
        """Training steps claimed by more than one step file (:meth:`StepFiles.problems`)."""
        return self.listing.problems()

    def _footer(self, train_step: int) -> dict:
        """The ``g2po.step`` metadata of a step file (computed from columns if absent)."""
        path = self.step_file(train_step)
        key = file_key(path)
        cached = self._footers.get(train_step)
        if cached and cached[0] == key:
            return cached[1]
        try:
            parquet_meta = pq.read_metadata(path)
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        meta = parquet_meta.metadata or {}
        if META_KEY in meta:
            sizes = [parquet_meta.row_group(i).num_rows for i in range(parquet_meta.num_row_groups)]
            footer = parse_footer(meta[META_KEY], path, train_step, sizes)
        else:  # written by another tool: list its groups from their column
            self._base_report.note(f"{path.name}: no g2po layout in the footer; groups are "
                                   "found by filtering its rows")
            ids = self._read_columns(path, parquet_meta.schema.names, ["group_id"])["group_id"]
            footer = {"groups": [{"group_id": str(g)} for g in sorted(ids.unique())]}
        self._footers[train_step] = (key, footer)
        return footer

    @staticmethod
    def _read_columns(path: Path, names: list[str], needed: list[str],
                      optional: tuple[str, ...] = ()) -> pd.DataFrame:
        """Columns ``needed`` (an error names those absent) and those of ``optional`` the file
        has (``names``: its columns)."""
        absent = [c for c in needed if c not in names]
        if absent:
            raise LogFormatError(f"{path}: missing required column(s) "
                                 f"{', '.join(map(repr, absent))}")
        columns = needed + [c for c in optional if c in names]
        try:
            table = pq.read_table(path, columns=columns)
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        return parquet_frame(table, path, LoadReport())

    def trajectories(self, train_step: int) -> pd.DataFrame:
        """One row per trajectory (:func:`loaders.summary.trajectory_table`), from the few
        columns it needs; cached per step file until the file changes."""
        path = self.step_file(train_step)
        key = file_key(path)
        cached = self._trajectories.get(train_step)
        if cached and cached[0] == key:
            return cached[1]
        try:
            names = pq.read_schema(path).names
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        columns = self._read_columns(
            path, names, ["group_id", "traj_id", "t", "episode_reward", "is_action_valid"],
            ("won", "done", "task"))
        table = trajectory_table(_ids_as_text(columns))
        self._trajectories[train_step] = (key, table)
        return table

    def groups(self, train_step: int) -> list[str]:
        return [g["group_id"] for g in self._footer(train_step)["groups"]]

    def load_group(self, train_step: int, group_id: str) -> pd.DataFrame:
        """One group's rows: one row group read, sliced at the stored offsets."""
        footer = self._footer(train_step)
        path = self.step_file(train_step)
        entry = next((g for g in footer["groups"] if g["group_id"] == str(group_id)), None)
        if entry is None:
            self._no_group(train_step, group_id, self.groups(train_step))
        try:
            if "row_group" in entry:
                table = pq.ParquetFile(path).read_row_group(entry["row_group"])
                table = table.slice(entry["start"], entry["stop"] - entry["start"])
            else:
                table = pq.read_table(path, filters=[("group_id", "==", str(group_id))])
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        rows = self._finish(table, path, train_step)
        if not (rows["group_id"].to_numpy() == str(group_id)).all():
            raise footer_problem(path, f"points group {str(group_id)!r} at rows of another "
                                        "group")
        return rows

    def merge_rates(self, state_key: str = "exact") -> pd.DataFrame:
        """:meth:`Log.merge_rates`; under the exact state key counted by Arrow from two
        columns (:meth:`_exact_merge_rates`) where every step file allows it."""
        if state_key == "exact":
            fast = self._exact_merge_rates()
            if fast is not None:
                return fast
        return super().merge_rates(state_key)

    def _exact_merge_rates(self) -> pd.DataFrame | None:
        """:meth:`merge_rates` under the exact state key: per step file, the distinct
        (group_id, state_key) pairs (its state nodes) counted by Arrow from those two columns,
        without the rows' other columns or a Python loop. Reading and counting run in Arrow's
        C++ without the interpreter lock, so the app's other sessions go on meanwhile; on the
        1.2 M-row bench run it takes ~1/3 of the full reading's time. None when a file lacks
        the columns, has an empty key or does not read (the full path then reads the rows and
        reports what is wrong)."""
        rows = []
        for step in self.train_steps():
            try:
                table = pq.read_table(self.step_file(step), columns=["group_id", "state_key"])
            except (pa.ArrowException, KeyError, OSError):
                return None
            if table.num_rows == 0 or any(c.null_count for c in table.columns):
                return None
            nodes = table.group_by(["group_id", "state_key"]).aggregate([]).num_rows
            rows.append({"train_step": step, "merge_rate": merge_rate(nodes, table.num_rows)})
        return pd.DataFrame(rows, columns=MERGE_RATE_COLUMNS)

    def step_source(self, train_step: int) -> Path:
        return self.step_file(train_step)

    def step_columns(self, train_step: int, columns: Sequence[str]) -> pd.DataFrame:
        """Only ``columns`` of the step file (those it has; a recorded advantage under its
        alias too, :mod:`loaders.advantage`), state keys and actions as Categoricals from the
        Parquet dictionaries: a training step's ~500-character observations are never
        expanded into one string per row. Unlike :meth:`load_step`,
        the rows are not deduplicated or validated here (the estimators validate them)."""
        path = self.step_file(train_step)
        try:
            file = pq.ParquetFile(path, read_dictionary=["state_key", "action"])
            names = file.schema_arrow.names
            table = file.read(columns=with_marks(advantage_sources(columns), names))
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        table = table.replace_schema_metadata(None)
        frame = _ids_as_text(parquet_frame(table, path, LoadReport()))
        return read_advantage(frame, str(path), LoadReport(), "row")

    def load_step(self, train_step: int) -> pd.DataFrame:
        path = self.step_file(train_step)
        try:
            table = pq.ParquetFile(path).read()
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
        return self._finish(table, path, train_step)

    def validation_notes(self) -> list[str]:
        """Checkpoint folders a killed save left half-written, with their size."""
        return [f"{folder}: a checkpoint left half-written by a killed save "
                f"({_size(folder)}); resuming the run removes it, or delete it"
                for folder in stale_checkpoints(self.path / CHECKPOINTS)]

    def step_problems(self, train_step: int, steps: pd.DataFrame) -> list[str]:
        """What ``g2po validate`` checks beyond the rows: the footer the app browses by must
        be readable and describe these rows (each group where it says, every group listed)."""
        try:
            footer = self._footer(train_step)
        except LoaderError as err:
            return [str(err)]
        path = self.step_file(train_step)
        listed = [g["group_id"] for g in footer["groups"]]
        actual = sorted(steps["group_id"].unique().tolist())
        if sorted(listed) != actual:
            extra = sorted(set(listed) - set(actual))[:3]
            absent = sorted(set(actual) - set(listed))[:3]
            return [str(footer_problem(path, f"lists other groups than the rows hold (listed, "
                                              f"not in the rows: {extra}; in the rows, not "
                                              f"listed: {absent})"))]
        if not footer["groups"] or "row_group" not in footer["groups"][0]:
            return []
        meta = pq.read_metadata(path)
        starts = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
        ids = steps["group_id"].to_numpy()
        for g in footer["groups"]:
            lo, hi = starts[g["row_group"]] + g["start"], starts[g["row_group"]] + g["stop"]
            if hi <= lo or not (ids[lo:hi] == g["group_id"]).all():
                return [str(footer_problem(path, f"points group {g['group_id']!r} at rows "
                                                  f"{lo}-{hi}, which hold other rows"))]
        return []

    def _finish(self, table: pa.Table, path: Path, train_step: int) -> pd.DataFrame:
        table = table.replace_schema_metadata(
            {k: v for k, v in (table.schema.metadata or {}).items() if k != META_KEY})
        report = LoadReport(str(path), self.format)
        frame = parquet_frame(table, path, report)
        if "train_step" in frame.columns:
            other = pd.to_numeric(frame["train_step"], errors="coerce").to_numpy() != train_step
            if other.any():
                first = frame.index[other][0]
                raise LogFormatError(
                    f"{path} row {first}: {path.name} holds rows of training step "
                    f"{plain(frame.at[first, 'train_step'])!r} ({int(other.sum())} row(s) in "
                    f"all); a step file holds only its own step, {train_step}")
        frame = finish_steps(frame, str(path), report, label="row")
        self._record(str(path), report)
        report.warn()
        attach_report(frame, self.report)
        return frame

    def metrics(self) -> pd.DataFrame:
        """``metrics.jsonl`` as a frame, one row per training step (the last line wins when a
        resumed run wrote a step twice; the earlier one is reported as skipped; a malformed
        line is skipped and reported, or an error when :attr:`strict`), unless curves were
        given from elsewhere (:attr:`metrics_source`)."""
        if self.metrics_source is not None:
            return super().metrics()
        path = self.path / METRICS
        if not path.exists() or path.stat().st_size == 0:
            return super().metrics()
        report = LoadReport(str(path), self.format)
        read = read_jsonl(path, report, strict=self.strict)
        frame = pd.DataFrame.from_records(read.rows, index=read.numbers)
        if "train_step" not in frame.columns:
            raise LogFormatError(f"{path}: missing field 'train_step' (each line: "
                                 '{"train_step": N, "metric": value, …})')
        step = frame["train_step"]
        bad = ~step.map(lambda v: isinstance(v, int) and not isinstance(v, bool)).to_numpy()
        if bad.any():
            line = frame.index[bad][0]
            raise LogFormatError(f"{path}:{line}: field 'train_step' must be a whole number, "
                                 f"got {step.at[line]!r}")
        repeated = frame.duplicated("train_step", keep="last").to_numpy()
        for line in frame.index[repeated]:
            report.skip("metrics line for a training step written again later",
                        f"{path}:{line}")
        frame = frame.loc[~repeated].sort_values("train_step").reset_index(drop=True)
        self._record(str(path), report)
        if report.skips:
            report.warn()
        return frame


def _size(folder: Path) -> str:
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return f"{total / 1e6:,.1f} MB"


def open_run(path: str | Path) -> Run:
    """Open a run directory (or its ``run.json``) for reading."""
    return Run(path)
