"""Judging the groups table: each group's severity and reason, and the findings said once for
the run, from the registered checks (:mod:`g2po.analysis.checks`).

A check's severity is a function of its evidence (its own module says which). A defect that
most of the run shares is a property of the run, better said once than on every row: each
check's severities are weighed by how common it is, smoothly, with no cliff:

    s = k / (N + PRIOR_GROUPS),   weight = (1 − s)²

k the groups where it has a severity, N the groups of the table; ``PRIOR_GROUPS`` (4) keeps a
table of a few groups from discounting its own findings (one group of one: s = 0.2, not 1).
A check on 2 of 192 groups keeps 98 % of its severity, one on half the run 27 %, one on every
group of a large run ~0: two runs that differ by a few groups rank alike (the former rule
dropped a kind at 50 % of the groups, so runs at 49 % and 51 % answered differently).

Said for the run (:func:`run_findings`), when a check fires on :data:`RUN_WIDE_MIN` groups
or more: a check firing on a shrunk share of the groups of :data:`RUN_WIDE_SHARE` or more
(GRPO's "no signal" on a run whose groups are mostly solved is said, though the solved groups
have no severity); and a check that ranks no group on this run (progress such as converged
groups; cuts that only a wandering policy ran into), at any share. The words follow the
share; the ranking never jumps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.checks import ESTIMATORS, Check, list_checks

__all__ = ["assess", "run_findings", "Finding", "run_share", "run_weight", "recount",
           "PRIOR_GROUPS", "RUN_WIDE_SHARE", "RUN_WIDE_MIN"]

#: Groups assumed not to fire, added to every table's count (see the module's docstring).
PRIOR_GROUPS = 4
#: A defect at this shrunk share of the groups (and on :data:`RUN_WIDE_MIN` or more) is said
#: once for the run.
RUN_WIDE_SHARE = 0.25
RUN_WIDE_MIN = 4


@dataclass(frozen=True)
class Finding:
    """A check said once for the run.

    kind : the check; groups : how many groups it fires on, of ``total``; text : what it is
    on this run, with the count, its likely cause and "Fix: " what to do (or why nothing);
    fix : that fix alone; level : ``defect`` (a warning: it has a severity on some group) or
    ``note`` (progress, information: a check that is no defect, or one that has no severity
    anywhere on this run, such as cuts of a policy that wandered).
    """

    kind: str
    groups: int
    total: int
    text: str
    fix: str = ""
    level: str = "defect"


def run_share(k: int | np.ndarray, n: int) -> float | np.ndarray:
    """The shrunk share k / (n + :data:`PRIOR_GROUPS`)."""
    return k / (n + PRIOR_GROUPS)


def run_weight(k: int | np.ndarray, n: int) -> float | np.ndarray:
    """The weight of a check's severities on a run where it has one on ``k`` of ``n`` groups.

    >>> round(run_weight(2, 192), 3), round(run_weight(60, 120), 3), run_weight(0, 5)
    (0.98, 0.266, 1.0)
    """
    return (1 - run_share(k, n)) ** 2


def _check_estimator(estimator: str) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; one of {', '.join(ESTIMATORS)}")


def recount(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the counts and columns of the checks that need the whole run
    (:attr:`Check.whole`) filled in from it: the stage that sees every group at once (a
    group's size against the run's usual, a group against its peers). Where ``table`` lacks a
    check's count column (a table cut to a few columns) the check is left out."""
    if not len(table):
        return table
    changes: dict[str, np.ndarray] = {}
    for check in list_checks():
        if check.whole is None or check.column not in table.columns:
            continue
        got = check.whole(table)
        for name, values in got.items():
            changes[check.column if name == "count" else name] = \
                np.asarray(values, dtype=np.int64) if name == "count" else values
    return table.assign(**changes) if changes else table


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


def _said(checks: list[Check], sev: np.ndarray, fires: np.ndarray) -> list[bool]:
    n = len(sev)
    out = []
    for j in range(len(checks)):
        k = int(fires[:, j].sum())
        ranks = bool((sev[fires[:, j], j] > 0).any())
        out.append(k >= RUN_WIDE_MIN and (not ranks or run_share(k, n) >= RUN_WIDE_SHARE))
    return out


def assess(table: pd.DataFrame, estimator: str = "g2po",
           exclude: Iterable[str] | None = None) -> pd.DataFrame:
    """The table with ``severity``, ``reason``, ``n_alarms`` and ``run_wide`` for
    ``estimator`` (the one the user trains with, one of :data:`ESTIMATORS`).

    Each check's severity (a function of its evidence) is weighed by how common it is in the
    table (:func:`run_weight`); a group's severity is its worst check's, its reason that
    check's words (and "+n more"). ``exclude``: kinds left out instead (weight 0), every
    other kind counted whole, no weighing. ``run_wide`` names the kinds said for the run
    (:func:`run_findings`) that fire on the group; ``n_alarms`` counts the other kinds with a
    severity. Raw counts stay in ``alarm_<kind>``, so assessing again gives the same table."""
    _check_estimator(estimator)
    table = recount(table)
    checks = list_checks()
    n = len(table)
    sev, fires = _raw(table, estimator, checks)
    if exclude is None:
        weight = run_weight((sev > 0).sum(axis=0), n) if n else np.ones(len(checks))
    else:
        skip = set(exclude)
        weight = np.array([0.0 if c.kind in skip else 1.0 for c in checks])
    eff = sev * weight
    said = np.array(_said(checks, sev, fires), dtype=bool)
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
    n_alarms = ((sev > 0) & ~said & (weight > 0)).sum(axis=1).astype(np.int64)
    run_wide = np.full(n, "", dtype=object)
    for j in np.flatnonzero(said & np.array([c.defect for c in checks], dtype=bool)):
        kind = checks[j].kind
        run_wide = np.where(fires[:, j], np.where(run_wide == "", kind, run_wide + ", " + kind),
                            run_wide)
    return table.assign(severity=severity, reason=pd.array(reason, dtype=object),
                        n_alarms=n_alarms, run_wide=pd.array(run_wide, dtype=object))


def run_findings(table: pd.DataFrame, estimator: str = "g2po") -> list[Finding]:
    """What is said once for the run: the widespread defects, each with its likely cause and
    fix, then the progress and run-level facts (see the module's docstring); defects first,
    each kind by the share of groups it fires on."""
    _check_estimator(estimator)
    total = len(table)
    if not total:
        return []
    table = recount(table)
    checks = list_checks()
    sev, fires = _raw(table, estimator, checks)
    out = []
    for j, (check, said) in enumerate(zip(checks, _said(checks, sev, fires), strict=True)):
        if not said:
            continue
        k = int(fires[:, j].sum())
        text = check.run_text(table, fires[:, j], estimator)
        fix = check.fix(table, fires[:, j], estimator)
        out.append(Finding(check.kind, k, total,
                           f"{check.title} on {k} of {total} groups ({k / total:.0%}): {text} "
                           f"Fix: {fix}", fix,
                           "defect" if (sev[fires[:, j], j] > 0).any() else "note"))
    return sorted(out, key=lambda f: (f.level != "defect", -f.groups))
