"""Groups: every group of a training step, or of every training step, as one table, worst
first (no training signal, then most kinds of credit alarm), sortable and filterable by alarm,
task and success rate; click a row to open that group in the group explorer. Sort and filters
live in the URL (``gscope``, ``gsort``, ``gorder``, ``galarm``, ``gtask``, ``gsuccess``).

The numbers are :func:`g2po.analysis.triage.triage_log`'s, the same as ``g2po triage``; a whole
run is computed once with a progress bar and then read from its on-disk cache
(:mod:`app.triage_table`, which the Run overview's alarm shares read too).
"""

from __future__ import annotations

import streamlit as st

from app.context import AppContext
from app.navigation import goto_step
from app.safe import fmt
from app.triage_table import HEADERS, computed_table
from app.ui import md, no_run_message, picked_row
from app.url_state import seed_from_url, write_url
from g2po.analysis.alarms import ALARM_KINDS, ALARM_TITLES, STOCHASTIC_NOTE
from g2po.analysis.triage import (
    ALARM_COLUMNS,
    ESTIMATORS,
    TRIAGE_COLUMNS,
    assess,
    filter_groups,
    run_findings,
    sort_groups,
)
from g2po.analysis.triage import (
    ALARM_FILTERS as NO_SIGNAL_FILTERS,
)

__all__ = ["render", "SCOPES", "SORTS", "ALARM_FILTERS"]

SCOPES = {"step": "This training step", "all": "Every training step"}
#: Columns the table can be sorted by ("" = the default order, worst first).
SORTS = {"": "worst first (severity)",
         **{c: HEADERS[c] for c in TRIAGE_COLUMNS}}
#: A check's short name, as the table's headers and filters show it.
TITLES = ALARM_TITLES
#: Alarm filters: each estimator's own "no signal", and every registered check.
ALARM_FILTERS = {**NO_SIGNAL_FILTERS,
                 **{k: ALARM_TITLES[k] for k in ALARM_KINDS if k != "no_signal"}}
#: The order shown: what is wrong first (the library's order stays in CSV / JSON).
_FIRST = ("train_step", "group_id", "task", "severity", "reason", "no_signal",
          "no_signal_grpo", "n_alarms", "run_wide", *ALARM_COLUMNS)
SHOWN_ORDER = [*_FIRST, *[c for c in TRIAGE_COLUMNS if c not in _FIRST]]
_PERCENT = ("success_rate", "zero_adv_share", "merge_rate", "invalid_rate", "truncated_share",
            "sign_disagree_share", "aliased_share", "hub_share")
#: Session key: the (training step, group id) of each row shown, for the row-click callback.
_ROWS = "_g2po_groups_rows"
_PICK = "_g2po_groups_pick"


def _parse_range(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition(",")
    lo_v, hi_v = float(lo), float(hi)
    if not 0.0 <= lo_v <= hi_v <= 1.0:
        raise ValueError(text)
    return lo_v, hi_v


#: Session key: the table's sort and filters, kept while another page is shown (Streamlit
#: forgets the state of widgets a page did not draw), so coming back from a group finds the
#: table as it was left.
_VIEW = "_g2po_groups_view"
_WIDGETS = ("gr_scope", "gr_sort", "gr_desc", "gr_alarms", "gr_task", "gr_success", "gr_est",
            "gr_stoch")


def _seed() -> None:
    """The table's sort and filters: from the URL once per session, else as last left."""
    kept = st.session_state.get(_VIEW, {})
    for key in _WIDGETS:
        if key not in st.session_state and key in kept:
            st.session_state[key] = kept[key]
    seed_from_url("gr_scope", "gscope", str, SCOPES)
    seed_from_url("gr_sort", "gsort", str, SORTS)
    seed_from_url("gr_desc", "gorder", lambda s: {"desc": True, "asc": False}[s])
    seed_from_url("gr_alarms", "galarm",
                  lambda s: [a for a in s.split(",") if a in ALARM_FILTERS])
    seed_from_url("gr_task", "gtask", str)
    seed_from_url("gr_success", "gsuccess", _parse_range)
    seed_from_url("gr_est", "gest", str, ESTIMATORS)
    seed_from_url("gr_stoch", "gstoch", lambda s: {"1": True, "0": False}[s])
    for key, default in (("gr_scope", "step"), ("gr_sort", ""), ("gr_desc", True),
                         ("gr_alarms", []), ("gr_task", ""), ("gr_success", (0.0, 1.0)),
                         ("gr_est", "g2po"), ("gr_stoch", False)):
        st.session_state.setdefault(key, default)


def _row_clicked() -> None:
    event = st.session_state.get("gr_table")
    rows = st.session_state.get(_ROWS) or []
    picked = picked_row(event, len(rows))
    if picked is not None:
        st.session_state[_PICK] = rows[picked]


def render(ctx: AppContext) -> None:
    st.title("Groups")
    opened = ctx.active
    if opened is None or ctx.train_step is None:
        no_run_message()
        return
    pick = st.session_state.pop(_PICK, None)
    if pick is not None:
        goto_step(ctx, opened, int(pick[0]), str(pick[1]))
    _seed()
    rule = ctx.rule_of(opened)
    top = st.columns([2, 3, 1])
    scope = top[0].selectbox("Groups of", list(SCOPES), key="gr_scope", format_func=SCOPES.get)
    sort = top[1].selectbox("Sort by", list(SORTS), key="gr_sort", format_func=SORTS.get)
    descending = top[2].toggle("Largest first", key="gr_desc", disabled=sort == "",
                               help="Numbers and flags largest first; off: smallest first.")
    filters = st.columns([3, 2, 2])
    alarms = filters[0].multiselect("Only groups with", list(ALARM_FILTERS), key="gr_alarms",
                                    format_func=ALARM_FILTERS.get, placeholder="any alarm or none")
    task = filters[1].text_input("Task or group contains", key="gr_task")
    success = filters[2].slider("Success rate", 0.0, 1.0, step=0.05, key="gr_success")
    judged = st.columns([2, 3])
    estimator = judged[0].selectbox("Estimator you train with", list(ESTIMATORS), key="gr_est",
                                    format_func=ESTIMATORS.get,
                                    help="A group's severity and reason say what this "
                                         "estimator gets from it.")
    stochastic = judged[1].toggle("The environment is stochastic", key="gr_stoch",
                                  help="Then a (state, action) leading to different next "
                                       "states is chance, and no aliasing alarm is raised.")
    steps = [ctx.train_step] if scope == "step" else None
    section, table = computed_table(ctx, opened, steps, rule, stochastic=stochastic)
    if table is None:
        return
    table = assess(table, estimator)
    shown = filter_groups(table, alarms=alarms, task=task or None,
                          min_success=success[0], max_success=success[1], estimator=estimator)
    shown = sort_groups(shown, sort or None, None if sort == "" else bool(descending))
    with section.container():
        findings = run_findings(table, estimator)  # about the run: said once
        for finding in (f for f in findings if f.level == "defect"):
            st.warning(fmt("Run-wide: {}", finding.text))
        notes = [f for f in findings if f.level == "note"]
        if notes:  # progress and facts: one line folded, so the rows stay on the first screen
            with st.expander(fmt("About the run: {}", ", ".join(
                    f"{f.groups} group(s) {TITLES[f.kind].lower()}" for f in notes))):
                for finding in notes:
                    md("- {}", finding.text)
        if stochastic:
            st.info(fmt("Declared stochastic: {}.", STOCHASTIC_NOTE))
        where = f"training step {ctx.train_step}" if scope == "step" else \
            f"{table['train_step'].nunique()} training steps"
        md("{} group(s) of {} · {} shown · outcome rule: {} · click a row to open the group in "
           "the group explorer", f"{len(table):,}", where, f"{len(shown):,}", rule.describe())
        st.session_state[_ROWS] = list(zip(shown["train_step"].astype(int),
                                           shown["group_id"].astype(str), strict=True))
        columns = [c for c in SHOWN_ORDER if c != "task" or
                   not (shown["task"].astype(str) == shown["group_id"].astype(str)).all()]
        st.dataframe(shown[columns].rename(columns=HEADERS), hide_index=True, key="gr_table",
                     on_select=_row_clicked, selection_mode="single-row",
                     column_config={HEADERS[c]: st.column_config.NumberColumn(
                         HEADERS[c], format="percent") for c in _PERCENT})
    st.session_state[_VIEW] = {key: st.session_state.get(key) for key in _WIDGETS}
    write_url(gscope=None if scope == "step" else scope, gsort=sort or None,
              gorder=None if sort == "" or descending else "asc", galarm=list(alarms),
              gtask=task or None, gest=None if estimator == "g2po" else estimator,
              gstoch="1" if stochastic else None,
              gsuccess=None if tuple(success) == (0.0, 1.0) else
              f"{success[0]:g},{success[1]:g}")
