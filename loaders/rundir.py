"""The project's own run directory: written by the trainers while they train, read by the app.

Layout::

    run_dir/run.json                      manifest: format, version, created, config, estimator,
                                          env, model, …
    run_dir/rollouts/step-000001.parquet  the step rows of training step 1
    run_dir/metrics.jsonl                 one JSON object of scalars per training step

Built for streaming and for runs still being written:

- every file lands atomically (written under a temporary name, then renamed), so a reader never
  sees half a step file, and a crash leaves none under a final name;
- rows are sorted by group and stored in Parquet row groups that hold whole groups; the footer's
  key-value metadata (``g2po.step``) records each group's row group and offsets (and the
  summaries under the trainer's outcome rule, a record of what it logged). Listing a run reads
  footers only; its summaries, under whatever rule the reader chooses, read the few columns
  they need (cached per file); loading one group reads one row group.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule
from g2po.steps import check_steps
from loaders.advantage import advantage_sources, read_advantage
from loaders.checks import finish_steps
from loaders.curves import TIMESTAMP
from loaders.errors import LoaderError, LogFormatError, NoLogFoundError
from loaders.files import file_key, read_bytes
from loaders.lines import read_jsonl
from loaders.log import MERGE_RATE_COLUMNS, Log, manifest_rule
from loaders.report import LoadReport, attach_report
from loaders.summary import group_summary, step_summary, trajectory_table
from loaders.tables import parquet_frame

__all__ = [
    "RunWriter",
    "Run",
    "open_run",
    "is_run_dir",
    "step_path",
    "rewind_run",
    "RUN_FORMAT",
    "RUN_VERSION",
    "MANIFEST",
    "ROLLOUTS",
    "METRICS",
    "CHECKPOINTS",
    "CHECKPOINT_TMP_PREFIX",
    "stale_checkpoints",
    "StepFiles",
]

RUN_FORMAT = "g2po-run"
RUN_VERSION = 1
MANIFEST = "run.json"
ROLLOUTS = "rollouts"
METRICS = "metrics.jsonl"
#: The trainers' checkpoint folder inside a run (``g2po.trainers.checkpoint``), and the prefix of
#: a checkpoint being written (``.tmp-step-000010-<pid>``, renamed into place when complete).
CHECKPOINTS = "checkpoints"
CHECKPOINT_TMP_PREFIX = ".tmp-step-"
META_KEY = b"g2po.step"
_STEP_RE = re.compile(r"^step-(\d+)\.parquet$")
_PENDING_RE = re.compile(r"^\.step-.*\.tmp-")
#: Groups smaller than this share a row group with their neighbours.
ROW_GROUP_MIN_ROWS = 256


def step_path(run_dir: str | Path, train_step: int) -> Path:
    """Where a training step's rows live: ``rollouts/step-000001.parquet``."""
    return Path(run_dir) / ROLLOUTS / f"step-{train_step:06d}.parquet"


def is_run_dir(path: str | Path) -> bool:
    """A directory with ``run.json`` or a ``rollouts/`` folder of step files."""
    path = Path(path)
    return (path / MANIFEST).is_file() or (path / ROLLOUTS).is_dir()


def stale_checkpoints(folder: str | Path) -> list[Path]:
    """Checkpoint folders a killed save left half-written (``.tmp-step-*``), in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name.startswith(CHECKPOINT_TMP_PREFIX) and p.is_dir())


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)


def _atomic_write_bytes(target: Path, data: bytes) -> None:
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class RunWriter:
    """Writes a run directory, one training step at a time; safe to read while it writes.

    Parameters
    ----------
    path : the run directory (created).
    manifest : what the run is: ``config`` (dict), ``estimator``, ``env``, ``model``, … stored
        in ``run.json`` with ``format``, ``version`` and ``created``.
    resume : continue a run that already has ``run.json`` (its manifest is updated with the
        given keys, ``created`` kept); without it an existing run is never overwritten.

    Examples
    --------
    >>> import tempfile
    >>> from g2po.synthetic import synthetic_steps
    >>> writer = RunWriter(tempfile.mkdtemp() + "/run", {"env": "demo"})
    >>> writer.write_step(1, synthetic_steps(400)).name
    'step-000001.parquet'
    >>> writer.completed_steps()
    [1]
    """

    def __init__(self, path: str | Path, manifest: dict, *, resume: bool = False):
        self.path = Path(path)
        target = self.path / MANIFEST
        if target.exists():
            if not resume:
                raise LoaderError(f"{self.path}: already holds a run ({MANIFEST}); pass "
                                  "resume=True to continue it, or choose a new directory")
            current = _read_manifest(target)
            keep = {k: current[k] for k in ("format", "version", "created") if k in current}
            self.manifest = {**current, **manifest, **keep}
            self._repair_metrics()
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self.manifest = {"format": RUN_FORMAT, "version": RUN_VERSION,
                             "created": datetime.now(UTC).isoformat(timespec="seconds"),
                             **manifest}
        (self.path / ROLLOUTS).mkdir(exist_ok=True)
        data = json.dumps(self.manifest, indent=2, default=_json_default, ensure_ascii=False)
        _atomic_write_bytes(target, (data + "\n").encode("utf-8"))
        self.rule = manifest_rule(self.manifest) or OutcomeRule()

    def completed_steps(self) -> list[int]:
        """Training steps whose step file has landed, ascending."""
        return StepFiles.scan(self.path).landed

    def write_step(self, train_step: int, steps: pd.DataFrame, metrics: dict | None = None,
                   *, overwrite: bool = False) -> Path:
        """Validate and store one training step's rows; then append its metrics line.

        ``steps`` is a step table (see :mod:`g2po.steps`); a ``train_step`` column is added, or
        must already equal ``train_step``. ``metrics`` are scalars merged over the rollout
        summary (``rollout/mean_reward``, ``rollout/success_rate``, …) in ``metrics.jsonl``,
        with the time it was written (``_timestamp``, Unix seconds: the curves' wall clock).
        Returns the step file's path. Raises :class:`g2po.errors.StepTableError` for a table
        that breaks the schema and :class:`LoaderError` for a step already written (unless
        ``overwrite``).
        """
        train_step = int(train_step)
        if train_step < 0:
            raise LoaderError(f"train_step must be >= 0, got {train_step}")
        target = step_path(self.path, train_step)
        if target.exists() and not overwrite:
            raise LoaderError(f"{target}: training step {train_step} is already written; pass "
                              "overwrite=True to replace it")
        if steps.empty:
            raise LoaderError(f"training step {train_step}: no step rows to write")
        if "train_step" in steps.columns:
            other = pd.to_numeric(steps["train_step"], errors="coerce").to_numpy() != train_step
            if other.any():
                raise LoaderError(f"training step {train_step}: {int(other.sum())} row(s) carry "
                                  "another train_step value")
        else:
            steps = steps.assign(train_step=np.int64(train_step))
        steps = check_steps(steps, source=f"training step {train_step}")
        steps = steps.sort_values(["group_id", "traj_id", "t"], kind="stable")
        steps = steps.reset_index(drop=True)
        steps.attrs = {}  # a load report from an earlier read is not part of the step rows

        try:
            table = pa.Table.from_pandas(steps, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as err:
            raise LoaderError(f"training step {train_step}: a column cannot be stored in "
                              f"Parquet: {err}") from None
        trajectories = trajectory_table(steps)
        summary = step_summary(trajectories, self.rule)
        groups, boundaries = self._layout(steps, trajectories)
        meta = {"version": RUN_VERSION, "train_step": train_step, "summary": summary,
                "groups": groups}
        schema_meta = dict(table.schema.metadata or {})
        schema_meta[META_KEY] = json.dumps(meta).encode("utf-8")
        table = table.replace_schema_metadata(schema_meta)

        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        try:
            with pq.ParquetWriter(tmp, table.schema, compression="zstd") as writer:
                for start, stop in boundaries:
                    writer.write_table(table.slice(start, stop - start),
                                       row_group_size=stop - start)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(target.parent)

        line = {"train_step": train_step, TIMESTAMP: round(time.time(), 3),
                **{f"rollout/{k}": v for k, v in summary.items()},
                **(metrics or {})}
        with open(self.path / METRICS, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, default=_json_default, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return target

    def _layout(self, steps: pd.DataFrame, trajectories: pd.DataFrame
                ) -> tuple[list[dict], list[tuple[int, int]]]:
        """Row groups holding whole groups (small groups packed together), and each group's
        row group and offsets inside it, with its summary."""
        group_ids = steps["group_id"].to_numpy()
        change = np.flatnonzero(group_ids[1:] != group_ids[:-1]) + 1
        starts = np.concatenate([[0], change])
        stops = np.concatenate([change, [len(steps)]])
        summaries = {row["group_id"]: row
                     for row in group_summary(trajectories, self.rule).to_dict("records")}
        groups: list[dict] = []
        boundaries: list[tuple[int, int]] = []
        rg_start = 0
        for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
            gid = group_ids[start]
            stats = {k: _plain(v) for k, v in summaries[gid].items() if k != "group_id"}
            groups.append({"group_id": str(gid), "row_group": len(boundaries),
                           "start": start - rg_start, "stop": stop - rg_start, **stats})
            if stop - rg_start >= ROW_GROUP_MIN_ROWS:
                boundaries.append((rg_start, stop))
                rg_start = stop
        if rg_start < len(steps):
            boundaries.append((rg_start, len(steps)))
        return groups, boundaries

    def _repair_metrics(self) -> None:
        """Cut an unfinished last line (a crash mid-append) so the next line starts clean."""
        path = self.path / METRICS
        if not path.exists():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(path, "rb+") as f:
                f.truncate(data.rfind(b"\n") + 1)


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def _read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads(read_bytes(path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise LogFormatError(f"{path}: not a readable run manifest: {err}") from None
    if not isinstance(manifest, dict):
        raise LogFormatError(f"{path}: a run manifest is a JSON object")
    fmt = manifest.get("format", RUN_FORMAT)
    if fmt != RUN_FORMAT:
        raise LogFormatError(f"{path}: field 'format' is {fmt!r}, expected {RUN_FORMAT!r}")
    version = manifest.get("version", RUN_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LogFormatError(f"{path}: field 'version' must be a whole number >= 1 (this "
                             f"reader writes {RUN_VERSION}), got {version!r}")
    if version > RUN_VERSION:
        raise LogFormatError(f"{path}: run format version {version!r} is newer than this "
                             f"reader ({RUN_VERSION}); upgrade g2po")
    return manifest


@dataclass(frozen=True)
class StepFiles:
    """The entries of a run's ``rollouts/`` folder, listed once for every reader (the app,
    ``g2po validate``, ``g2po advantages``, the writer's resume), so that all of them see the
    same training steps and refuse the same broken ones.

    Every entry named ``step-N.parquet`` claims training step N, whatever it is: a step claimed
    twice, or by something that is no regular file (a folder, a FIFO), is a training step whose
    file :meth:`file` refuses, naming the entry, rather than one left out unsaid.
    """

    folder: Path
    #: the entries claiming each training step, in name order
    claims: dict[int, list[Path]]
    #: the claiming entries that are no regular file (a FIFO, a device, a folder)
    special: frozenset[Path]
    #: names in the folder that claim no step (hidden names aside)
    others: list[str]
    #: step files being written, or left by a crash (``.step-*.tmp-*``)
    pending: list[str]

    @classmethod
    def scan(cls, run_dir: str | Path) -> StepFiles:
        """List ``run_dir/rollouts`` (empty when there is none)."""
        folder = Path(run_dir) / ROLLOUTS
        claims: dict[int, list[Path]] = {}
        special, others, pending = set(), [], []
        entries = sorted(os.scandir(folder), key=lambda e: e.name) if folder.is_dir() else []
        for entry in entries:
            match = _STEP_RE.match(entry.name)
            if match:
                claims.setdefault(int(match.group(1)), []).append(Path(entry.path))
                if not entry.is_file():  # follows links; FIFOs, devices, folders are no files
                    special.add(Path(entry.path))
            elif _PENDING_RE.match(entry.name):
                pending.append(entry.name)
            elif not entry.name.startswith("."):
                others.append(entry.name)
        return cls(folder, claims, frozenset(special), others, pending)

    @property
    def steps(self) -> list[int]:
        """Every training step some entry claims, ascending."""
        return sorted(self.claims)

    @property
    def landed(self) -> list[int]:
        """The training steps with a regular step file, ascending (a writer's finished
        steps)."""
        return sorted(s for s, paths in self.claims.items()
                      if any(p not in self.special for p in paths))

    def file(self, train_step: int) -> Path:
        """The one step file of ``train_step``; :class:`LogFormatError` naming the entries when
        two claim it or it is no regular file."""
        paths = self.claims[train_step]
        if len(paths) > 1:
            raise LogFormatError(self._claimed_twice(train_step))
        if paths[0] in self.special:
            raise LogFormatError(f"{paths[0]}: not a regular file (a FIFO, device or folder); "
                                 f"training step {train_step} is not read: remove or rename it")
        return paths[0]

    def unreadable(self) -> list[int]:
        """The training steps :meth:`file` refuses (claimed twice, or by no regular file),
        ascending."""
        return sorted(s for s, paths in self.claims.items()
                      if len(paths) > 1 or paths[0] in self.special)

    def why_unreadable(self, train_step: int) -> str:
        """Why :meth:`file` refuses ``train_step``, in a few words naming the entries."""
        paths = self.claims[train_step]
        if len(paths) > 1:
            return f"step {train_step} is claimed by {' and '.join(p.name for p in paths)}"
        return f"step {train_step}'s {paths[0].name} is no regular file (a FIFO, device or folder)"

    def problems(self) -> list[str]:
        """Training steps claimed by more than one entry (a read of such a step, or of one
        claimed by no regular file, raises what :meth:`file` says)."""
        return [self._claimed_twice(step) for step, paths in sorted(self.claims.items())
                if len(paths) > 1]

    def _claimed_twice(self, train_step: int) -> str:
        names = " and ".join(p.name for p in self.claims[train_step])
        return (f"{self.folder}: training step {train_step} is claimed by {names}; keep one "
                "step file per step")


def _ids_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Group and trajectory ids as text, as in a step table (:mod:`g2po.steps`), for a file
    another tool wrote with numbers there."""
    for name in ("group_id", "traj_id"):
        if name in frame.columns and not pd.api.types.is_string_dtype(frame[name].dtype):
            frame[name] = frame[name].astype(str)
    return frame


def _footer_problem(path: Path, text: str) -> LogFormatError:
    return LogFormatError(f"{path}: the footer's g2po.step metadata {text}; the file was "
                          "damaged or written by another tool (rewrite the step, or drop the "
                          "metadata key to have summaries computed from the rows)")


def _parse_footer(raw: bytes, path: Path, train_step: int, row_groups: list[int]) -> dict:
    """The ``g2po.step`` footer, checked against the file it describes: JSON, the step it
    names, and each group's row group and offsets inside the file's row groups
    (``row_groups`` = the row count of each)."""
    try:
        footer = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise _footer_problem(path, f"is not JSON ({err})") from None
    if not isinstance(footer, dict) or not isinstance(footer.get("groups"), list):
        raise _footer_problem(path, "is not an object with 'groups'")
    if "train_step" in footer and footer["train_step"] != train_step:
        raise _footer_problem(path, f"names training step {footer['train_step']!r}, the file "
                                    f"name {train_step}")
    for i, group in enumerate(footer["groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("group_id"), str):
            raise _footer_problem(path, f"group entry {i} has no group_id")
        if "row_group" not in group:
            continue
        rg, start, stop = (group.get(k) for k in ("row_group", "start", "stop"))
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (rg, start, stop)):
            raise _footer_problem(path, f"group {group['group_id']!r}: row_group, start and "
                                        "stop must be whole numbers")
        if not 0 <= rg < len(row_groups):
            raise _footer_problem(path, f"group {group['group_id']!r} points at row group {rg}, "
                                        f"past the file's {len(row_groups)} row group(s)")
        if not 0 <= start <= stop <= row_groups[rg]:
            raise _footer_problem(path, f"group {group['group_id']!r} points at rows "
                                        f"{start}-{stop} of row group {rg}, which holds "
                                        f"{row_groups[rg]}")
    return footer


class Run(Log):
    """A run directory opened for reading; see the module docstring for the layout.

    Cheap to open: nothing but ``run.json`` and a directory listing. Footers are read (and
    cached per file) when groups are asked for, the columns of :meth:`trajectories` when
    summaries are; all rows only when rows are.
    """

    format = "run"

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
            self.manifest = _read_manifest(manifest_path)
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
            footer = _parse_footer(meta[META_KEY], path, train_step, sizes)
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
            raise _footer_problem(path, f"points group {str(group_id)!r} at rows of another "
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
        alias too, :mod:`loaders.advantage`), state keys and actions as
        Categoricals from the Parquet dictionaries: a training step's ~500-character
        observations are never expanded into one string per row. Unlike :meth:`load_step`,
        the rows are not deduplicated or validated here (the estimators validate them)."""
        path = self.step_file(train_step)
        try:
            file = pq.ParquetFile(path, read_dictionary=["state_key", "action"])
            names = file.schema_arrow.names
            table = file.read(columns=[c for c in advantage_sources(columns) if c in names])
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
            return [str(_footer_problem(path, f"lists other groups than the rows hold (listed, "
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
                return [str(_footer_problem(path, f"points group {g['group_id']!r} at rows "
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
                    f"{_plain(frame.at[first, 'train_step'])!r} ({int(other.sum())} row(s) in "
                    f"all); a step file holds only its own step, {train_step}")
        frame = finish_steps(frame, str(path), report, label="row")
        self._record(str(path), report)
        report.warn()
        attach_report(frame, self.report)
        return frame

    def metrics(self) -> pd.DataFrame:
        """``metrics.jsonl`` as a frame, one row per training step (the last line wins when a
        resumed run wrote a step twice; the earlier one is reported as skipped), unless
        curves were given from elsewhere (:attr:`metrics_source`)."""
        if self.metrics_source is not None:
            return super().metrics()
        path = self.path / METRICS
        if not path.exists() or path.stat().st_size == 0:
            return super().metrics()
        report = LoadReport(str(path), self.format)
        rows, lines = read_jsonl(path, report)
        frame = pd.DataFrame.from_records(rows, index=lines)
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


def open_run(path: str | Path) -> Run:
    """Open a run directory (or its ``run.json``) for reading."""
    return Run(path)


def rewind_run(path: str | Path, train_step: int) -> list[int]:
    """Forget what a run logged after ``train_step`` (a trainer resuming from a checkpoint):
    delete the later step files and leftover temporary files, and keep only the metrics lines
    of steps up to it, rewritten atomically. Returns the training steps removed."""
    path = Path(path)
    removed = []
    for step in open_run(path).listing.landed:
        if step > train_step:
            step_path(path, step).unlink()
            removed.append(step)
    for stale in (path / ROLLOUTS).glob(".step-*.tmp-*"):
        stale.unlink(missing_ok=True)
    metrics = path / METRICS
    if metrics.exists():
        kept = []
        for line in metrics.read_text(encoding="utf-8").splitlines(keepends=True):
            try:
                step = int(json.loads(line)["train_step"])
            except (ValueError, KeyError, TypeError):
                continue  # a half-written last line of a killed run
            if step <= train_step and line.endswith("\n"):
                kept.append(line)
        tmp = metrics.with_name(f".{metrics.name}.tmp-{os.getpid()}")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, metrics)
    return removed
