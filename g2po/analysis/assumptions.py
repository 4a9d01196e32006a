"""Which numbers rest on a value the log did not hold.

A loader fills a missing optional column with a default and says so
(:attr:`loaders.LoadReport.assumed`: ``is_action_valid`` absent, every action assumed valid).
The numbers computed from that column are then the default's, not the log's: the invalid-step
counts, and through the invalid-action penalty p (docs/estimators.md) G2PO's episode and
node-centric terms and the combined advantage. :func:`assumptions` says, per assumption,
which step-table columns it reaches, so that a page can mark each number it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Assumption", "assumptions", "reached"]

#: Per column a loader may fill with a default: the step-table columns computed from it
#: whatever the parameters, and those computed from it through the invalid-action penalty.
_DIRECT = {"is_action_valid": ("is_action_valid", "invalid")}
_THROUGH_PENALTY = {"is_action_valid": ("adv", "adv_ep", "adv_nc", "penalised_next_value")}


@dataclass(frozen=True)
class Assumption:
    """One defaulted column: the loader's note, and the step-table columns it reaches."""

    column: str
    note: str
    columns: frozenset[str]


def assumptions(assumed: Mapping[str, str], penalty: float = 0.1) -> list[Assumption]:
    """The assumptions of a log (``assumed``: column → the loader's note) with the columns
    each reaches under the invalid-action ``penalty`` (with p = 0 the advantages do not depend
    on validity). Columns the project knows nothing about reach only themselves.

    Examples
    --------
    >>> [sorted(a.columns) for a in assumptions({"is_action_valid": "absent"}, penalty=0.0)]
    [['invalid', 'is_action_valid']]
    """
    out = []
    for column, note in assumed.items():
        reached_ = set(_DIRECT.get(column, (column,)))
        if penalty != 0:
            reached_.update(_THROUGH_PENALTY.get(column, ()))
        out.append(Assumption(str(column), str(note), frozenset(reached_)))
    return out


def reached(found: Iterable[Assumption], columns: Iterable[str]) -> list[Assumption]:
    """The assumptions that reach any of ``columns`` (step-table column names)."""
    wanted = set(columns)
    return [a for a in found if a.columns & wanted]
