"""Numbers resting on a value the log lacked, marked where the group explorer shows them: a
column whose numbers rest on an assumption (:mod:`g2po.analysis.assumptions`) is labelled
``name *``, and a caption under its table says what the loader assumed."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from app.safe import fmt
from g2po.analysis.assumptions import Assumption

__all__ = ["ASSUMED_MARK", "marked", "assumption_marks", "assumption_caption"]

#: The step-table column behind each column name the page's tables use.
_SHOWN_AS = {"valid": "is_action_valid", "invalid": "invalid", "A": "adv", "A^EP": "adv_ep",
             "A^NC": "adv_nc", "A^EC": "adv_ec", "mean A": "adv", "mean A^EP": "adv_ep",
             "mean A^NC": "adv_nc", "mean A^EC": "adv_ec", "ΣA": "adv",
             "x = V(next) − p·invalid": "penalised_next_value"}
#: The mark beside a number that rests on an assumption (the caption under the table says it).
ASSUMED_MARK = "*"


def marked(columns: Iterable, assumed: list[Assumption]) -> list[str]:
    """The shown columns whose numbers rest on one of the assumptions."""
    reach = set().union(*(a.columns for a in assumed)) if assumed else set()
    return [str(c) for c in columns if _SHOWN_AS.get(str(c)) in reach]


def assumption_marks(columns: Iterable, assumed: list[Assumption], note: bool = True) -> dict:
    """Column configs renaming each column whose numbers rest on an assumption to
    ``name *``; with ``note``, the caption saying what was assumed, written here."""
    columns = list(columns)
    if note:
        assumption_caption(columns, assumed)
    return {c: st.column_config.Column(label=f"{c} {ASSUMED_MARK}")
            for c in marked(columns, assumed)}


def assumption_caption(columns: Iterable, assumed: list[Assumption],
                       what: str = "the columns marked * rest on it") -> None:
    """One caption per assumption that reaches the shown columns: what the loader assumed
    (``what``: trusted text saying which numbers rest on it)."""
    shown = {_SHOWN_AS.get(str(c)) for c in columns}
    for a in assumed:
        if a.columns & shown:
            st.caption(fmt("{} assumed: {} ({})", ASSUMED_MARK, a.note, what))
