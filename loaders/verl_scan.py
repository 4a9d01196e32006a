"""The trajectory tables of a verl dump's files, read fast: only the fields a summary needs.

A summary (:func:`loaders.summary.trajectory_table`) needs, of each line, the ``uid``, the
``score``, ``is_action_valid``, ``step`` and ``gts``, never the prompt and response text that
make up ~99 % of the bytes. :func:`scan_file` decodes each file with msgspec into a struct of
those fields (the text is checked to be JSON strings, not decoded) and reuses the full
reader's rules (:func:`loaders.verl.split_keys`, :func:`~loaders.verl.add_rewards`,
:func:`~loaders.verl.task_labels`, :func:`g2po.steps.check_steps`) on them. Anything that
is not the plain shape verl writes (a line msgspec cannot take, a legacy dump without uids,
bad UTF-8, an unfinished last line, a repeated step, a field with an unexpected type, ``won``
/ ``done`` / ``task`` fields, a malformed line) sends the file to the full reader
(:func:`loaders.verl.load_verl_file`), so the table, and any error, is exactly the full
reader's (a malformed line: skipped, its trajectory marked incomplete, or with ``strict`` an
error). The report of a scan holds what the scan read (skips, the score and step notes,
the assumed validity); notes about state keys come when the rows are read.

The same pass counts each file's state nodes (:func:`loaders.log.state_nodes`, for the
state-merge rate) under the state-key strategies asked for: the fast path decodes each line's
``input`` and takes its default state key (:func:`loaders.verl.default_state`, the whole input
where it finds none, as the full reader does); a ``state_regex`` sends the file to the full
reader, whose rows carry the keys it extracts.

:func:`scan_files` scans many files in worker processes, each file in one worker: memory is
bounded by one file per worker, not by the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import msgspec
import numpy as np
import pandas as pd

from g2po.steps import check_steps
from loaders.advantage import advantage_sources
from loaders.files import read_bytes
from loaders.incomplete import INCOMPLETE, with_marks
from loaders.log import state_nodes
from loaders.report import LoadReport
from loaders.summary import trajectory_table
from loaders.verl import (
    MAX_TASK_CHARS,
    VALIDITY_ASSUMED,
    check_global_step,
    default_action,
    default_state,
    load_verl_file,
    split_keys,
    step_disagrees,
    task_labels,
)
from loaders.workers import worker_count, worker_pool

__all__ = ["FileScan", "FAST_COLUMNS", "scan_file", "scan_files", "scan_columns"]

_UNSET = msgspec.UNSET
_OTHER_COLUMNS = ("won", "done", "task")  # fields a trajectory table would read


class _Line(msgspec.Struct):
    """The fields of a dump line a summary reads; other fields are checked as JSON, skipped."""

    input: str
    output: msgspec.Raw
    score: float
    uid: str | msgspec.UnsetType = _UNSET
    step: int | float | None | msgspec.UnsetType = _UNSET
    gts: msgspec.Raw | msgspec.UnsetType = _UNSET
    is_action_valid: bool | msgspec.UnsetType = _UNSET
    won: msgspec.Raw | msgspec.UnsetType = _UNSET
    done: msgspec.Raw | msgspec.UnsetType = _UNSET
    task: msgspec.Raw | msgspec.UnsetType = _UNSET


_DECODER = msgspec.json.Decoder(_Line)
_MAX_LABEL_BYTES = 4 * MAX_TASK_CHARS + 2  # a JSON string of MAX_TASK_CHARS characters, at most


class _Unusual(Exception):
    """The file is not in the plain shape the fast path reads: the full reader takes it."""


@dataclass
class FileScan:
    """One dump file summarised: its training step, :func:`trajectory_table` (with
    ``task`` where its lines carry labels), its report as plain data, ``how``: ``fast``
    (the fields a summary needs) or ``full`` (the whole reader), and ``nodes``: its state
    nodes under each state-key strategy asked for (:func:`loaders.log.state_nodes`)."""

    train_step: int
    trajectories: pd.DataFrame
    report: dict
    how: str
    nodes: dict[str, int]


_QUOTE = b'"'


def _label(raw: msgspec.Raw | msgspec.UnsetType) -> object:
    """A ``gts`` value as far as :func:`task_labels` needs it: short strings decoded."""
    if raw is _UNSET:
        return None
    view = memoryview(raw)
    if len(view) > _MAX_LABEL_BYTES or view[:1] != _QUOTE:
        return None
    return msgspec.json.decode(raw)


def _codes(keys: list[str]) -> tuple[np.ndarray, np.ndarray, list[str], list[str]] | None:
    """:func:`loaders.verl.split_keys` as codes: each line's trajectory code and turn, and
    each trajectory's group and id (None where the full reader would not split the keys)."""
    parts = [k.rpartition("_") for k in keys]
    if not all(p[2].isdecimal() for p in parts):
        return None
    traj_codes, traj_keys = pd.factorize(pd.Series([p[0] for p in parts]), sort=True)
    split = split_keys([f"{k}_0" for k in traj_keys])
    if split is None:
        return None
    try:
        turn = np.array([int(p[2]) for p in parts], dtype=np.int64)
    except OverflowError:
        return None
    return traj_codes.astype(np.int64), turn, split[0], split[1]


def _fast(data: bytes, source: str, train_step: int, report: LoadReport, keyed: bool,
          acted: bool = False) -> pd.DataFrame:
    """The rows of a file in the plain shape (:class:`_Unusual` otherwise) that
    :func:`trajectory_table` and :func:`loaders.log.state_nodes` read, with their
    ``state_key`` when ``keyed``; when ``acted``, also each line's ``action``,
    ``step_reward`` and own ``task`` label, as the full reader gives them (else the label
    on each trajectory's first turn only, all the table reads)."""
    if not data.endswith(b"\n"):
        raise _Unusual  # an unfinished last line (or an empty file): the reader says which
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise _Unusual from None
    try:
        lines = _DECODER.decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise _Unusual from None
    view = memoryview
    if not lines or not all(view(x.output)[:1] == _QUOTE and x.won is _UNSET
                            and x.done is _UNSET and x.task is _UNSET for x in lines):
        raise _Unusual
    keys = [x.uid for x in lines]
    if _UNSET in keys:
        raise _Unusual
    coded = _codes(keys)
    if coded is None:
        raise _Unusual
    code, t, groups, trajs = coded
    try:  # an integer beyond float's range: the full reader names the line and field
        score = np.array([x.score for x in lines], dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        raise _Unusual from None
    if not np.isfinite(score).all() or (t > 2**62).any():
        raise _Unusual

    order, first_row, episode = _episodes(code, t, score, len(trajs), source, report)
    valid = [x.is_action_valid for x in lines]
    if all(v is _UNSET for v in valid):
        invalid = np.zeros(len(lines), dtype=bool)
        report.assume("is_action_valid", VALIDITY_ASSUMED)
    elif _UNSET in valid:
        raise _Unusual
    else:
        invalid = ~np.array(valid, dtype=bool)
    _check_step_field([x.step for x in lines], train_step, source, report)

    # The rows trajectory_table reads: one per line, keys as categories of the trajectories
    # (in sorted order, as trajectory_table sorts them).
    traj_cat = pd.Categorical.from_codes(code, pd.Index(trajs, dtype=object))
    group_codes, group_ids = pd.factorize(pd.Series(groups), sort=True)  # sorted categories:
    rows = pd.DataFrame({
        "group_id": pd.Categorical.from_codes(group_codes[code], group_ids),
        "traj_id": traj_cat,
        "t": t,
        "episode_reward": episode[code],
        "is_action_valid": ~invalid,
    })
    # Task labels: every line's, as the full reader reads them; else only each trajectory's
    # first turn, the one trajectory_table takes (fewer gts decoded).
    if acted:
        labelled, gts = slice(None), [x.gts for x in lines]
    else:
        labelled = order[first_row]
        gts = [lines[i].gts for i in labelled.tolist()]
    labels = task_labels([_label(g) for g in gts])
    if any(label is not None for label in labels):
        task = np.full(len(lines), None, dtype=object)
        task[labelled] = labels
        rows["task"] = task
    if keyed:
        inputs = [x.input for x in lines]
        keys = [default_state(text) for text in inputs]
        if acted and None in keys:
            raise _Unusual  # the full reader names the lines without a state key in its note
        rows["state_key"] = [text.strip() if key is None else key
                             for key, text in zip(keys, inputs, strict=True)]
    if acted:
        decode = msgspec.json.decode
        rows["action"] = [default_action(decode(x.output)) for x in lines]
        rows["step_reward"] = score
    return rows


def _episodes(code: np.ndarray, t: np.ndarray, score: np.ndarray, n_traj: int, source: str,
              report: LoadReport) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lines in trajectory order, each trajectory's first place in it, and (n_traj,)
    episode rewards (the score of its last turn); :class:`_Unusual` unless each trajectory's
    turns run 0, 1, …, T-1 once (the full reader explains)."""
    order = np.lexsort((t, code))
    c, ts = code[order], t[order]
    start = np.r_[True, c[1:] != c[:-1]]
    first_row = np.flatnonzero(start)
    position = np.arange(len(c)) - np.repeat(first_row, np.diff(np.r_[first_row, len(c)]))
    if (ts != position).any():
        raise _Unusual
    last_row = np.r_[first_row[1:] - 1, len(c) - 1]
    episode = np.empty(n_traj)
    episode[c[last_row]] = score[order][last_row]  # the score of the last turn
    varies = int((episode[code] != score).sum())
    if varies:
        report.note(f"{source}: score differs between the turns of {varies} line(s); "
                    "episode_reward = the last turn's score, per-turn scores in step_reward")
    return order, first_row, episode


def _check_step_field(steps: list, train_step: int, source: str, report: LoadReport) -> None:
    """The lines' ``step`` field, where given: whole numbers (:class:`_Unusual` otherwise),
    noted where they disagree with the file's global step."""
    if all(s is _UNSET for s in steps):
        return
    try:
        given = np.array([np.nan if s is _UNSET or s is None else s for s in steps],
                         dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        raise _Unusual from None
    finite = np.isfinite(given)
    if (finite & ((given != np.round(given)) | (np.abs(given) > 2.0**62))).any() \
            or np.isinf(given).any():
        raise _Unusual
    if (given != train_step).any():
        report.note(step_disagrees(source))


def scan_file(path: str, train_step: int, fast: bool = True,
              state_keys: Sequence[str] = (), state_regex: str | re.Pattern | None = None,
              strict: bool = False) -> FileScan:
    """Summarise one ``{train_step}.jsonl`` and count its state nodes under each of
    ``state_keys`` (state-key strategies, :func:`g2po.state_keys.resolve_state_key`; the
    keys extracted by ``state_regex`` where given): the fast path, else (or with ``fast``
    False, or a ``state_regex``) the full reader (``strict``: a malformed line is an error).
    Raises what the full reader raises for a broken file."""
    source = str(path)
    check_global_step(source, train_step)
    if fast and state_regex is None:
        report = LoadReport(source, "verl")
        try:
            rows = _fast(read_bytes(path), source, train_step, report, bool(state_keys))
            return FileScan(train_step, trajectory_table(rows, report.assumed),
                            report.to_dict(), "fast",
                            {k: state_nodes(rows, k) for k in state_keys})
        except _Unusual:
            pass
    report = LoadReport(source, "verl")
    steps = load_verl_file(path, report, train_step=train_step, state_regex=state_regex,
                           strict=strict)
    return FileScan(train_step, trajectory_table(steps, report.assumed), report.to_dict(),
                    "full", {k: state_nodes(steps, k) for k in state_keys})


#: The columns :func:`scan_columns` computes on its fast path; a plain file has none of
#: :data:`_OTHER_COLUMNS` (nor ``done`` or ``won``), which the full reader would take from it.
#: ``incomplete`` (a trajectory that lost a malformed line, read by the triage's check) is
#: never set on the fast path: a file with a malformed line leaves it for the full reader.
FAST_COLUMNS = ("group_id", "traj_id", "t", "state_key", "action", "episode_reward",
                "step_reward", "is_action_valid", "task", "train_step", "incomplete")
#: The columns the full reader derives from each line's texts, which the fast path does not
#: carry: asked for, they take the full reader. Any other column rides along from a key of
#: the same name (a reward extra, a recorded advantage), which :func:`_holds_keys` looks for.
TEXT_COLUMNS = ("observation", "response", "prompt")


def _holds_keys(data: bytes, names: Sequence[str]) -> bool:
    """Whether a line of ``data`` (a verl dump's JSON lines) may hold one of ``names`` as a
    key: ``"name"`` followed by a colon, not an escaped quote inside a text. A column the fast
    path does not compute (a recorded ``advantage``, an estimator's step column) is then read
    by the full reader; where no line holds it, the full reader gives no such column either,
    so the fast path's rows are its rows. One ``bytes.find`` per name: the file is not
    decoded twice."""
    for name in names:
        needle = b'"' + name.encode() + b'"'
        at = data.find(needle)
        while at >= 0:
            after = data[at + len(needle):at + len(needle) + 16].lstrip()
            if after.startswith(b":") and data[at - 1:at] != b"\\":
                return True
            at = data.find(needle, at + 1)
    return False


def scan_columns(path: str, train_step: int, columns: Sequence[str], options: dict
                 ) -> tuple[pd.DataFrame, dict]:
    """``columns`` of one ``{train_step}.jsonl`` as the full reader gives them (those it has,
    in that order, with canonical dtypes) and the report of the reading as plain data. The
    Groups page reads a whole run this way: where no reader option is set, the columns are
    among :data:`FAST_COLUMNS` plus ``done`` and ``won``, and the file is in the plain shape
    with a default state key on every line, from msgspec-decoded lines (about half the full
    reader's time) — other columns too where no line holds them (:func:`_holds_keys`);
    otherwise with the full reader, whose errors are raised. ``options``:
    the reader's (``state_regex``, ``action_regex``, None where not set; ``strict``). The
    ``incomplete`` mark comes along wherever the rows have it."""
    source = str(path)
    check_global_step(source, train_step)
    plain = not options.get("state_regex") and not options.get("action_regex")
    others = [c for c in columns if c not in {*FAST_COLUMNS, "done", "won", INCOMPLETE}]
    plain = plain and not set(others) & set(TEXT_COLUMNS)
    data = read_bytes(path) if plain else b""
    if plain and not _holds_keys(data, advantage_sources(others)):
        report = LoadReport(source, "verl")
        try:
            rows = _fast(data, source, train_step, report, keyed=True, acted=True)
        except _Unusual:
            pass
        else:
            rows = rows.assign(group_id=rows["group_id"].astype(str).tolist(),
                               traj_id=rows["traj_id"].astype(str).tolist(),
                               train_step=np.int64(train_step))
            rows = check_steps(rows, source=f"{source} (rows named by line number)")
            return rows[with_marks(columns, rows.columns)], report.to_dict()
    report = LoadReport(source, "verl")
    steps = load_verl_file(path, report, train_step=train_step, **options)
    return steps[with_marks(columns, steps.columns)], report.to_dict()


def _scan_job(job: tuple) -> FileScan:
    return scan_file(*job)


def scan_files(jobs: Sequence[tuple], workers: int | None = None) -> Iterator[FileScan]:
    """:func:`scan_file` of each job (its arguments: path, train_step and optionally fast,
    state_keys, state_regex, strict), in order, spread over worker processes
    (``workers``: default one per CPU, at most :data:`loaders.workers.MAX_WORKERS`; one job
    or one worker runs here; where no worker can be had, the rest runs here too). The first
    broken file's error is raised."""
    n = worker_count(len(jobs)) if workers is None else max(1, min(workers, len(jobs)))
    done = 0
    if n > 1:
        try:
            with worker_pool(n, [__name__]) as pool:
                for scan in pool.map(_scan_job, jobs, chunksize=1):
                    done += 1
                    yield scan
        except (BrokenProcessPool, OSError):
            pass  # no workers to be had (a worker killed, no fork): the rest is read here
    for job in jobs[done:]:
        yield scan_file(*job)
