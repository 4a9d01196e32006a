"""The groups table (:func:`g2po.analysis.triage.triage_log`'s, the same as ``g2po triage``) as
the app's pages show it: computed once per run, training steps, G2PO parameters and outcome
rule, with a progress bar drawn by the computation; the headers its columns are shown under,
and the frame the Groups page lists (:func:`shown_frame`: what decides first, groups and tasks
named as ``g2po triage`` names them). The Run overview charts its per-step alarm shares.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from app import data
from app.context import AppContext, OpenLog
from app.ui import show_error
from g2po.analysis.checks import list_checks
from g2po.analysis.triage import ALARM_COLUMNS, TRIAGE_COLUMNS, triage_log
from g2po.analysis.triage_show import TASK_CHARS, GroupNames
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator

__all__ = ["cached_row", "groups_table", "computed_table", "shown_frame", "HEADERS", "GROUP",
           "TASK"]

#: The headers of a group's short id and its task's label (:class:`GroupNames`); the whole
#: id and text are the last columns, under :data:`HEADERS`.
GROUP, TASK = "group", "task"
#: Column → header shown (the library's names stay in CSV / JSON and the URL).
HEADERS = {
    "train_step": "step", "group_id": "group id", "task": "task text", "rollouts": "rollouts",
    "steps": "steps", "success_rate": "success", "reward_mean": "reward mean",
    "reward_std": "reward std", "zero_adv_share": "A≈0 share", "adv_abs_mean": "mean |A|",
    "adv_ec_abs_mean": "mean |A^EC|", "state_nodes": "state nodes", "merge_rate": "merge rate",
    "max_value_var": "max Var(V)", "invalid_rate": "invalid", "truncated_share": "truncated",
    "no_signal": "no signal (G2PO)", "no_signal_grpo": "no signal (GRPO)",
    "n_alarms": "alarm kinds", "run_wide": "run-wide alarms",
    "shortest": "shortest", "longest": "longest", "shortest_win": "shortest win",
    "undone_at_longest": "failed at longest, no done",
    "severity": "severity", "reason": "why", "sign_disagree_share": "G2PO/GRPO sign differs",
    "adv_min": "min A", "adv_max": "max A",
    # each registered check: its count under its title, its evidence under its own headers
    **{c.column: c.title for c in list_checks()},
    **{column: header for c in list_checks() for column, header in c.columns.items()},
}
#: Computed tables (log key, version, steps, params, rule) → table; here (not st.cache_data)
#: so the progress bar is drawn by the computation itself, never replayed.
_TABLES: OrderedDict[tuple, pd.DataFrame] = OrderedDict()
_TABLES_MAX = 16


def groups_table(ctx: AppContext, opened: OpenLog, steps: list[int] | None,
                 rule: OutcomeRule, bar=None, *, stochastic: bool = False) -> pd.DataFrame:
    """The groups table of ``steps`` (None: every training step) of a run under the sidebar's
    G2PO parameters and ``rule``; ``bar`` (an ``st.progress``) shows the work; ``stochastic``
    declares the environment random (no aliasing alarm)."""
    params = ctx.params
    version = data.log_version(opened.log)
    key = (opened.key, version, None if steps is None else tuple(steps), params, rule,
           stochastic)
    if key in _TABLES:
        _TABLES.move_to_end(key)
        return _TABLES[key]

    def progress(done: int, total: int) -> None:
        if bar is not None and total:
            bar.progress(min(done / total, 1.0), text="Computing the groups table…")

    table = triage_log(opened.log, steps, rule=rule, params=params,
                       progress=progress, stochastic=stochastic)
    _TABLES[key] = table
    while len(_TABLES) > _TABLES_MAX:
        _TABLES.popitem(last=False)
    return table


def cached_row(ctx: AppContext, opened: OpenLog, rule: OutcomeRule, train_step: int,
               group_id: str) -> dict | None:
    """The group's row of the run's groups table where this server computed it already (the
    Groups page, every training step, else the group's step), under the sidebar's parameters
    and ``rule``; None otherwise (the explorer does not compute a whole run for it). The
    checks that judge a group against the run (a partial group, a group unusual for this
    run) speak in the explorer from this row."""
    version = data.log_version(opened.log)
    for steps in (None, (train_step,)):
        table = _TABLES.get((opened.key, version, steps, ctx.params, rule, False))
        if table is not None:
            hit = table[(table["train_step"] == train_step) &
                        (table["group_id"].astype(str) == str(group_id))]
            if len(hit):
                return hit.iloc[0].to_dict()
    return None


def computed_table(ctx: AppContext, opened: OpenLog, steps: list[int] | None,
                   rule: OutcomeRule, *, stochastic: bool = False
                   ) -> tuple[DeltaGenerator, pd.DataFrame | None]:
    """(placeholder, :func:`groups_table`) with a progress bar in the placeholder while it is
    computed, for the caller to fill with what it shows; the table is None after saying why it
    cannot be computed."""
    section = st.empty()
    with section.container():
        bar = st.progress(0.0, text="Computing the groups table…")
        try:
            return section, groups_table(ctx, opened, steps, rule, bar,
                                         stochastic=stochastic)
        except data.LOADER_ERRORS + (G2POError,) as err:
            show_error("Cannot compute the groups table", err)
            return section, None


#: The columns that decide, first, so that they show at 1280 pixels with the sidebar open;
#: then the alarms, then the rest; the whole id and task text last.
_FIRST = ("severity", "success_rate", "reason", "no_signal", "no_signal_grpo", "n_alarms",
          "run_wide", *ALARM_COLUMNS)
SHOWN_ORDER = [*_FIRST, *[c for c in TRIAGE_COLUMNS
                          if c not in _FIRST and c not in ("train_step", "group_id", "task")],
               "group_id", "task"]
_PERCENT = ("success_rate", "zero_adv_share", "merge_rate", "invalid_rate", "truncated_share",
            "sign_disagree_share", "aliased_share", "hub_share")


def shown_frame(shown: pd.DataFrame, names: GroupNames) -> tuple[pd.DataFrame, dict]:
    """The Groups page's frame of the rows ``shown`` and its ``column_config``: ``step``
    (when the rows span several training steps), the group's short id and its task's label
    as ``names`` give them (the whole table's :func:`group_names`, as ``g2po triage``),
    severity, success and why, the alarms and the rest under :data:`HEADERS`; the whole group
    id and task text last (the task text only where the labels stand for it)."""
    lead: dict[str, object] = {}
    config: dict[str, object] = {}
    if shown["train_step"].nunique() > 1:
        lead[HEADERS["train_step"]] = shown["train_step"].to_numpy()
        config[HEADERS["train_step"]] = st.column_config.NumberColumn(width=48)
    lead[GROUP] = names.short_ids(shown)
    config[GROUP] = st.column_config.TextColumn(
        width=_fit(names.ids.values(), 60),
        help="What tells the group's id from the others' (the whole id: 'group id', the "
             "last column but one)")
    tasks = names.task_labels(shown)
    if tasks is not None:
        lead[TASK] = tasks
        config[TASK] = st.column_config.TextColumn(
            width=_fit(tasks, 80),
            help="The words that tell the task from the table's others (the whole text: "
                 "'task text', the last column)")
    rest = [c for c in SHOWN_ORDER if c != "task" or tasks is not None]
    frame = shown[rest].rename(columns=HEADERS)
    for i, (column, values) in enumerate(lead.items()):
        frame.insert(i, column, values)
    config[HEADERS["severity"]] = st.column_config.NumberColumn(format="%.2f", width=70)
    config[HEADERS["reason"]] = st.column_config.TextColumn(width=520)
    config.update({HEADERS[c]: st.column_config.NumberColumn(
        HEADERS[c], format="percent", width=70 if c == "success_rate" else None)
        for c in _PERCENT})
    return frame, config


def _fit(texts, least: int) -> int:
    """Pixels for a column of ``texts`` (at most :data:`TASK_CHARS` characters, ~7 pixels
    each in the data grid, and its padding), at least ``least``."""
    longest = min(max((len(t) for t in texts), default=0), TASK_CHARS)
    return max(least, 7 * longest + 18)
