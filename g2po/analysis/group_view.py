"""One group's computed view: everything the group explorer and ``g2po advantages --explain``
show of a group, computed once from its rows.

:func:`compute_group` builds the state graph (G2PO runs once: node values, TD errors, the
three advantages), checks the outcomes against the run's rule (the success rate and what the
log says otherwise), ranks the critical transitions (:mod:`g2po.analysis.critical`), asks every
registered check for its alarm (:func:`g2po.analysis.alarms.credit_alarms`, which reads the
graph's G2PO run rather than running it again) and, where the log recorded the advantage a
trainer trained with, audits it step by step (:func:`g2po.analysis.recorded.audit_recorded`).
:func:`explain_group` says the view in words. Pages and commands take the numbers from here, so
the explorer and the command line agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.alarms import Alarm, credit_alarms
from g2po.analysis.checks.recorded import audits
from g2po.analysis.critical import CRITICAL_COUNT, critical_transitions
from g2po.analysis.diagnostics import merge_stats
from g2po.analysis.recorded import (
    NoRecordedAdvantageError,
    StatedCredit,
    audit_recorded,
    step_words,
)
from g2po.analysis.state_graph import StateGraph, state_graph
from g2po.analysis.words import REWARD_UNITS, adv_unit, short_text
from g2po.outcomes import OutcomeCheck, OutcomeRule
from g2po.params import G2POParams

__all__ = ["ComputedGroup", "RecordedCredit", "compute_group", "group_from_graph",
           "audit_graph", "graph_structure", "explain_group", "RECORDED_STEP_COLUMNS"]

#: Per step of :attr:`RecordedCredit.steps` (the graph's steps' index): the advantage the
#: trainer recorded, the audit's recomputation, their difference, the audit's cause of a
#: difference (:data:`g2po.analysis.recorded.CAUSES`; '' where they match, ``none`` where the
#: step has no record) and that cause in words.
RECORDED_STEP_COLUMNS = ["recorded", "recomputed", "diff", "cause", "words"]


@dataclass(frozen=True)
class RecordedCredit:
    """The advantage a trainer recorded for a group's steps, audited.

    estimator : what the recorded values were recomputed with (the run's estimator).
    steps : :data:`RECORDED_STEP_COLUMNS`, indexed like the graph's steps.
    group : the audit's row of the group (:data:`g2po.analysis.recorded.GROUP_COLUMNS`).
    summary : the group's finding in one line.
    fitted : whether the audit searched the registered estimators and parameters for the one
        that explains the recorded values (a few hundred estimator runs where they differ).
    """

    estimator: str
    steps: pd.DataFrame
    group: dict
    summary: str
    fitted: bool


@dataclass(frozen=True)
class ComputedGroup:
    """One group's computed view.

    graph : the state graph (nodes with values V, edges with TD errors and mean advantages,
        steps with every G2PO column), built under ``params`` and ``rule``.
    outcome : the outcomes checked against ``rule`` (success count and rate, truncations, what
        disagrees and the fixes).
    stats : :func:`g2po.analysis.diagnostics.merge_stats` (steps, state nodes, merge rate …).
    critical : the critical transitions, :func:`g2po.analysis.critical.critical_transitions`.
    alarms : each registered check's alarm on the group.
    recorded : the recorded advantage audited (None: the log recorded none).
    structure : :func:`graph_structure` of the graph.
    credit : what the run states it trained with, the recorded advantage's reference (None:
        it states none).
    in_run : whether the checks that judge a group against the run (a partial group, a group
        unusual for this run) had the group's row of the run's table to judge by.
    """

    graph: StateGraph
    rule: OutcomeRule
    params: G2POParams
    outcome: OutcomeCheck
    stats: dict
    critical: pd.DataFrame
    alarms: list[Alarm]
    recorded: RecordedCredit | None
    structure: str
    credit: StatedCredit | None = None
    in_run: bool = False

    @property
    def success_rate(self) -> float:
        """The share of rollouts that succeed by the run's rule (0 without rollouts)."""
        o = self.outcome
        return o.n_success / o.n_traj if o.n_traj else 0.0


def compute_group(steps: pd.DataFrame, *, rule: OutcomeRule, params: G2POParams,
                  estimator: str = "g2po", critical: int = CRITICAL_COUNT,
                  stochastic: bool = False, fit: bool = True,
                  credit: StatedCredit | None = None,
                  row: Mapping[str, object] | None = None) -> ComputedGroup:
    """The computed view of the one group in ``steps`` under the G2PO ``params`` and the run's
    outcome ``rule``; ``credit``: what the run states it trained with
    (:func:`g2po.analysis.recorded.stated_credit` of its manifest: estimator, its exact
    arguments, state key), which a recorded advantage is audited against as the groups table
    audits it; without it, ``estimator`` with ``params`` (with ``fit``, searching the
    estimator that explains recorded values that differ: :func:`audit_graph`); ``row``: the
    group's row of the run's judged groups table, for the checks that compare a group with
    the run (:func:`g2po.analysis.alarms.credit_alarms`); ``critical``: how many transitions
    to rank; ``stochastic``: the environment is random (no aliasing alarm).

    Examples
    --------
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...     "t": [0, 1, 0, 1], "state_key": ["s0", "s1", "s0", "s2"],
    ...     "action": ["go", "take", "look", "drop"],
    ...     "episode_reward": [10.0, 10.0, 0.0, 0.0], "is_action_valid": True})
    >>> view = compute_group(steps, rule=OutcomeRule(), params=G2POParams())
    >>> view.success_rate, view.critical["rank"].tolist(), view.recorded is None
    (0.5, [1, 2, 3], True)
    """
    graph = state_graph(steps, rule=rule, params=params)
    return group_from_graph(graph, rule=rule, params=params, estimator=estimator,
                            critical=critical, stochastic=stochastic, fit=fit, credit=credit,
                            row=row)


def group_from_graph(graph: StateGraph, *, rule: OutcomeRule, params: G2POParams,
                     estimator: str = "g2po", critical: int = CRITICAL_COUNT,
                     stochastic: bool = False, fit: bool = True,
                     credit: StatedCredit | None = None,
                     row: Mapping[str, object] | None = None) -> ComputedGroup:
    """:func:`compute_group` of a graph already built under ``params`` and ``rule`` (a page's
    cached graph): the rest of the view, G2PO not run again."""
    recorded = audit_graph(graph, rule=rule, params=params, estimator=estimator, fit=fit,
                           credit=credit)
    return ComputedGroup(
        graph=graph, rule=rule, params=params, outcome=rule.check(graph.steps),
        stats=merge_stats(graph), critical=critical_transitions(graph, critical),
        alarms=credit_alarms(graph, rule=rule, params=params, stochastic=stochastic,
                             credit=credit, row=row),
        recorded=recorded, structure=graph_structure(graph), credit=credit,
        in_run=row is not None)


def graph_structure(graph: StateGraph) -> str:
    """A digest of what node and edge ids mean (each node's kind and key, each edge's ends
    and action): equal for two graphs of one group under other γ, w or penalty, so a view's
    node and edge picks stay valid across such a change."""
    digest = hashlib.sha256()
    nodes, edges = graph.nodes, graph.edges
    for part in (nodes.index.astype(str), nodes["kind"].astype(str),
                 nodes["state_key"].astype(str), edges["source"].astype(str),
                 edges["target"].astype(str), edges["action"].astype(str)):
        digest.update("\x1f".join(part.tolist()).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def audit_graph(graph: StateGraph, *, rule: OutcomeRule, params: G2POParams,
                estimator: str = "g2po", fit: bool = True,
                credit: StatedCredit | None = None) -> RecordedCredit | None:
    """The advantage the log's trainer recorded for the graph's steps, audited against the
    run's stated ``credit`` as the groups table's check audits it
    (:func:`g2po.analysis.checks.recorded.audits`), else against ``estimator``'s
    recomputation under ``params`` and ``rule``
    (:func:`g2po.analysis.recorded.audit_recorded`); None where the log recorded none. With
    ``fit``, where the recorded values differ, the registered estimators and parameters are
    searched for the one that explains them (about half a second on one group; the per-step
    causes are the same either way)."""
    steps = graph.steps
    if "advantage" not in steps.columns:
        return None
    try:  # the graph's estimator already refused a column that is no number
        if credit is None:
            audit = audit_recorded(steps, rule=rule, params=params, estimator=estimator,
                                   fit=fit)
        else:
            keys = steps["state_key"].to_numpy(dtype=object)  # the log's own keys
            audit = audits(steps, rule=rule, params=params, credit=credit, fit=fit,
                           text=lambda column, rows: keys[rows])["g2po"]
            estimator = credit.estimator
    except NoRecordedAdvantageError:  # a column of nulls
        return None
    table = audit.steps
    cause = table["cause"].astype(str).to_numpy(dtype=object)
    cause[np.isnan(table["recorded"].to_numpy(dtype=np.float64))] = "none"
    words = [step_words(row) for row in table[["cause", "recorded", "recomputed"]]
             .to_dict("records")]
    shown = pd.DataFrame({"recorded": table["recorded"], "recomputed": table["recomputed"],
                          "diff": table["diff"], "cause": cause, "words": words},
                         index=steps.index)
    group = audit.groups.iloc[0].to_dict()
    return RecordedCredit(estimator, shown[RECORDED_STEP_COLUMNS], group,
                          _recorded_summary(group, estimator, fit), fit)


def _recorded_summary(group: dict, estimator: str, fitted: bool) -> str:
    """The audit's finding on one group, in one line."""
    kind, recorded, steps = group["kind"], int(group["recorded"]), int(group["steps"])
    of = f"{recorded} of {steps}" if recorded < steps else f"all {steps}"
    if not kind:
        return f"the recorded advantage equals {estimator}'s recomputation on {of} recorded " \
               "steps"
    fix = group["fix"] if fitted or kind != "differs" else \
        "not yet searched for the estimator or parameters that explain it"
    return f"{group['reason']}. Fix: {fix}"


# -- in words ----------------------------------------------------------------------------------

def _node_words(graph: StateGraph, node: int, limit: int) -> str:
    row = graph.nodes.loc[node]
    if row["kind"] != "state":
        return str(row["kind"])
    return f"state {int(node)} ({short_text(row['label'], limit)})"


def _transition_words(graph: StateGraph, row: pd.Series, limit: int, mode: str) -> str:
    """One critical transition: where it goes, how often, what its TD error says."""
    value = float(graph.nodes.loc[int(row["source"]), "value"])
    td = float(row["td_error"])
    side = "credit: a step towards success" if td > 0 else "blame: a step away from success"
    invalid = f", {int(row['invalid'])} invalid" if int(row["invalid"]) else ""
    mean_a = f"; mean A {float(row['adv']):+.3g} {adv_unit(mode)}" if "adv" in row.index \
        else ""
    return (f"#{int(row['rank'])} {_node_words(graph, int(row['source']), limit)} → "
            f"{_node_words(graph, int(row['target']), limit)} by "
            f"'{short_text(row['action'], limit)}' ({int(row['count'])} step(s){invalid}): "
            f"TD error {td:+.3g} {REWARD_UNITS} (V {value:.3g} → V′ {value + td:.3g}: "
            f"{side}){mean_a}")


def explain_group(view: ComputedGroup, limit: int = 40) -> list[str]:
    """The view in words, one line each: the headline (rollouts, success by the rule, steps,
    states, merge rate), what disagrees with the rule, the critical transitions (where G2PO's
    edge term lands hardest) and what their TD errors say, each credit alarm with its
    evidence, and, where the log recorded one, the trainer's advantage against the
    recomputation. Log text (labels, actions) is cut to ``limit`` characters, on one line;
    escape it wherever it becomes markup.

    Examples
    --------
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "b"], "t": 0,
    ...     "state_key": "start", "action": ["go", "look"], "episode_reward": [10.0, 0.0],
    ...     "is_action_valid": True})
    >>> lines = explain_group(compute_group(steps, rule=OutcomeRule(), params=G2POParams()))
    >>> lines[0].split(" · ")[:2]
    ['2 rollouts', 'success 50% (reward = success reward 10)']
    >>> for part in lines[3].split(": ")[:3]:
    ...     print(part)
      #2 state 0 (start) → failure by 'look' (1 step(s))
    TD error -4.75 reward units (V 4.75 → V′ 0
    blame
    >>> lines[-1]
    'credit alarms: none'
    """
    o, s, graph = view.outcome, view.stats, view.graph
    truncated = f" ({o.n_truncated} truncated)" if o.n_truncated else ""
    lines = [f"{o.n_traj} rollouts{truncated} · success {view.success_rate:.0%} "
             f"({view.rule.describe()}) · {s['steps']} steps · {s['state_nodes']} state nodes "
             f"· merge rate {s['merge_rate']:.0%}"]
    lines += [f"outcome: {p}" for p in o.problems]
    lines += [f"  fix: {f.label}" for f in o.fixes]
    crit = view.critical
    lines.append("critical transitions (largest |TD error|: where G2PO's edge term lands "
                 "hardest):" if len(crit) else "critical transitions: none (no transition "
                 "has a non-zero TD error)")
    lines += ["  " + _transition_words(graph, row, limit, view.params.mode)
              for _, row in crit.iterrows()]
    lines.append("credit alarms:" if view.alarms else "credit alarms: none")
    lines += [f"  - {a.title}: {a.detail}" for a in view.alarms]
    if view.recorded is not None:
        lines.append(f"recorded advantage (the trainer's) against {view.recorded.estimator}'s "
                     f"recomputation: {view.recorded.summary}")
    return lines
