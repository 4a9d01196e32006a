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

The package, by responsibility: :mod:`~loaders.rundir.layout` (the names of the files and
what ``run.json`` and ``rollouts/`` hold), :mod:`~loaders.rundir.footer` (a step file's
footer, written and checked), :mod:`~loaders.rundir.writer` (:class:`RunWriter`,
:func:`rewind_run`) and :mod:`~loaders.rundir.reader` (:class:`Run`, :func:`open_run`). Their
public names are imported from here.
"""

from __future__ import annotations

from loaders.rundir.footer import META_KEY
from loaders.rundir.layout import (
    CHECKPOINT_TMP_PREFIX,
    CHECKPOINTS,
    MANIFEST,
    METRICS,
    ROLLOUTS,
    RUN_FORMAT,
    RUN_VERSION,
    StepFiles,
    is_run_dir,
    stale_checkpoints,
    step_path,
)
from loaders.rundir.reader import Run, open_run
from loaders.rundir.writer import RunWriter, rewind_run

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
    "META_KEY",
    "stale_checkpoints",
    "StepFiles",
]
