"""Training curves from verl's loggers: the ``file`` backend's JSON lines and TensorBoard events.

verl's ``Tracking`` (``verl/utils/tracking.py``) logs every training step's metrics dict
(``actor/pg_loss``, ``critic/score/mean``, ``timing_s/gen``, ``val-core/…``) to the backends
a run chose:

- ``file`` (``FileLogger``): one ``{"step": N, "data": {metric: value, …}}`` line per call, at
  ``$VERL_FILE_LOGGER_PATH``, else ``$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl``
  (root ``.``). The file is opened with mode ``"wb"``: a resumed run starts it again at the
  resume step, and the steps before are gone (:func:`read_file_logger` says so);
- ``tensorboard``: event files in ``$TENSORBOARD_DIR``, else
  ``tensorboard_log/<project>/<experiment>``, one scalar per metric key and step (a resumed
  run adds an event file to the same folder). Read with TensorBoard's own event reader
  (the ``tensorboard`` package); a folder holding several runs (one folder of event files
  each, as TensorBoard counts runs) is refused with their names, since one run's curves
  belong to one dump.

Both give the frame of :meth:`loaders.Log.metrics`: one row per training step, ``train_step``
and one column per metric, the report of the reading attached (:func:`loaders.report_of`);
TensorBoard's events carry the time each was written, kept as :data:`TIMESTAMP`.
:func:`find_curves` looks for them beside a dump; :func:`elapsed_seconds` puts the steps on a
wall clock (the logger's times, else verl's ``timing_s/step`` summed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from loaders.errors import LoaderError, LogFormatError, NoLogFoundError
from loaders.files import is_regular_file, read_prefix
from loaders.lines import read_jsonl
from loaders.report import LoadReport, attach_report, step_ranges

__all__ = ["read_curves", "read_file_logger", "read_tensorboard", "tensorboard_runs",
           "curves_kind", "find_curves", "is_file_logger_line", "elapsed_seconds", "RESUMED",
           "TIMESTAMP", "STEP_SECONDS"]

_EVENTS = "tfevents"
#: Folders searched for curves beside a dump, and how deep for TensorBoard runs.
_TB_FOLDER = "tensorboard_log"
_TB_DEPTH = 3
#: The report's note when a file logger's file does not start at the first step.
#: The column of a metrics frame holding when a step was logged (Unix seconds), where the
#: logger recorded it: TensorBoard events, a run directory's ``metrics.jsonl``. Named as W&B
#: names its own; a leading ``_`` keeps it out of the metrics charted.
TIMESTAMP = "_timestamp"
#: verl's duration of a whole training step (seconds), logged at every step.
STEP_SECONDS = "timing_s/step"
RESUMED = ("verl's file logger opens its file with mode 'wb', so a resumed run starts it "
           "again at its resume step: the steps before are not in it")


def is_file_logger_line(record: object) -> bool:
    """Whether a parsed JSON line is one of verl's ``FileLogger``: ``{"step", "data"}``."""
    return isinstance(record, dict) and set(record) == {"step", "data"} \
        and isinstance(record["data"], dict)


def _is_events_file(path: Path) -> bool:
    return _EVENTS in path.name and is_regular_file(path)


def curves_kind(path: str | Path) -> str:
    """``file`` (verl's file-logger JSON lines) or ``tensorboard`` (an event file, or a folder
    with event files in it or below); :class:`NoLogFoundError` otherwise, saying what was
    expected."""
    path = Path(path)
    if not path.exists():
        raise NoLogFoundError(f"{path}: no such file or directory")
    if path.is_dir():
        if tensorboard_runs(path):
            return "tensorboard"
        raise NoLogFoundError(f"{path}: no TensorBoard event files (events.out.tfevents.*) in "
                              "this folder or below it")
    if _is_events_file(path):
        return "tensorboard"
    head = read_prefix(path)
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):
        record = None
    if is_file_logger_line(record):
        return "file"
    raise NoLogFoundError(f"{path}: not training curves: expected verl's file-logger JSON lines "
                          '({"step": N, "data": {...}} per line) or TensorBoard event files')


def read_curves(path: str | Path, *, strict: bool = False) -> pd.DataFrame:
    """The curves at ``path``, whichever logger wrote them (:func:`curves_kind`); ``strict``:
    a malformed line of a file logger's file is an error, not a line skipped."""
    path = Path(path)
    report = LoadReport(str(path), "curves")
    if curves_kind(path) == "file":
        return read_file_logger(path, report, strict=strict)
    return read_tensorboard(path, report)


def _frame(by_step: dict[int, dict[str, object]], report: LoadReport) -> pd.DataFrame:
    steps = sorted(by_step)
    frame = pd.DataFrame.from_records([by_step[s] for s in steps]) if steps \
        else pd.DataFrame()
    frame.insert(0, "train_step", np.asarray(steps, dtype=np.int64))
    return attach_report(frame, report)


def read_file_logger(path: str | Path, report: LoadReport | None = None, *,
                     strict: bool = False) -> pd.DataFrame:
    """verl's ``FileLogger`` file as one row per step. Lines of one step merge (verl logs a
    step's validation apart from its training metrics; for a key logged twice the later value
    wins, and the report says so); a file that starts after step 1 is noted
    (:data:`RESUMED`). Raises :class:`LogFormatError` naming the line and field of a line that
    is not ``{"step": whole number, "data": {…}}``; a line that is no JSON object is skipped
    and reported (:func:`loaders.lines.read_jsonl`), or an error with ``strict``."""
    path = Path(path)
    report = report or LoadReport(str(path), "curves")
    read = read_jsonl(path, report, strict=strict)
    records, lines = read.rows, read.numbers
    by_step: dict[int, dict[str, object]] = {}
    again: list[int] = []
    for record, line in zip(records, lines, strict=True):
        if not isinstance(record.get("data"), dict):
            raise LogFormatError(f"{path}:{line}: field 'data' must be an object of metrics "
                                 '(verl\'s file logger writes {"step": N, "data": {...}})')
        step = record.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise LogFormatError(f"{path}:{line}: field 'step' must be a whole number >= 0, "
                                 f"got {step!r}")
        values = by_step.setdefault(step, {})
        if values.keys() & record["data"].keys():
            again.append(line)
        values.update(record["data"])
    if again:
        report.note(f"{path}: {len(again)} line(s) log a metric of a step again (first: line "
                    f"{again[0]}); the later value is kept")
    if by_step and min(by_step) > 1:
        report.note(f"{path}: starts at step {min(by_step)}: {RESUMED} "
                    f"(steps {step_ranges(list(range(1, min(by_step))))} missing)")
    return _frame(by_step, report)


def tensorboard_runs(path: str | Path) -> list[Path]:
    """The TensorBoard runs at or below a folder (``_TB_DEPTH`` levels): each folder holding
    event files, as TensorBoard counts runs; sorted."""
    root = Path(path)
    runs: list[Path] = []
    frontier = [root]
    for _ in range(_TB_DEPTH + 1):
        below = []
        for folder in frontier:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            if any(_EVENTS in e.name and e.is_file() for e in entries):
                runs.append(folder)
            below += [Path(e.path) for e in entries
                      if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
        frontier = below
    return sorted(runs)


def _event_loader():
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        from tensorboard.util import tensor_util
    except ImportError:
        raise LoaderError("reading TensorBoard event files needs the tensorboard package "
                          "(pip install tensorboard, or the app's extras: pip install -e "
                          "'.[app]')") from None
    return EventFileLoader, tensor_util


def read_tensorboard(path: str | Path, report: LoadReport | None = None) -> pd.DataFrame:
    """One TensorBoard run (an event file, or the folder of one run's event files) as one row
    per step, a column per scalar tag. Event files are read in name order (their names start
    with the time they were opened): where a later file (a resumed run) logs a tag at a step
    again, its value wins, and the report says which steps. A folder with several runs is a
    :class:`LoaderError` naming them."""
    path = Path(path)
    report = report or LoadReport(str(path), "curves")
    if path.is_dir():
        runs = tensorboard_runs(path)
        if len(runs) != 1:
            names = ", ".join(str(r.relative_to(path)) or "." for r in runs[:10])
            raise LoaderError(f"{path}: holds {len(runs)} TensorBoard runs ({names}); the "
                              "curves of one run go with one dump: pass that run's folder")
        files = sorted(p for p in runs[0].iterdir() if _is_events_file(p))
    else:
        files = [path]
    loader_class, tensor_util = _event_loader()
    by_step: dict[int, dict[str, object]] = {}
    written: dict[tuple[int, str], int] = {}
    redone: set[int] = set()
    skipped: list[str] = []
    stamps: dict[int, float] = {}
    for number, file in enumerate(files):
        try:
            events = list(loader_class(str(file)).Load())
        except Exception as err:  # noqa: BLE001 - the reader's own errors (protobuf, I/O)
            raise LogFormatError(f"{file}: not a readable TensorBoard event file "
                                 f"({type(err).__name__}: {err})") from None
        for event in events:
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    number_ = float(value.simple_value)
                elif kind == "tensor":
                    array = tensor_util.make_ndarray(value.tensor)
                    if array.size != 1 or array.dtype.kind not in "biuf":
                        skipped.append(value.tag)
                        continue
                    number_ = float(array.reshape(()))
                else:
                    skipped.append(value.tag)
                    continue
                key = (int(event.step), value.tag)
                if written.get(key, number) < number:
                    redone.add(int(event.step))
                    stamps.pop(int(event.step), None)  # the redone step's time is its own
                written[key] = number
                by_step.setdefault(int(event.step), {})[value.tag] = number_
                stamps[int(event.step)] = max(stamps.get(int(event.step), 0.0),
                                              float(event.wall_time))
    if redone:
        report.note(f"{path}: steps {step_ranges(sorted(redone))} are logged again by a later "
                    "event file (a resumed run); the later values are kept")
    if skipped:
        report.note(f"{path}: {len(set(skipped))} tag(s) that are no scalars (images, "
                    f"histograms, text) left out, e.g. {sorted(set(skipped))[0]!r}")
    if not by_step:
        raise LogFormatError(f"{path}: no scalars in its TensorBoard event files")
    for step, stamp in stamps.items():
        if stamp > 0:  # an event with no time (0) says nothing about when
            by_step[step][TIMESTAMP] = stamp
    return _frame(by_step, report)


def elapsed_seconds(metrics: pd.DataFrame) -> tuple[np.ndarray | None, str]:
    """Where each step of a metrics frame (one row per step, sorted by ``train_step``) lies on
    the wall clock: seconds since the first step was logged, (n_rows,) float64, NaN where
    unknown; with the source in words. The logger's own times (:data:`TIMESTAMP`) where it
    wrote them, else verl's ``timing_s/step`` summed (the first step at 0, each later
    step at the end of its own; a step without it is NaN and adds nothing to the sum). None
    and "" when the frame has neither.

    >>> frame = pd.DataFrame({"train_step": [1, 2, 3], "timing_s/step": [10.0, 20.0, 30.0]})
    >>> elapsed_seconds(frame)
    (array([ 0., 20., 50.]), "verl's timing_s/step, summed")
    """
    if TIMESTAMP in metrics.columns:
        stamps = pd.to_numeric(metrics[TIMESTAMP], errors="coerce").to_numpy(np.float64)
        if np.isfinite(stamps).any():
            return stamps - np.nanmin(stamps), "the times the logger wrote"
    if STEP_SECONDS in metrics.columns:
        seconds = pd.to_numeric(metrics[STEP_SECONDS], errors="coerce").to_numpy(np.float64)
        known = np.isfinite(seconds)
        if known.any():
            total = np.cumsum(np.where(known, seconds, 0.0))
            out = total - total[np.flatnonzero(known)[0]]
            return np.where(known, out, np.nan), "verl's timing_s/step, summed"
    return None, ""


def find_curves(dump: str | Path) -> tuple[Path | None, list[str]]:
    """Training curves beside a dump folder: verl file-logger files (``*.jsonl`` that are not
    ``{step}.jsonl`` dump files) in the folder and its parent, TensorBoard runs in them or in a
    ``tensorboard_log`` folder there. Returns the one found (None when none or several) and
    notes saying what was found."""
    dump = Path(dump)
    found: list[Path] = []
    for folder in dict.fromkeys([dump, dump.parent]):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.suffix == ".jsonl" and not entry.stem.isdigit() and is_regular_file(entry):
                try:
                    if curves_kind(entry) == "file":
                        found.append(entry)
                except (LoaderError, OSError):
                    continue
        if any(_is_events_file(e) for e in entries):
            found.append(folder)
        tb = folder / _TB_FOLDER
        if tb.is_dir():
            found.extend(r for r in tensorboard_runs(tb) if r not in found)
    if not found:
        return None, []
    if len(found) == 1:
        return found[0], [f"training curves found beside the dump: {found[0]}"]
    shown = ", ".join(str(p) for p in found[:5]) + (" …" if len(found) > 5 else "")
    return None, [f"{len(found)} sets of training curves beside the dump ({shown}); none "
                  "used: choose one with --metrics"]
