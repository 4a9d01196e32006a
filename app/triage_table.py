"""The groups table (:func:`g2po.analysis.triage.triage_log`'s, the same as ``g2po triage``) as
the app's pages show it: computed once per run, training steps, G2PO parameters and outcome
rule, with a progress bar drawn by the computation, and the headers its columns are shown
under. The Groups page lists it; the Run overview charts its per-step alarm shares.
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
from g2po.analysis.triage import triage_log
from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator

__all__ = ["groups_table", "computed_table", "HEADERS"]

#: Column → header shown (the library's names stay in CSV / JSON and the URL).
HEADERS = {
    "train_step": "step", "group_id": "group", "task": "task", "rollouts": "rollouts",
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
