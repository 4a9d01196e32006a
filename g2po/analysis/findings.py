"""Judging the groups table: each group's severity and reason, and the findings said once for
the run, from the registered checks (:mod:`g2po.analysis.checks`).

A check that fires on at least :data:`RUN_WIDE_SHARE` of a run's groups (and on at least
:data:`RUN_WIDE_MIN`) is a finding about the run, said once (:func:`run_findings`) and left
out of the severity, so the groups that differ from the rest still come first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.checks import ESTIMATORS, Check, list_checks

__all__ = ["assess", "run_findings", "Finding", "recount", "RUN_WIDE_SHARE", "RUN_WIDE_MIN"]

#: A check firing on at least this share of a run's groups (and on at least
#: :data:`RUN_WIDE_MIN` groups) is a finding about the run (:func:`run_findings`).
RUN_WIDE_SHARE = 0.5
RUN_WIDE_MIN = 4


@dataclass(frozen=True)
class Finding:
    """A check said once for the run.

    kind : the check; groups : how many groups it fires on, of ``total``; text : what it is
    on this run, with the count, its likely cause and "Fix: " what to do (or why nothing);
    fix : that fix alone; level : ``defect`` (a warning) or ``note`` (progress,
    information).
    """

    kind: str
    groups: int
    total: int
    text: str
    fix: str = ""
    level: str = "defect"


def _check_estimator(estimator: str) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; one of {', '.join(ESTIMATORS)}")


def recount(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the counts of checks that need the whole run (:attr:`Check.recount`)
    filled in from it."""
    changes = {c.column: c.recount(table) for c in list_checks()
               if c.recount is not None and c.column in table.columns}
    return table.assign(**changes) if changes and len(table) else table


def _raw(table: pd.DataFrame, estimator: str, checks: list[Check]
         ) -> tuple[np.ndarray, np.ndarray]:
    """(severity, fires), each (n_rows, n_checks)."""
    n = len(table)
    sev = np.zeros((n, len(checks)))
    fires = np.zeros((n, len(checks)), dtype=bool)
    for j, check in enumerate(checks):
        fires[:, j] = check.fired(table, estimator)
        if check.defect:
            sev[:, j] = np.clip(np.nan_to_num(np.asarray(check.severity(table, estimator),
                                                         dtype=np.float64)), 0.0, 1.0)
    return sev, fires


def _said(checks: list[Check], fires: np.ndarray) -> list[bool]:
    total = len(fires)
    counts = fires.sum(axis=0)
    return [bool(k >= RUN_WIDE_MIN and k >= RUN_WIDE_SHARE * total) for k in counts]


def assess(table: pd.DataFrame, estimator: str = "g2po",
           exclude: Iterable[str] | None = None) -> pd.DataFrame:
    """The table with ``severity``, ``reason``, ``n_alarms`` and ``run_wide`` for
    ``estimator`` (the one the user trains with, one of :data:`ESTIMATORS`): each group's worst
    check (its severity, a function of the check's evidence), not counting the kinds in
    ``exclude`` (default: the run's findings, :func:`run_findings`, so a run-wide check does
    not rank); ``n_alarms`` counts the other kinds firing, ``run_wide`` names the excluded
    ones firing on the group (their raw counts stay in ``alarm_<kind>``, so assessing again
    gives the same table)."""
    _check_estimator(estimator)
    table = recount(table)
    checks = list_checks()
    n = len(table)
    sev, fires = _raw(table, estimator, checks)
    if exclude is None:
        said = np.array(_said(checks, fires), dtype=bool)
    else:
        skip = set(exclude)
        said = np.array([c.kind in skip for c in checks], dtype=bool)
    eff = sev * ~said
    worst = np.argmax(eff, axis=1) if n else np.zeros(0, dtype=np.int64)
    severity = eff[np.arange(n), worst] if n else np.zeros(0)
    others = (eff > 0).sum(axis=1) - (severity > 0)
    reason = np.full(n, "", dtype=object)
    for j, check in enumerate(checks):
        rows = np.flatnonzero((worst == j) & (severity > 0))
        if len(rows):
            words = check.reason(table, rows, estimator)
            reason[rows] = [w + (f" (+{others[i]} more)" if others[i] else "")
                            for w, i in zip(words, rows, strict=True)]
    n_alarms = (fires & ~said).sum(axis=1).astype(np.int64)
    run_wide = np.full(n, "", dtype=object)
    for j in np.flatnonzero(said):
        kind = checks[j].kind
        run_wide = np.where(fires[:, j], np.where(run_wide == "", kind, run_wide + ", " + kind),
                            run_wide)
    return table.assign(severity=severity, reason=pd.array(reason, dtype=object),
                        n_alarms=n_alarms, run_wide=pd.array(run_wide, dtype=object))


def run_findings(table: pd.DataFrame, estimator: str = "g2po") -> list[Finding]:
    """The checks firing on at least :data:`RUN_WIDE_SHARE` of the table's groups (and on at
    least :data:`RUN_WIDE_MIN`): findings about the run, each with its likely cause and fix,
    in the registry's order."""
    _check_estimator(estimator)
    total = len(table)
    if not total:
        return []
    table = recount(table)
    checks = list_checks()
    _, fires = _raw(table, estimator, checks)
    out = []
    for j, (check, said) in enumerate(zip(checks, _said(checks, fires), strict=True)):
        if not said:
            continue
        k = int(fires[:, j].sum())
        text = check.run_text(table, fires[:, j], estimator)
        fix = check.fix(table, fires[:, j], estimator)
        out.append(Finding(check.kind, k, total,
                           f"{check.title} on {k} of {total} groups: {text} Fix: {fix}", fix,
                           "defect" if check.defect else "note"))
    return out
