"""Writing a run directory while a trainer trains (:class:`RunWriter`), and rewinding one to a
checkpoint (:func:`rewind_run`); see :mod:`loaders.rundir` for the layout.

Every file lands atomically (written under a temporary name, then renamed), so a reader never
sees half a step file, and a crash leaves none under a final name.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from g2po.outcomes import OutcomeRule
from g2po.steps import check_steps
from loaders.curves import TIMESTAMP
from loaders.errors import LoaderError
from loaders.log import manifest_rule
from loaders.rundir.footer import META_KEY, footer_layout
from loaders.rundir.layout import (
    MANIFEST,
    METRICS,
    PENDING_GLOB,
    ROLLOUTS,
    RUN_FORMAT,
    RUN_VERSION,
    StepFiles,
    read_manifest,
    step_path,
)
from loaders.rundir.reader import open_run
from loaders.summary import step_summary, trajectory_table

__all__ = ["RunWriter", "rewind_run"]


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
            current = read_manifest(target)
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
        groups, boundaries = footer_layout(steps, trajectories, self.rule)
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

    def _repair_metrics(self) -> None:
        """Cut an unfinished last line (a crash mid-append) so the next line starts clean."""
        path = self.path / METRICS
        if not path.exists():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(path, "rb+") as f:
                f.truncate(data.rfind(b"\n") + 1)


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
    for stale in (path / ROLLOUTS).glob(PENDING_GLOB):
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
