"""What a log holds and what is wrong with it, collected rather than raised: ``g2po validate``.

Reads the log one training step at a time (or only its summaries with ``quick``), so a large
run is checked in constant memory, and a broken step does not hide the others.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from g2po.errors import G2POError, StepTableError
from g2po.outcomes import OutcomeRule, RewardScale, TruncationHint, detect_reward_scale
from loaders.detect import detect_format
from loaders.discover import find_logs
from loaders.errors import NoLogFoundError
from loaders.formats import LOG_FORMATS
from loaders.log import Log
from loaders.opener import open_log
from loaders.report import LoadReport, LoadWarning
from loaders.summary import trajectory_table, truncation_hint, with_outcomes
from loaders.workers import worker_count, worker_pool

__all__ = ["Validation", "validate_log"]

_READ_ERRORS = (G2POError, OSError, ValueError, pa.ArrowException)


@dataclass
class Validation:
    """The findings of :func:`validate_log`. ``problems`` are errors (the log, or part of it,
    cannot be used as is); skipped rows and assumptions are in ``report``."""

    path: str
    format: str | None = None
    manifest: dict = field(default_factory=dict)
    train_steps: list[int] = field(default_factory=list)
    n_groups: int = 0
    n_traj: int = 0
    n_steps: int = 0
    rule: str = ""
    rule_origin: str = ""
    n_success: int = 0
    n_truncated: int = 0
    truncation: TruncationHint | None = None
    reward_scale: RewardScale | None = None
    problems: list[str] = field(default_factory=list)
    report: LoadReport | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        report = self.report or LoadReport()
        return {
            "path": self.path, "format": self.format, "ok": self.ok,
            "train_steps": self.train_steps, "n_groups": self.n_groups, "n_traj": self.n_traj,
            "n_steps": self.n_steps, "rule": self.rule, "rule_origin": self.rule_origin,
            "n_success": self.n_success, "n_truncated": self.n_truncated,
            "truncation": None if self.truncation is None else {
                "length": self.truncation.length, "n_cut": self.truncation.n_cut,
                "message": self.truncation.message()},
            "reward_scale": None if self.reward_scale is None else {
                "success_reward": self.reward_scale.success_reward,
                "n_success": self.reward_scale.n_success, "by": self.reward_scale.by,
                "flag": self.reward_scale.flag},
            "problems": self.problems,
            "skipped": {s.reason: {"count": s.count, "where": s.where}
                        for s in report.skips.values()},
            "notes": report.notes,
        }


def _problem_lines(err: Exception, where: str = "") -> list[str]:
    prefix = f"{where}: " if where else ""
    if isinstance(err, StepTableError):
        source = f"{err.source}: " if err.source else ""
        return [f"{prefix}{source}{p}" for p in err.problems]
    return [f"{prefix}{err}"]


def validate_log(path: str | Path, format: str | None = None, *, quick: bool = False,
                 **options) -> Validation:
    """Open and check a log; every problem is collected, none raised.

    ``quick`` counts from the summaries (a run directory's footers) without reading rows;
    otherwise every training step is read and validated. ``options`` as for
    :func:`loaders.open_log`.
    """
    with warnings.catch_warnings():  # skips land in the result's report, not as warnings
        warnings.simplefilter("ignore", LoadWarning)
        return _validate(path, format, quick, options)


def _validate(path: str | Path, format: str | None, quick: bool, options: dict) -> Validation:
    result = Validation(str(path))
    try:
        result.format = format or detect_format(path)
    except _READ_ERRORS as err:
        result.problems.extend(_problem_lines(err))
        if isinstance(err, NoLogFoundError) and Path(path).is_dir():
            result.problems.extend(_logs_below(Path(path)))
        return result
    try:
        log: Log = open_log(path, format, **options)
    except _READ_ERRORS as err:
        result.problems.extend(_problem_lines(err))
        return result
    result.format = log.format
    result.manifest = log.manifest
    result.train_steps = log.train_steps()
    result.problems.extend(log.problems())
    try:
        rule = log.rule()
        result.rule, result.rule_origin = rule.describe(), log.rule_origin()
    except _READ_ERRORS as err:  # the first step, read for its won flags, is broken
        result.problems.extend(_problem_lines(err, "outcome rule"))
        rule = OutcomeRule()
        result.rule, result.rule_origin = rule.describe(), "the default (the log is unreadable)"
    trajectories = []
    if quick:
        try:
            summary = log.summary(rule)
            result.n_groups = int(summary["n_groups"].sum())
            result.n_traj = int(summary["n_traj"].sum())
            result.n_steps = int(summary["n_steps"].sum())
            result.n_success = int(round((summary["success_rate"] * summary["n_traj"]).sum()))
            result.n_truncated = int(round((summary["truncated_rate"] *
                                            summary["n_traj"]).sum()))
            result.truncation = log.truncation_hint(rule)
            if result.n_success == 0:
                result.reward_scale = log.reward_scale(rule)
        except _READ_ERRORS as err:
            result.problems.extend(_problem_lines(err))
        for step in result.train_steps if log.groups_indexed else ():  # what browsing reads
            try:
                log.groups(step)
            except _READ_ERRORS as err:
                where = f"training step {step}" if log.has_train_steps else ""
                result.problems.extend(_problem_lines(err, where))
    else:
        parts = LoadReport()
        for found in _check_all(log, result.train_steps, path, format, options):
            result.problems.extend(found.problems)
            result.n_groups += found.n_groups
            result.n_traj += found.n_traj
            result.n_steps += found.n_steps
            trajectories.extend(found.trajectories)
            if found.report:
                parts.merge(LoadReport.from_dict(found.report))
        if trajectories:
            every = pd.concat(trajectories, ignore_index=True)
            traj = with_outcomes(every, rule)
            result.n_success = int(traj["success"].sum())
            result.n_truncated = int(traj["truncated"].sum())
            result.truncation = truncation_hint(every, rule)
            result.reward_scale = detect_reward_scale(every, rule)
    try:
        log.metrics()
    except _READ_ERRORS as err:
        result.problems.extend(_problem_lines(err, "metrics"))
    result.report = log.report
    if not quick:
        result.report.merge(parts)
    for note in log.validation_notes():
        result.report.note(note)
    return result


@dataclass
class _StepCheck:
    """What checking some training steps found (plain data: it comes back from workers)."""

    problems: list[str] = field(default_factory=list)
    n_groups: int = 0
    n_traj: int = 0
    n_steps: int = 0
    report: dict = field(default_factory=dict)
    #: each step's rule-free :func:`loaders.summary.trajectory_table`, for the rule's counts
    trajectories: list[pd.DataFrame] = field(default_factory=list)


def _check(log: Log, train_steps: list[int]) -> _StepCheck:
    """Read and check ``train_steps`` of ``log``, one at a time."""
    found = _StepCheck()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        for step in train_steps:
            where = f"training step {step}" if log.has_train_steps else ""
            try:
                steps = log.load_step(step)
            except _READ_ERRORS as err:
                found.problems.extend(_problem_lines(err, where))
                continue
            found.problems.extend(f"{where}: {p}" if where else p
                                  for p in log.step_problems(step, steps))
            found.n_groups += steps["group_id"].nunique()
            found.n_traj += len(steps.drop_duplicates(["group_id", "traj_id"]))
            found.n_steps += len(steps)
            found.trajectories.append(trajectory_table(steps))
    return found


def _check_job(job: tuple) -> _StepCheck:
    """:func:`_check` in a worker, on the log opened there; its report comes back."""

    path, format, options, train_steps = job
    log = open_log(path, format, **{**options, "metrics": ""})
    found = _check(log, train_steps)
    found.report = log.report.to_dict()
    return found


def _check_all(log: Log, train_steps: list[int], path, format, options: dict
               ) -> list[_StepCheck]:
    """:func:`_check` of every step: logs of one file per step (verl dumps, run directories)
    are checked in worker processes, a share of the steps each (their reports come back in
    ``report``; a check made here leaves it empty: the log's own report has it)."""
    n = worker_count(len(train_steps)) if LOG_FORMATS[log.format].step_files else 1
    if n <= 1:
        return [_check(log, train_steps)]
    shares = [train_steps[i::n] for i in range(n)]
    jobs = [(str(path), format, options, share) for share in shares]
    with worker_pool(n, [__name__]) as pool:
        found = list(pool.map(_check_job, jobs))
    order = {step: i for i, step in enumerate(train_steps)}
    # problems in step order, as one process would list them
    merged = _StepCheck()
    for part in found:
        merged.n_groups += part.n_groups
        merged.n_traj += part.n_traj
        merged.n_steps += part.n_steps
        merged.trajectories.extend(part.trajectories)
    merged.problems = sorted((p for part in found for p in part.problems),
                             key=lambda p: _step_of(p, order))
    reports = [LoadReport.from_dict(part.report) for part in found]
    total = LoadReport()
    for report in reports:
        total.merge(report)
    merged.report = total.to_dict()
    return [merged]


def _step_of(problem: str, order: dict[int, int]) -> int:
    """The position of the training step a problem names (``training step N: …``)."""
    head = problem.split(":", 1)[0]
    if head.startswith("training step "):
        try:
            return order.get(int(head.removeprefix("training step ")), -1)
        except ValueError:
            pass
    return -1


def _logs_below(folder: Path) -> list[str]:
    """Where a folder that is no log itself holds logs further down, say which."""
    try:
        logs, _ = find_logs(folder)
    except _READ_ERRORS:
        return []
    names = [str(p.relative_to(folder)) for p in logs]
    return [f"{folder} is no log itself but holds {len(names)} log(s) below it: "
            + ", ".join(names[:10]) + (" …" if len(names) > 10 else "") + "; validate each"]

