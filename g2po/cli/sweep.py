"""A sweep: ``g2po triage`` and ``g2po advantages`` on a folder of runs.

The runs are the logs :func:`loaders.discover.find_logs` finds under the folder (what the app's
``--log`` and ``g2po validate`` accept), each named by its path below the folder; every record
written names its run (a ``run`` column first). The work is cut into :class:`Unit` s, one per
step file (a run directory's ``rollouts/step-*.parquet``, a verl dump's ``{step}.jsonl``) or
one per log that is a single file (a table, a batch dump). A group never spans two training
steps, so each unit is computed on its own (:func:`triage_unit`, :func:`advantages_unit`, the
library functions the single-machine path calls) and the results are put together run by run
(:func:`join_triage`; :func:`advantages_runs` writes a run's file part by part): on this
machine (:func:`triage_runs` with its cache, :func:`local_units`) or on a Ray cluster
(:mod:`g2po.cli.ray_sweep`, which alone imports Ray).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams
    from loaders.log import Log

__all__ = ["Run", "Unit", "find_runs", "sweep_runs", "add_ray_options", "plan_units",
           "triage_unit", "join_triage", "triage_runs", "advantages_unit", "advantages_runs",
           "AdvantageSpec", "ParquetParts", "advantage_file", "local_units", "say"]


@dataclass(frozen=True)
class Run:
    """One log of a sweep: ``name`` (its path below the folder, ``/``-separated), ``path``."""

    name: str
    path: Path


@dataclass(frozen=True)
class Unit:
    """The work of one file: the training ``steps`` of run ``run`` (at ``path``) that
    ``source`` holds (None: every step of a log that is one file), under the run's outcome
    ``rule`` and G2PO ``params`` (the run's recorded ones, :meth:`loaders.Log.params`; the
    commands set the user's ``-p`` and ``--state-key`` on them)."""

    run: str
    path: Path
    steps: tuple[int, ...] | None
    rule: OutcomeRule
    source: str
    params: G2POParams


def find_runs(path: str | Path) -> tuple[list[Run], list[str]] | None:
    """The runs of a folder of runs, sorted by name, and a note for each file that is no log;
    None when ``path`` is itself one log (the single-log commands serve it). Raises
    :class:`loaders.errors.NoLogFoundError` when there is none."""
    from loaders.discover import find_logs

    root = Path(path).expanduser()
    found, notes = find_logs(root)
    if list(found) == [root]:
        return None
    runs = [Run(p.relative_to(root).as_posix(), p) for p in found]
    return sorted(runs, key=lambda r: r.name), notes


def _open(run_path: Path, options: dict) -> Log:
    from loaders.opener import open_log

    return open_log(run_path, **{k: v for k, v in options.items() if k != "metrics"})


def plan_units(runs: Sequence[Run], options: dict) -> list[Unit]:
    """The units of ``runs`` in run order, then training-step order: one per step file of a
    run directory or verl dump, one per other log; each under its log's outcome rule
    (:meth:`loaders.Log.rule`, with the user's overrides). Opens every log here: a run
    directory or a verl dump lists its files cheaply, a table is read."""
    units = []
    for run in runs:
        log = _open(run.path, options)
        rule, params = log.rule(), log.params()
        steps = log.train_steps()
        sources = [log.step_source(s) for s in steps]
        if None in sources or len(set(sources)) != len(sources):
            units.append(Unit(run.name, run.path, None, rule, str(run.path), params))
        else:
            units.extend(Unit(run.name, run.path, (s,), rule, str(src), params)
                         for s, src in zip(steps, sources, strict=True))
    return units


def sweep_runs(args: argparse.Namespace) -> tuple[list[Run], list[str]] | None:
    """The runs of ``args.path`` when it is a folder of more than one run
    (:func:`g2po.cli.sweep.find_runs`), else None: a folder with no log reads as one log, as
    does a run's ``rollouts/`` folder (its step files are no runs): those get the single-log
    answer, as from ``g2po validate``. ``g2po triage`` and ``g2po advantages`` both ask this,
    once.

    Raises
    ------
    loaders.errors.NoLogFoundError
        When the folder holds exactly one log: no sweep of one run, and no log itself either;
        the message names the log to pass instead.
    """
    from loaders.detect import is_rollouts_folder
    from loaders.errors import NoLogFoundError

    if args.format or not Path(args.path).is_dir() or is_rollouts_folder(args.path):
        return None
    try:
        found = find_runs(args.path)
    except NoLogFoundError:
        return None
    if found is not None and len(found[0]) == 1:
        (run,) = found[0]
        raise NoLogFoundError(f"{args.path}: this folder is no log itself, and it holds one "
                              f"log, {run.path}: pass that log (a sweep takes a folder of "
                              "two or more)")
    return found


def add_ray_options(p: argparse.ArgumentParser) -> None:
    """``--ray [ADDRESS]`` and ``--ray-workers N`` (``g2po triage``, ``g2po advantages``)."""
    g = p.add_argument_group("a sweep on Ray (docs/sweeps.md)")
    g.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="compute file by file on Ray: the cluster at ADDRESS (auto, HOST:PORT, "
                        "ray://HOST:PORT), else RAY_ADDRESS's, else a local Ray; give it after "
                        "the path (or as --ray=ADDRESS)")
    g.add_argument("--ray-workers", type=int, metavar="N",
                   help="with --ray: files computed at once (a local Ray starts with N CPUs; "
                        "default: the machine's or the cluster's)")


# -- triage ----------------------------------------------------------------------------------

def triage_unit(unit: Unit, options: dict, *, stochastic: bool,
                estimator: str) -> pd.DataFrame:
    """The groups table of one unit (:func:`g2po.analysis.triage.triage_log`, uncached: a
    cluster's workers share no cache) under its ``params``, with its ``run``; the severity is
    judged again over the whole run by :func:`join_triage`."""
    from g2po.analysis.triage import triage_log

    table = triage_log(_open(unit.path, options), unit.steps, rule=unit.rule,
                       params=unit.params,
                       cache=False, stochastic=stochastic, estimator=estimator)
    table.insert(0, "run", unit.run)
    return table


def join_triage(parts: Iterable[pd.DataFrame], estimator: str) -> pd.DataFrame:
    """The groups tables of units put together, each run's severity and run-wide findings
    judged over that run (:func:`g2po.analysis.triage.assess`), runs in the order they come."""
    import pandas as pd

    from g2po.analysis.triage import TRIAGE_COLUMNS, assess

    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ["run", *TRIAGE_COLUMNS]})
    table = pd.concat(parts, ignore_index=True)
    runs = []
    for _, rows in table.groupby("run", sort=False):
        rows = rows.reset_index(drop=True)
        runs.append(assess(rows.astype({"no_signal": bool, "no_signal_grpo": bool}),
                           estimator))
    return pd.concat(runs, ignore_index=True)[["run", *TRIAGE_COLUMNS]]


def triage_runs(units: Sequence[Unit], options: dict, *,
                stochastic: bool, estimator: str, cache: bool,
                progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """The groups table of every run of ``units``, on this machine: :func:`triage_log` run by
    run (cached per step file, as for one log), ``progress`` called with (runs done, runs)."""
    from g2po.analysis.triage import triage_log

    runs = list({u.run: u for u in units}.values())  # a unit of each run, in order
    parts = []
    for i, unit in enumerate(runs):
        if progress is not None:
            progress(i, len(runs))
        table = triage_log(_open(unit.path, options), rule=unit.rule, params=unit.params,
                           cache=cache, stochastic=stochastic, estimator=estimator)
        table.insert(0, "run", unit.run)
        parts.append(table)
    if progress is not None:
        progress(len(runs), len(runs))
    return join_triage(parts, estimator)


# -- advantages ------------------------------------------------------------------------------

@dataclass(frozen=True)
class AdvantageSpec:
    """What ``g2po advantages`` computes: the ``estimators`` (names), their ``-p`` ``params``
    and the ``state_key`` strategy (None: each run's recorded one)."""

    estimators: tuple[str, ...]
    params: dict
    state_key: str | None


def advantages_unit(unit: Unit, options: dict, spec: AdvantageSpec,
                    table: Callable[..., pd.DataFrame]) -> pd.DataFrame:
    """The advantage table of one unit: ``table(rows, rule, params, estimators, state_key,
    base)``
    (:func:`g2po.cli.analysis.advantage_table`, as the single-log command computes it) of
    its rows, with its ``run`` first."""
    import pandas as pd

    log = _open(unit.path, options)
    steps = [None] if unit.steps is None else unit.steps
    rows = [log.load(train_step=s) for s in steps]
    rows = rows[0] if len(rows) == 1 else pd.concat(rows, ignore_index=True)
    out = table(rows, unit.rule, spec.params, list(spec.estimators), spec.state_key,
                unit.params)
    out.insert(0, "run", unit.run)
    return out


def advantage_file(out: Path, run: str) -> Path:
    """Where a run's advantages go: ``OUT/<run>.parquet``, the run's folders kept."""
    return Path(out) / f"{run}.parquet"


class ParquetParts:
    """One Parquet file written part by part (a run's units, in order), so a run of any
    size is never held whole: every part takes the first part's schema (a part whose columns
    cannot be cast to it is an error naming the file)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._writer = None
        self._schema = None
        self.rows = 0

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False, schema=self._schema)
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self.path, self._schema)
        self._writer.write_table(table)
        self.rows += len(frame)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def advantages_runs(units: Iterable[tuple[Unit, pd.DataFrame]], out: Path,
                    ) -> list[tuple[str, Path, int]]:
    """Write each run's advantage tables, as its units come (in run order), to
    :func:`advantage_file`; returns (run, file, rows) per run written."""
    written = []
    current: ParquetParts | None = None
    run = None
    for unit, table in units:
        if unit.run != run:
            if current is not None:
                current.close()
                written.append((run, current.path, current.rows))
            run, current = unit.run, ParquetParts(advantage_file(out, unit.run))
        current.write(table)
    if current is not None:
        current.close()
        written.append((run, current.path, current.rows))
    return written


def local_units(units: Sequence[Unit], compute: Callable[[Unit], pd.DataFrame],
                progress: Callable[[int, int], None] | None = None,
                ) -> Iterator[tuple[Unit, pd.DataFrame]]:
    """``compute`` of each unit on this machine, in order, ``progress`` as (done, all)."""
    for i, unit in enumerate(units):
        if progress is not None:
            progress(i, len(units))
        yield unit, compute(unit)
    if progress is not None:
        progress(len(units), len(units))


def say(command: str, text: str) -> None:
    """A line on stderr, named by the command."""
    print(f"g2po {command}: {text}", file=sys.stderr)
