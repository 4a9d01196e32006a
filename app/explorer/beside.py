"""Beside the group explorer's graph: its critical transitions (a table, a click selecting the
edge) and its credit alarms (each a button listing its steps; a ranked alarm's top nodes and
the critical transitions the truncation alarm explains, each a click that selects it). Both
come from the group's computed view."""

from __future__ import annotations

import streamlit as st

from app.explorer import clicks
from app.explorer.marks import ASSUMED_MARK, assumption_caption, marked
from app.explorer.state import Picks
from app.safe import fmt
from app.tables import critical_table, style_diverging
from g2po.analysis.alarms import SHOWN
from g2po.analysis.assumptions import Assumption
from g2po.analysis.group_view import ComputedGroup

__all__ = ["critical", "alarm_list"]

#: Column widths of the critical-transitions table: its numbers fit a narrow column, the
#: action (text, last) takes what is left.
_CRITICAL_WIDTHS = {"#": 26, "from": 42, "to": 36, "TD error": 60, "mean A": 56}


def critical(view: ComputedGroup, picks: Picks, limits: dict[str, float],
             assumed: list[Assumption]) -> None:
    st.markdown("**Critical transitions** (largest \\|TD error\\|)")
    if view.critical.empty:
        st.caption("No transition has a non-zero TD error.")
        picks.critical_rows = ()
        return
    table = critical_table(view.critical).drop(columns=["count"])
    picks.critical_rows = tuple(int(e) for e in table.index)
    shown = marked(table.columns, assumed)
    config = {c: st.column_config.Column(
        width=_CRITICAL_WIDTHS.get(c), label=f"{c} {ASSUMED_MARK}" if c in shown else None)
        for c in table.columns if c in _CRITICAL_WIDTHS or c in shown}
    st.dataframe(style_diverging(table, limits), hide_index=True, key=picks.critical_key,
                 on_select=clicks.critical_clicked, selection_mode="single-row",
                 height=min(38 + 35 * len(table), 215), column_config=config)
    assumption_caption(table.columns, assumed)


def alarm_list(view: ComputedGroup, assumed: list[Assumption]) -> None:
    st.markdown("**Credit alarms**")
    if not view.in_run:  # the checks that need the run's table have not judged the group
        st.caption("The checks that compare a group with the rest of the run (a partial "
                   "group, a group unusual for this run) speak here once the Groups page "
                   "has computed the run's table.")
    if not view.alarms:
        st.caption("None for this group.")
        return
    graph, crit = view.graph, view.critical
    rank_of = dict(zip(crit.index.astype(int), crit["rank"].astype(int), strict=True))
    for alarm in view.alarms:
        st.button(fmt("{}", alarm.title), key=f"g_alarm_{alarm.kind}",
                  help=fmt("{}", alarm.detail), on_click=clicks.set_filter,
                  args=(("alarm", alarm.kind),), width="stretch")
        if alarm.ranking is not None and not alarm.ranking.empty:
            for row in alarm.ranking.head(SHOWN).itertuples():
                label = fmt("node {}: from {} states, {:.0%} after invalid actions", row.node,
                            row.in_sources, row.invalid_arrival_share) if alarm.kind == "hub" \
                    else fmt("node {}: the merge moves {:.3g} reward units of value "
                             "(Σ |v − V|)", row.node, row.credit_moved)
                st.button(label, key=f"g_alrank_{alarm.kind}_{row.node}", type="tertiary",
                          on_click=clicks.select_node, args=(int(row.node),))
            if len(alarm.ranking) > SHOWN:
                st.caption(fmt("{} more (the button above lists every step)",
                               len(alarm.ranking) - SHOWN))
        for edge in alarm.edges:
            if edge in rank_of:
                st.button(fmt("explains critical transition #{} (TD error {:+.3g})",
                              rank_of[edge], graph.edges["td_error"].iloc[edge]),
                          key=f"g_alcrit_{alarm.kind}_{edge}", type="tertiary",
                          on_click=clicks.select_edge, args=(edge,))
    # the alarms read validity (penalty-only signal) and the advantages (collapsed groups)
    assumption_caption(("valid", "A"), assumed, what="the alarms rest on it")
