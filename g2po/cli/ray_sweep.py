"""A sweep's units computed on a Ray cluster with Ray Data (the only module that imports Ray).

:class:`StepFiles` is a Ray Data datasource with one read task per unit of
:mod:`g2po.cli.sweep` (a step file, or a log that is one file): the task opens the run with
the same reader the app uses (:func:`loaders.open_log`), reads the file and computes its
groups with the function it is given (:func:`g2po.cli.sweep.triage_unit`,
:func:`~g2po.cli.sweep.advantages_unit`), and yields the result as one block. Groups never
span files, so nothing is shuffled; the blocks come back in the units' order, streamed, so
the driver holds a few results at a time (Ray Data's backpressure bounds those in flight).

Where the work runs: :func:`connect` starts a local Ray (``--ray`` with no address and no
``RAY_ADDRESS``) with ``workers`` CPUs, or joins the cluster at the address given (or at
``RAY_ADDRESS``); every worker must import this project and read the runs' paths
(docs/sweeps.md).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import ray
import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

import g2po
from g2po.cli.sweep import Unit
from g2po.errors import G2POError

__all__ = ["StepFiles", "SweepError", "connect", "ray_units"]

#: The column that tells which unit a block came from (dropped before it is handed on), and
#: the one that carries a unit's error instead of its result.
_UNIT, _ERROR = "_g2po_unit", "_g2po_error"
#: A unit's errors that are the input's fault: said as the single-machine path says them.
_INPUT_ERRORS = (G2POError, OSError, ValueError, TypeError, KeyError)


class SweepError(G2POError):
    """A unit's error on a worker, as it said it (a file's problem, named)."""


class StepFiles(Datasource):
    """One read task per unit: ``compute(unit)`` run where Ray places it, one block each."""

    def __init__(self, units: Sequence[Unit], compute: Callable[[Unit], pd.DataFrame]):
        super().__init__()
        self.units = list(units)
        self.compute = compute

    def get_name(self) -> str:
        return "StepFiles"

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: object = None) -> list[ReadTask]:
        # One task per file whatever the parallelism asked: a group never spans files.
        return [ReadTask(self._reader(i), BlockMetadata(num_rows=None, size_bytes=None,
                                                        input_files=[unit.source],
                                                        exec_stats=None))
                for i, unit in enumerate(self.units)]

    def _reader(self, i: int) -> Callable[[], list[pd.DataFrame]]:
        unit, compute = self.units[i], self.compute

        def read() -> list[pd.DataFrame]:
            # An input's error comes back as data, so that Ray neither retries it nor logs
            # its traceback; the driver raises it (:func:`ray_units`).
            try:
                return [compute(unit).assign(**{_UNIT: i})]
            except _INPUT_ERRORS as err:
                return [pd.DataFrame({_UNIT: [i], _ERROR: [str(err)]})]
        return read


def connect(address: str | None, workers: int | None, attempts: int = 3) -> bool:
    """Join Ray: the cluster at ``address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``), else
    the one ``RAY_ADDRESS`` names, else a local Ray with ``workers`` CPUs (default: the
    machine's), started again up to ``attempts`` times where Ray's 30 s for its node to come
    up ran out (a busy machine). Returns whether this call connected (and so should
    disconnect); a process already connected keeps its Ray. A Ray that cannot be started or
    reached is a :class:`g2po.errors.G2POError` naming where."""
    # Ray Data warns of its own deprecated settings when its context is copied.
    warnings.filterwarnings("ignore", message=r"`\w+` is deprecated")
    if ray.is_initialized():
        return False
    local = address is None and not os.environ.get("RAY_ADDRESS")
    where = "a local Ray" if local else f"the Ray cluster at {address or os.environ['RAY_ADDRESS']}"
    for attempt in range(attempts if local else 1):
        try:
            if local:
                # The local workers import this checkout, as the driver does (not another
                # install).
                here = str(Path(g2po.__file__).resolve().parents[1])
                path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
                ray.init(num_cpus=workers, runtime_env={"env_vars": {"PYTHONPATH": path}},
                         include_dashboard=False, logging_level=logging.WARNING)
            else:
                ray.init(address=address, logging_level=logging.WARNING)
            return True
        except Exception as err:  # noqa: BLE001 - Ray raises bare Exceptions here
            ray.shutdown()
            if attempt + 1 < attempts and local and "timed out during startup" in str(err):
                continue
            raise G2POError(f"--ray: could not start or reach {where}: {err}") from err
    return True


@contextmanager
def _one_block_per_file() -> Iterator[None]:
    """Ray Data's context for a sweep: a block is never cut to a target size (one block per
    unit, whatever its size), and the results come in the units' order."""
    ctx = ray.data.DataContext.get_current()
    saved = ctx.target_max_block_size, ctx.execution_options.preserve_order
    ctx.target_max_block_size = None
    ctx.execution_options.preserve_order = True
    try:
        yield
    finally:
        ctx.target_max_block_size, ctx.execution_options.preserve_order = saved


def ray_units(units: Sequence[Unit], compute: Callable[[Unit], pd.DataFrame], *,
              address: str | None = None, workers: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              ) -> Iterator[tuple[Unit, pd.DataFrame]]:
    """``compute`` of every unit on Ray, yielded as (unit, result) in the units' order as the
    results arrive; ``workers`` also caps the tasks in flight on a cluster; ``progress``
    is called with (units done, units). Ray Data shows its own progress on stderr."""
    started = connect(address, workers)
    try:
        if progress is not None:
            progress(0, len(units))
        with _one_block_per_file():
            ds = ray.data.read_datasource(StepFiles(units, compute), concurrency=workers,
                                          override_num_blocks=max(len(units), 1))
            done = 0
            for block in ds.iter_batches(batch_size=None, batch_format="pandas",
                                         prefetch_batches=0):
                if block.empty:
                    continue
                i = int(block[_UNIT].iat[0])
                if _ERROR in block.columns:
                    raise SweepError(block[_ERROR].iat[0])
                done = max(done, i + 1)
                if progress is not None:
                    progress(done, len(units))
                yield units[i], block.drop(columns=_UNIT).reset_index(drop=True)
        if progress is not None:
            progress(len(units), len(units))
    finally:
        if started:
            ray.shutdown()
