"""The check registry: what a check is, and the one place every view finds them.

A :class:`Check` declares everything the product asks of it: what it measures on every group
at once (:attr:`Check.measure`), how severe a finding is as a function of that evidence
(:attr:`Check.severity`), its words for a group (:attr:`Check.reason`), for the run
(:attr:`Check.run_text`) and for the group explorer (:attr:`Check.alarm`), and its fix
(:attr:`Check.fix`). :func:`register_check` adds one; :func:`list_checks` gives them in rank
order. The package's ``__init__`` imports every check module, so registering is importing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from g2po.analysis.recorded import StatedCredit
    from g2po.analysis.signals import GroupSignals
    from g2po.analysis.state_graph import StateGraph
    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams

__all__ = ["Alarm", "Batch", "GroupView", "Check", "register_check", "get_check",
           "list_checks", "check_kinds", "ESTIMATORS"]

#: The estimators a group can be judged for (the one the user trains with), display names.
ESTIMATORS = {"g2po": "G2PO", "grpo": "GRPO"}


@dataclass(frozen=True)
class Alarm:
    """One check's finding on one group, for the group explorer.

    kind : the check's kind.
    title : a short name with the count.
    detail : what was found, why it matters and what to do, in a few sentences.
    count : how many nodes, steps or trajectories it is about (the unit is in ``title``).
    steps : (traj_id, t) of the steps concerned.
    nodes : node ids concerned, in rank order for ranked alarms (may be empty).
    ranking : for ranked alarms (``aliased``, ``hub``), one row per node of ``nodes``, in the
        same order: node, visits, value, value_spread, credit_moved, mixed, in_sources,
        invalid_arrival_share, hub.
    edges : for ``truncation``, the rows of ``StateGraph.edges`` that the cut trajectories'
        last steps took, largest |TD error| first.
    """

    kind: str
    title: str
    detail: str
    count: int
    steps: pd.DataFrame
    nodes: tuple[int, ...] = ()
    ranking: pd.DataFrame | None = None
    edges: tuple[int, ...] = ()


@dataclass(frozen=True)
class Batch:
    """What a check measures on: a batch of groups (one training step or several).

    sig : the shared signals (:func:`g2po.analysis.signals.group_signals`), row-aligned with
        ``steps``.
    steps : the batch's step rows (state keys and actions may be short codes: quote them
        through ``text``); optional columns a check declares in :attr:`Check.reads` are there
        when the log has them.
    text : (column, row positions) → the rows' text as the log gave it (``state_key``,
        ``action``): only the few rows a finding quotes are read.
    rule, params : the run's outcome rule and G2PO parameters (``params.state_key``: the
        strategy left to apply to ``steps``' keys).
    credit : what the run states it trained with (its manifest: estimator, its keyword
        arguments, state key; :func:`g2po.analysis.recorded.stated_credit`), its state key
        None where it is the triage's own; None where the run states nothing.
    """

    sig: GroupSignals
    steps: pd.DataFrame
    text: Callable[[str, np.ndarray], list[str]]
    rule: OutcomeRule
    params: G2POParams
    credit: StatedCredit | None = None


@dataclass(frozen=True)
class GroupView:
    """One group, for a check's words in the group explorer.

    graph : the group's state graph; sig : its signals (one group); measured : the check's
        own measure on it (column → value, ``count`` included); graph_node : (n_nodes,) the
        graph's node id of each signal node code; rule, params : as the graph was built;
        credit : as :attr:`Batch.credit`; row : the group's row of the run's judged groups
        table where the caller has it (what a check that needs the whole run says), else None.
    """

    graph: StateGraph
    sig: GroupSignals
    measured: Mapping[str, object]
    graph_node: np.ndarray
    rule: OutcomeRule
    params: G2POParams
    credit: StatedCredit | None = None
    row: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Check:
    """One check: everything the groups table, ``g2po triage``, the run's findings and the
    group explorer ask of it.

    kind : a short identifier (``alarm_<kind>`` is its count column, ``--alarm KIND`` its
        filter).
    title : a short name for headers, filters and legends.
    measure : ``measure(batch) -> {"count": (n_groups,), column: (n_groups,), …}``, vectorised
        over every group of the batch; ``count`` (how many nodes, steps or rollouts it is
        about; 0: it does not fire) and each of :attr:`columns` that :attr:`whole` does not
        fill.
    severity : ``severity(table, estimator) -> (n_rows,) float in [0, 1]``, from the groups
        table's columns (the check's evidence; the whole run's table, so a check may compare a
        group with the run): how much of the group's credit rests on the defect. Always 0 for
        a check that is not a :attr:`defect`.
    reason : ``reason(table, rows, estimator) -> [str, …]``, one phrase per row position of
        ``rows`` (rows where it fires), with the evidence.
    run_text : ``run_text(table, fires, estimator) -> str``: what it is on this run, its likely
        cause, in a sentence or two (``fires``: (n_rows,) bool).
    fix : ``fix(table, fires, estimator) -> str``: what to do, or why nothing needs doing.
    alarm : ``alarm(view) -> Alarm | None``: the group explorer's words on one group (None: it
        does not fire there, or it needs the whole run to tell and ``view.row`` is None).
    columns : evidence columns ``measure`` (or ``whole``) adds to the groups table → their
        header.
    reads : optional step-table columns the check reads when the log has them.
    defect : False for a finding that is progress or information (converged groups): said
        for the run, never ranked.
    fires : ``fires(table, estimator) -> (n_rows,) bool``; default: ``alarm_<kind> > 0``.
    whole : ``whole(table) -> {"count": (n_rows,), column: (n_rows,), …}``, for a check that
        needs the whole run's groups table to tell (a group's size against the run's usual
        size, a group against its peers): the judge fills ``alarm_<kind>`` and the columns it
        returns from the table it judges (:func:`g2po.analysis.findings.recount`);
        ``measure``'s count is then a placeholder (0), the columns ``whole`` fills are left
        out of ``measure``'s answer (the batch's table holds NaN there).
    order : rank among checks of equal severity (lower first).
    version : bump when the measure changes (cached tables are computed again).
    """

    kind: str
    title: str
    measure: Callable[[Batch], dict[str, np.ndarray]]
    severity: Callable[[pd.DataFrame, str], np.ndarray]
    reason: Callable[[pd.DataFrame, np.ndarray, str], list[str]]
    run_text: Callable[[pd.DataFrame, np.ndarray, str], str]
    fix: Callable[[pd.DataFrame, np.ndarray, str], str]
    alarm: Callable[[GroupView], Alarm | None]
    columns: Mapping[str, str] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    defect: bool = True
    fires: Callable[[pd.DataFrame, str], np.ndarray] | None = None
    whole: Callable[[pd.DataFrame], dict[str, np.ndarray]] | None = None
    order: int = 100
    version: int = 1

    @property
    def column(self) -> str:
        """The count column of the groups table."""
        return f"alarm_{self.kind}"

    def fired(self, table: pd.DataFrame, estimator: str = "g2po") -> np.ndarray:
        """(n_rows,) bool: the rows of ``table`` where the check fires."""
        if self.fires is not None:
            return np.asarray(self.fires(table, estimator), dtype=bool)
        return table[self.column].to_numpy() > 0


_REGISTRY: dict[str, Check] = {}


def register_check(check: Check, *, overwrite: bool = False) -> Check:
    """Add ``check`` to the registry (under its ``kind``) and return it.

    Raises ``ValueError`` when the kind is taken (unless ``overwrite``) or is not a plain
    identifier (it becomes a column name and a URL value)."""
    if not check.kind.isidentifier():
        raise ValueError(f"a check's kind must be an identifier, got {check.kind!r}")
    if check.kind in _REGISTRY and not overwrite and _REGISTRY[check.kind] is not check:
        raise ValueError(f"a check named {check.kind!r} is already registered; pass "
                         "overwrite=True to replace it")
    _REGISTRY[check.kind] = check
    return check


def get_check(kind: str) -> Check:
    """The registered check ``kind``; ``KeyError`` naming the known ones otherwise."""
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise KeyError(f"unknown check {kind!r}; registered: {', '.join(check_kinds())}"
                       ) from None


def list_checks() -> list[Check]:
    """Every registered check, in rank order (:attr:`Check.order`, then kind)."""
    return sorted(_REGISTRY.values(), key=lambda c: (c.order, c.kind))


def check_kinds() -> tuple[str, ...]:
    """The kinds of :func:`list_checks`, in order."""
    return tuple(c.kind for c in list_checks())
