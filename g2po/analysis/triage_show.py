"""The groups table as people read it: its default order, sorting and filters, the names a
view gives its groups and tasks (the same in the app and the terminal), a terminal's brief
view, the share of groups per training step each check fires on (the Run overview), and
the step limit the table's counts suggest. The table itself is :mod:`g2po.analysis.triage`'s;
which kinds exist is the check registry's (:mod:`g2po.analysis.checks`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.checks import ESTIMATORS, get_check, list_checks
from g2po.analysis.findings import recount
from g2po.analysis.labels import (
    cut_middle,
    distinguishing_labels,
    lead_with_difference,
    without_shared_parts,
)
from g2po.outcomes import OutcomeRule, TruncationHint, truncation_from_counts

__all__ = ["default_sort", "sort_groups", "filter_groups", "step_shares", "brief_view",
           "truncation_hint", "ALARM_FILTERS", "GroupNames", "group_names", "one_step",
           "ID_CHARS", "TASK_CHARS"]

#: Filters beside the check kinds: each estimator's own "no training signal".
ALARM_FILTERS = {f"no_signal_{e}": f"No training signal under {name}"
                 for e, name in ESTIMATORS.items()}


def truncation_hint(table: pd.DataFrame, rule: OutcomeRule) -> TruncationHint | None:
    """Failures of the table's groups that look cut at a step limit the log does not state
    (:func:`g2po.outcomes.detect_truncation`, from the per-group counts, so the whole run is
    judged without reading it again); None when ``rule`` already has a ``truncate_at``."""
    if rule.truncate_at is not None or table.empty:
        return None
    longest = table["longest"].to_numpy(dtype=np.int64)
    top = int(longest.max())
    rollouts = table["rollouts"].to_numpy(dtype=np.int64)
    failures = np.rint(rollouts * (1 - table["success_rate"].to_numpy(dtype=np.float64)))
    return truncation_from_counts(
        top, int(table["undone_at_longest"].to_numpy()[longest == top].sum()),
        int(failures.sum()), int(rollouts.sum()),
        bool((table["shortest"].to_numpy() == top).all()))


#: The longest short group id (:func:`lead_with_difference`: a verl uid's 36 characters
#: become ``17d1f1…444248c``), in the app's Groups table and ``g2po triage`` alike.
ID_CHARS = 14
#: The longest task shown as it is; a longer one is named by its distinguishing words, in
#: about as many characters.
TASK_CHARS = 28


@dataclass(frozen=True)
class GroupNames:
    """How the groups of a table are named for people: ``ids`` (group id → the part that
    tells it apart, :func:`lead_with_difference`), ``prefix`` (what every id starts with),
    ``tasks`` (task text → its label: short tasks as they are, long ones by their
    distinguishing words; None when the task column tells nothing the id does not)."""

    ids: dict[str, str]
    prefix: str
    tasks: dict[str, str] | None

    def short_ids(self, table: pd.DataFrame) -> list[str]:
        """The short id of each row of ``table`` (a groups table, or rows of one)."""
        return [self.ids.get(g, g) for g in table["group_id"].astype(str)]

    def task_labels(self, table: pd.DataFrame) -> list[str] | None:
        """The task label of each row of ``table``; None without a task column to show."""
        if self.tasks is None:
            return None
        return [self.tasks.get(t) or _one_line(t) for t in table["task"].astype(str)]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def group_names(table: pd.DataFrame, *, id_limit: int = ID_CHARS,
                task_limit: int = TASK_CHARS) -> GroupNames:
    """The :class:`GroupNames` of every group of ``table``: computed over the whole table,
    never over the rows a page or a terminal shows, so a group reads the same whatever the
    sort, the filters, ``--top`` or the width (one table, one name).

    Tasks: shown when the table has more than one and they are not the group ids. A task of
    at most ``task_limit`` characters stays as it is; a longer name without spaces (verl's
    ``gts`` such as ``pick_two_obj_and_place-Potato-None-Fridge-209``) loses the parts every
    such name has (:func:`without_shared_parts`) and is cut in the middle
    (:func:`cut_middle`: its kind and its end); a longer text (a TextWorld intro) is
    named by the words that tell it from the table's other long texts
    (:func:`distinguishing_labels`, without headlines: a greeting names no task).

    >>> names = group_names(pd.DataFrame({"group_id": ["run-s0", "run-s1"],
    ...     "task": ["Welcome! Take the coin from the sauna.",
    ...              "Welcome! Take the coin from the attic."]}))
    >>> names.ids, names.prefix, names.tasks["Welcome! Take the coin from the attic."]
    ({'run-s0': 's0', 'run-s1': 's1'}, 'run-', 'attic')
    """
    ids = sorted(set(table["group_id"].astype(str)))
    short, prefix = lead_with_difference(ids, limit=id_limit)
    tasks = table["task"].astype(str) if "task" in table.columns else None
    named = None
    if tasks is not None and tasks.nunique() > 1 and \
            not (tasks.to_numpy() == table["group_id"].astype(str).to_numpy()).all():
        long = [t for t in sorted(set(tasks)) if len(_one_line(t)) > task_limit]
        texts = [t for t in long if " " in t.strip()]
        names = [t for t in long if " " not in t.strip()]
        named = {t: cut_middle(n, task_limit) for t, n in
                 zip(names, without_shared_parts([t.strip() for t in names]), strict=True)}
        named.update(zip(texts, distinguishing_labels(texts, limit=task_limit,
                                                      headlines=False), strict=True))
    return GroupNames(dict(zip(ids, short, strict=True)), prefix, named)


def one_step(table: pd.DataFrame) -> int | None:
    """The training step every row of ``table`` is of, None when they span several (or
    there are none): where one, a view says it once above the rows instead of in a column."""
    steps = pd.unique(table["train_step"]) if "train_step" in table.columns else []
    return int(steps[0]) if len(steps) == 1 else None


def brief_view(table: pd.DataFrame, names: GroupNames | None = None
               ) -> tuple[pd.DataFrame, str]:
    """The columns to scan first, for a terminal, and the start every group id shares.

    ``step`` (only when the rows span several training steps: :func:`one_step`); ``group``
    and ``task``: as ``names`` name them (:func:`group_names`; give the whole table's, so
    that the rows shown read as in every other view; default: ``table``'s own); ``task``
    left out when it tells nothing; ``severity``; ``success``; ``reason``. Text as the log
    gave it (a terminal escapes it)."""
    names = names or group_names(table)
    out = {}
    if table["train_step"].nunique() > 1:
        out["step"] = table["train_step"].to_numpy()
    out["group"] = names.short_ids(table)
    tasks = names.task_labels(table)
    if tasks is not None:
        out["task"] = tasks
    out["severity"] = [f"{v:.2f}" for v in table["severity"].to_numpy(dtype=np.float64)]
    out["success"] = [f"{v:.0%}" for v in table["success_rate"].to_numpy(dtype=np.float64)]
    out["reason"] = table["reason"].astype(str).to_numpy()
    return pd.DataFrame(out, index=table.index), names.prefix


def default_sort() -> list[tuple[str, bool]]:
    """The table's default order, worst first: by severity (:func:`assess`), then most kinds
    of alarm, then the most steps — training step and group id only as the last resort
    ((column, descending) pairs)."""
    return [("severity", True), ("n_alarms", True), ("steps", True),
            ("train_step", False), ("group_id", False)]


def sort_groups(table: pd.DataFrame, by: str | None = None,
                descending: bool | None = None) -> pd.DataFrame:
    """The table sorted by column ``by`` (default: :func:`default_sort`); numbers and flags
    largest first unless ``descending`` is False, text A to Z unless it is True; ties keep
    training step and group order. Raises ``KeyError`` naming the columns on an unknown one."""
    if by is None:
        keys = default_sort()
    else:
        if by not in table.columns:
            raise KeyError(f"no column {by!r} to sort by; columns: {', '.join(table.columns)}")
        text = table[by].dtype == object or pd.api.types.is_string_dtype(table[by].dtype)
        keys = [(by, (not text) if descending is None else descending),
                ("train_step", False), ("group_id", False)]
    keys = [(c, d) for i, (c, d) in enumerate(keys)
            if c in table.columns and c not in [k for k, _ in keys[:i]]]
    return table.sort_values([c for c, _ in keys], ascending=[not d for _, d in keys],
                             kind="stable").reset_index(drop=True)


def filter_groups(table: pd.DataFrame, *, alarms: Iterable[str] = (),
                  task: str | None = None, min_success: float | None = None,
                  max_success: float | None = None,
                  train_steps: Iterable[int] | None = None,
                  estimator: str = "g2po") -> pd.DataFrame:
    """The rows where any of ``alarms`` fires (registered check kinds, as ``estimator`` is
    judged, or ``no_signal_g2po`` / ``no_signal_grpo`` for an estimator's own flag), whose
    task or group id contains ``task`` (case-insensitive), whose success rate lies in
    [``min_success``, ``max_success``], at ``train_steps``. Raises ``KeyError`` naming the
    known kinds on an unknown one."""
    keep = np.ones(len(table), dtype=bool)
    alarms = list(alarms)
    if alarms:
        hit = np.zeros(len(table), dtype=bool)
        counted = recount(table)
        for kind in alarms:
            if kind in ALARM_FILTERS:
                hit |= table["no_signal" if kind == "no_signal_g2po" else kind].to_numpy(bool)
                continue
            try:
                check = get_check(kind)
            except KeyError:
                known = [c.kind for c in list_checks()] + list(ALARM_FILTERS)
                raise KeyError(f"unknown alarm {kind!r}; known: {', '.join(known)}") from None
            hit |= check.fired(counted, estimator)
        keep &= hit
    if task:
        needle = task.lower()
        keep &= (table["task"].astype(str).str.lower().str.contains(needle, regex=False) |
                 table["group_id"].astype(str).str.lower().str.contains(needle, regex=False)
                 ).to_numpy()
    if min_success is not None:
        keep &= table["success_rate"].to_numpy() >= min_success - 1e-12
    if max_success is not None:
        keep &= table["success_rate"].to_numpy() <= max_success + 1e-12
    if train_steps is not None:
        keep &= np.isin(table["train_step"].to_numpy(), list(train_steps))
    return table[keep].reset_index(drop=True)


def step_shares(table: pd.DataFrame, estimator: str = "g2po") -> pd.DataFrame:
    """Per training step of a groups table: ``groups``, the share of groups with no G2PO
    signal (``no_signal``) and with none under GRPO (``no_signal_grpo``), and the share where
    each registered check fires (``alarm_<kind>``, as ``estimator`` is judged)."""
    checks = list_checks()
    columns = ["train_step", "groups", "no_signal", "no_signal_grpo",
               *(c.column for c in checks)]
    if table.empty:
        return pd.DataFrame(columns=columns)
    counted = recount(table)
    flags = table[["no_signal", "no_signal_grpo"]].astype(np.float64).assign(
        **{c.column: c.fired(counted, estimator).astype(np.float64) for c in checks})
    grouped = flags.groupby(table["train_step"].to_numpy(), sort=True)
    out = grouped.mean()
    out.insert(0, "groups", grouped.size())
    return out.rename_axis("train_step").reset_index()[columns]
