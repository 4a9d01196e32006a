"""Groups: every group of a training step, or of every training step, as one table, worst
first (no training signal, then most kinds of credit alarm), sortable and filterable by alarm,
task and success rate; click a row to open that group in the group explorer. Sort and filters
live in the URL (``gscope``, ``gsort``, ``gorder``, ``galarm``, ``gtask``, ``gsuccess``).

The first screen shows rows at 1280 × 800: one row of controls (the filters and judging folded
in a popover), one folded line about the run (its widespread defects, the step limit its
failures suggest, its progress), a caption, then the columns that decide first
(:func:`app.triage_table.shown_frame`: groups and tasks named as ``g2po triage`` names them).

The numbers are :func:`g2po.analysis.triage.triage_log`'s, the same as ``g2po triage``; a whole
run is computed once with a progress bar and then read from its on-disk cache
(:mod:`app.triage_table`, which the Run overview's alarm shares read too).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

import streamlit as st

from app import data
from app.context import AppContext, OpenLog
from app.navigation import goto_step
from app.rules import reward_scale_offer, run_reward_scale, truncation_offer
from app.safe import Markdown, fmt
from app.triage_table import HEADERS, computed_table, shown_frame
from app.ui import md, no_run_message, picked_row
from app.url_state import seed_from_url, write_url
from g2po.analysis.alarms import ALARM_KINDS, ALARM_TITLES, STOCHASTIC_NOTE
from g2po.analysis.triage import (
    ALARM_FILTERS as NO_SIGNAL_FILTERS,
)
from g2po.analysis.triage import (
    ESTIMATORS,
    TRIAGE_COLUMNS,
    assess,
    filter_groups,
    run_findings,
    sort_groups,
    truncation_hint,
)
from g2po.analysis.triage_show import group_names, one_step
from g2po.errors import G2POError
from g2po.outcomes import TruncationHint

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
#: Rows the table shows before it scrolls, and the data grid's row height (pixels).
ROWS_SHOWN, ROW_PX = 20, 35
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
    view = _controls()
    steps = [ctx.train_step] if view.scope == "step" else None
    section, table = computed_table(ctx, opened, steps, rule, stochastic=view.stochastic)
    if table is None:
        return
    table = assess(table, view.estimator)
    shown = filter_groups(table, alarms=view.alarms, task=view.task or None,
                          min_success=view.success[0], max_success=view.success[1],
                          estimator=view.estimator)
    shown = sort_groups(shown, view.sort or None,
                        None if view.sort == "" else bool(view.descending))
    with section.container():
        # every trajectory a failure by a rule on the wrong reward scale: said above all
        reward_scale_offer(opened, run_reward_scale(opened, rule, steps), rule, "groups")
        _about_the_run(opened, run_findings(table, view.estimator),
                       _step_limit(opened, view, table, rule), view.stochastic)
        names = group_names(table)  # the whole table's: a group reads the same in every view
        st.caption(fmt("{}", _said(ctx, opened, view, table, shown, names.prefix, rule)))
        st.session_state[_ROWS] = list(zip(shown["train_step"].astype(int),
                                           shown["group_id"].astype(str), strict=True))
        frame, config = shown_frame(shown, names)
        st.dataframe(frame, hide_index=True, key="gr_table", on_select=_row_clicked,
                     selection_mode="single-row", column_config=config,
                     height=ROW_PX * (min(len(frame), ROWS_SHOWN) + 1) + 3)
    st.session_state[_VIEW] = {key: st.session_state.get(key) for key in _WIDGETS}
    write_url(gscope=None if view.scope == "step" else view.scope, gsort=view.sort or None,
              gorder=None if view.sort == "" or view.descending else "asc",
              galarm=list(view.alarms), gtask=view.task or None,
              gest=None if view.estimator == "g2po" else view.estimator,
              gstoch="1" if view.stochastic else None,
              gsuccess=None if tuple(view.success) == (0.0, 1.0) else
              f"{view.success[0]:g},{view.success[1]:g}")


def _step_limit(opened: OpenLog, view: _View, table, rule) -> TruncationHint | None:
    """The step limit the run's failures suggest (the Run overview's and ``g2po validate``'s
    hint, the same numbers): from the table when it holds every training step, else the
    run's own (cached, as the Run overview reads it); None where the run cannot be read."""
    if view.scope == "all":
        return truncation_hint(table, rule)
    try:
        return data.run_truncation(opened.log, opened.key, data.log_version(opened.log), rule)
    except data.LOADER_ERRORS + (G2POError,):
        return None  # the step's own table stands; the Run overview names what failed


def _said(ctx: AppContext, opened: OpenLog, view: _View, table, shown, prefix: str,
          rule) -> Markdown:
    """The caption above the rows: the groups and their training step(s), how many are shown
    and the filters, the start every id shares, the outcome rule, what a click does."""
    where = fmt("the log (it has no training steps)") if not opened.log.has_train_steps \
        else fmt("training step {}", ctx.train_step) if view.scope == "step" else \
        fmt("{} training steps", table["train_step"].nunique())
    said = [fmt("{} group(s) of {}", f"{len(table):,}", where),
            fmt("{} shown{}", f"{len(shown):,}", _filters_said(view))]
    if view.scope == "all" and (step := one_step(shown)) is not None:
        said.append(fmt("all of training step {}", step))
    if prefix:
        said.append(fmt("group ids after '{}'", prefix))
    said += [fmt("outcome rule: {}", rule.describe()),
             fmt("click a row to open the group in the group explorer")]
    return _joined(said)


@dataclass(frozen=True)
class _View:
    """The table's scope, sort, filters and judging, as the widgets hold them."""

    scope: str
    sort: str
    descending: bool
    alarms: list[str]
    task: str
    success: tuple[float, float]
    estimator: str
    stochastic: bool

    def filters(self) -> list[Markdown]:
        """The filters and judging that differ from the defaults, in words."""
        out = [fmt("{}", ALARM_FILTERS[a]) for a in self.alarms]
        if self.task:
            out.append(fmt("task or group contains '{}'", self.task))
        if tuple(self.success) != (0.0, 1.0):
            out.append(fmt("success {:.0%}–{:.0%}", *self.success))
        if self.estimator != "g2po":
            out.append(fmt("judged for {}", ESTIMATORS[self.estimator]))
        if self.stochastic:
            out.append(fmt("stochastic"))
        return out


def _controls() -> _View:
    """One row: scope, sort, its direction, and the filters and judging folded in a popover
    (its label says how many are set), so that the table's rows start on the first screen."""
    top = st.columns([3, 4, 2, 2], vertical_alignment="bottom")
    scope = top[0].selectbox("Groups of", list(SCOPES), key="gr_scope", format_func=SCOPES.get)
    sort = top[1].selectbox("Sort by", list(SORTS), key="gr_sort", format_func=SORTS.get)
    descending = top[2].toggle("Largest first", key="gr_desc", disabled=sort == "",
                               help="Numbers and flags largest first; off: smallest first.")
    state = st.session_state
    n_set = len(_View(scope, sort, descending, state["gr_alarms"], state["gr_task"],
                      state["gr_success"], state["gr_est"], state["gr_stoch"]).filters())
    label = fmt("Filters ({})", n_set) if n_set else fmt("Filters")
    with top[3].popover(label, key="gr_filters", icon=":material/filter_list:",
                        use_container_width=True):
        alarms = st.multiselect("Only groups with", list(ALARM_FILTERS), key="gr_alarms",
                                format_func=ALARM_FILTERS.get, placeholder="any alarm or none")
        task = st.text_input("Task or group contains", key="gr_task")
        success = st.slider("Success rate", 0.0, 1.0, step=0.05, key="gr_success")
        estimator = st.selectbox("Estimator you train with", list(ESTIMATORS), key="gr_est",
                                 format_func=ESTIMATORS.get,
                                 help="A group's severity and reason say what this "
                                      "estimator gets from it.")
        stochastic = st.toggle("The environment is stochastic", key="gr_stoch",
                               help="Then a (state, action) leading to different next "
                                    "states is chance, and no aliasing alarm is raised.")
    return _View(scope, sort, descending, alarms, task, tuple(success), estimator, stochastic)


def _filters_said(view: _View) -> Markdown:
    filters = view.filters()
    return fmt(" ({})", _joined(filters, "; ")) if filters else fmt("")


def _joined(parts: list[Markdown], sep: str = " · ") -> Markdown:
    """Markdown ``parts`` (each made by :func:`fmt`) joined by ``sep`` (" · " or "; ")."""
    joint = {" · ": lambda a, b: fmt("{} · {}", a, b), "; ": lambda a, b: fmt("{}; {}", a, b)}
    return reduce(joint[sep], parts) if parts else fmt("")


def _about_the_run(opened: OpenLog, findings: list, hint: TruncationHint | None,
                   stochastic: bool) -> None:
    """What is said once for the run, folded into one line above the rows: its widespread
    defects (a warning each, with cause and fix), a step limit the log does not state (the
    Run overview's offer, :func:`truncation_offer`), its progress and facts, a declared
    stochastic environment. The line names each, so the fold hides only the words."""
    defects = [f for f in findings if f.level == "defect"]
    notes = [f for f in findings if f.level == "note"]
    parts = []
    if defects:
        parts.append(fmt("Run-wide: {}", ", ".join(
            f"{TITLES[f.kind].lower()} on {f.groups} of {f.total} groups" for f in defects)))
    if hint is not None:
        parts.append(fmt("Failures cut at a step limit of {}?", hint.length))
    if notes:
        parts.append(fmt("About the run: {}", ", ".join(
            f"{f.groups} group(s) {TITLES[f.kind].lower()}" for f in notes)))
    if stochastic:
        parts.append(fmt("Declared stochastic"))
    if not parts:
        return
    with st.expander(fmt("{}", _joined(parts)), key="gr_about",
                     icon=":material/warning:" if defects or hint else ":material/info:"):
        for finding in defects:
            st.warning(fmt("Run-wide: {}", finding.text))
        truncation_offer(opened, hint, "groups")
        for finding in notes:
            md("- {}", finding.text)
        if stochastic:
            st.info(fmt("Declared stochastic: {}.", STOCHASTIC_NOTE))
