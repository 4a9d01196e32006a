"""Credit alarms of one group, for the group explorer: each registered check's words on one
group's graph (:attr:`g2po.analysis.checks.Check.alarm`), from the same signals and measures
the groups table counts (:func:`g2po.analysis.signals.group_signals`), so the table and the
explorer agree. What the checks are and how each decides is in :mod:`g2po.analysis.checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from g2po.analysis.checks import ESTIMATORS, Alarm, Batch, GroupView, list_checks
from g2po.analysis.checks.merging import NO_MERGE_RATE
from g2po.analysis.signals import (
    HUB_INVALID_P,
    HUB_INVALID_SHARE,
    HUB_INVALID_SOURCES,
    HUB_MEDIAN_FACTOR,
    HUB_MIN_SOURCES,
    VALUE_STD_SHARE,
    ZERO_ADV,
    GroupSignals,
    group_signals,
)
from g2po.analysis.state_graph import StateGraph
from g2po.analysis.words import (
    ADV_UNITS,
    REWARD_UNITS,
    SHOWN,
    short_text,
    split_evidence,
    split_phrase,
)
from g2po.outcomes import OutcomeRule
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.steps import OPTIONAL_COLUMNS, REQUIRED_COLUMNS

if TYPE_CHECKING:
    from g2po.analysis.recorded import StatedCredit

__all__ = ["Alarm", "GroupSignals", "group_signals", "alarm_counts", "credit_alarms",
           "ALARM_KINDS", "ALARM_TITLES", "SIGNAL_ESTIMATORS", "SHOWN", "STOCHASTIC_NOTE",
           "split_evidence", "split_phrase", "short_text", "ADV_UNITS", "REWARD_UNITS",
           "measure_all",
           # the thresholds, where they were read before the checks had modules of their own
           "ZERO_ADV", "VALUE_STD_SHARE", "NO_MERGE_RATE", "HUB_MIN_SOURCES", "HUB_MEDIAN_FACTOR",
           "HUB_INVALID_SOURCES", "HUB_INVALID_SHARE", "HUB_INVALID_P"]

#: Every registered check's kind, in the registry's order (the table's ``alarm_<kind>``).
ALARM_KINDS = tuple(c.kind for c in list_checks())
#: A short name of each kind, for column headers, filters and legends.
ALARM_TITLES = {c.kind: c.title for c in list_checks()}
#: Estimators whose "no training signal" is checked, with their display names.
SIGNAL_ESTIMATORS = ESTIMATORS
#: What the aliasing check cannot tell once the environment is declared stochastic.
STOCHASTIC_NOTE = ("the environment is declared stochastic: the same (state, action) may lead "
                   "to different next states by chance, so a state key that merges states "
                   "the environment tells apart can no longer be told from that, and the "
                   "aliasing alarm is not raised")


def _text(steps: pd.DataFrame):
    def text(column: str, rows: np.ndarray) -> list[str]:
        return [str(v) for v in steps[column].to_numpy(dtype=object)[np.asarray(rows)]]
    return text


def measure_all(steps: pd.DataFrame, sig: GroupSignals, *, rule: OutcomeRule,
                params: G2POParams, credit: StatedCredit | None = None
                ) -> dict[str, dict[str, np.ndarray]]:
    """Every registered check's measure of ``steps`` (row-aligned with ``sig``): kind →
    {``count``, its columns}, each (n_groups,); ``credit`` as :attr:`Batch.credit`."""
    batch = Batch(sig=sig, steps=steps, text=_text(steps), rule=rule, params=params,
                  credit=credit)
    return {c.kind: c.measure(batch) for c in list_checks()}


def alarm_counts(steps: pd.DataFrame, *, rule: OutcomeRule,
                 params: G2POParams = DEFAULT_PARAMS, stochastic: bool = False
                 ) -> pd.DataFrame:
    """(n_groups, n_checks) each check's count per group code of ``steps`` (0: it does not
    fire), columns the kinds in the registry's order."""
    sig = group_signals(steps, rule=rule, params=params, stochastic=stochastic,
                        text=_text(steps))
    measured = measure_all(steps, sig, rule=rule, params=params)
    return pd.DataFrame({kind: np.asarray(m["count"], dtype=np.int64)
                         for kind, m in measured.items()})


def credit_alarms(
    graph: StateGraph,
    *,
    rule: OutcomeRule,
    params: G2POParams = DEFAULT_PARAMS,
    stochastic: bool = False,
    credit: StatedCredit | None = None,
    row: Mapping[str, object] | None = None,
) -> list[Alarm]:
    """The alarms of one group's graph (built with the same ``params`` and ``rule``), in the
    registry's order: each check's :attr:`~g2po.analysis.checks.Check.alarm` where it has
    something to say. Checks that need the whole run to tell (a group against its peers) say
    it where ``row``, the group's row of the run's judged groups table
    (:func:`g2po.analysis.triage.triage_log`), is given, nothing otherwise. ``credit``: what
    the run states it trained with (:func:`g2po.analysis.recorded.stated_credit` of the log's
    manifest), which the recorded advantage is audited against (None: G2PO with ``params``).

    ``rule`` is the run's outcome rule (success, terminal, truncation). G2PO and GRPO
    advantages come from the estimators on the group's rows, so the numbers are exactly those
    the trainer would use (G2PO's are the graph's own when it was built under ``params``
    and ``rule``: the estimator does not run twice). ``stochastic`` declares the environment
    random (no aliasing alarm, :data:`STOCHASTIC_NOTE`).

    Examples
    --------
    >>> import pandas as pd
    >>> from g2po.analysis.state_graph import state_graph
    >>> from g2po.outcomes import OutcomeRule
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...     "t": [0, 1, 0, 1], "state_key": ["s0", "s1", "s0", "s1"],
    ...     "action": ["go", "go", "go", "look"],
    ...     "episode_reward": 0.0, "is_action_valid": [True, False, True, True]})
    >>> rule = OutcomeRule()
    >>> [a.kind for a in credit_alarms(state_graph(steps, rule=rule), rule=rule)]
    ['no_signal', 'penalty_amplification']
    """
    steps = graph.steps
    reads = {r for c in list_checks() for r in c.reads}
    raw = steps[[c for c in steps.columns
                 if c in REQUIRED_COLUMNS or c in OPTIONAL_COLUMNS or c in reads]]
    cut_rows = steps["truncated"].to_numpy(dtype=bool) if "truncated" in steps.columns else None
    sig = group_signals(raw, rule=rule, params=params, truncated_rows=cut_rows,
                        stochastic=stochastic, text=_text(raw),
                        estimated=graph.estimate_under(params, rule))
    credit = credit.beside(params.state_key) if credit is not None else None
    measured = measure_all(raw, sig, rule=rule, params=params, credit=credit)
    graph_node = np.zeros(sig.ix.n_nodes, dtype=np.int64)
    graph_node[sig.ix.node] = steps["node"].to_numpy(dtype=np.int64)
    alarms = []
    for check in list_checks():
        one = {k: (v[0] if len(v) else 0) for k, v in measured[check.kind].items()}
        alarm = check.alarm(GroupView(graph=graph, sig=sig, measured=one,
                                      graph_node=graph_node, rule=rule, params=params,
                                      credit=credit, row=row))
        if alarm is not None:
            alarms.append(alarm)
    return alarms
