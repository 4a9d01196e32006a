"""Aliased states: state nodes where the same action led on to different next states. In a
deterministic environment that can only be a state key merging states the environment tells
apart; a wide spread of values at a node without such a split is the policy's randomness and
no alarm. With ``stochastic=True`` (the environment itself is random) the split says nothing
and the check does not fire. Ranked by the credit the merge moves
(:attr:`GroupSignals.credit_moved`), the biggest first. Severity: the share of G2PO's |A| on
the aliased nodes that are not hubs (at least 0.05).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.signals import GroupSignals
from g2po.analysis.words import REWARD_UNITS, pairs, split_evidence, split_phrase, top

__all__ = ["CHECK", "mass_share", "ranking"]

def mass_share(sig: GroupSignals, nodes: np.ndarray) -> np.ndarray:
    """(n_groups,) the share of each group's G2PO |A| on steps at ``nodes`` ((n_nodes,) bool)."""
    ix, adv = sig.ix, np.abs(sig.g2po["adv"])
    mass = np.bincount(ix.group, weights=adv, minlength=ix.n_groups)
    on = np.bincount(ix.group, weights=adv * nodes[ix.node], minlength=ix.n_groups)
    return np.where(mass > 0, on / np.maximum(mass, 1e-300), 0.0)


def _evidence(batch: Batch) -> np.ndarray:
    sig, text = batch.sig, batch.text
    out = np.full(sig.ix.n_groups, "", dtype=object)
    if sig.stochastic or not len(sig.splits):
        return out
    splits = sig.splits  # sorted by group, the group's most-taken pair first
    first = splits["_pair"].to_numpy() == \
        splits.groupby("group", sort=False)["_pair"].transform("first").to_numpy()
    shown = splits[first]
    group_of, row, count = (shown[c].to_numpy() for c in ("group", "row", "count"))
    starts = np.flatnonzero(np.r_[True, group_of[1:] != group_of[:-1]])
    quoted = text("state_key", np.r_[shown["next_row"].to_numpy(), row[starts]])
    nexts, keys = quoted[:len(shown)], quoted[len(shown):]
    actions = text("action", row[starts])
    for i, (a, b) in enumerate(zip(starts, [*starts[1:], len(shown)], strict=True)):
        out[group_of[a]] = split_phrase(keys[i], actions[i], nexts[a:b], count[a:b])
    return out


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    return {"count": sig.per_group(sig.aliased, "nodes").astype(np.int64),
            "aliased_evidence": _evidence(batch),
            "aliased_share": mass_share(sig, sig.aliased & ~sig.hub)}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "aliased"),
                 np.maximum(table["aliased_share"].to_numpy(float), 0.05))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return [f"key merges states: {table['aliased_evidence'].iat[i]}" for i in rows]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("the same (state key, action) leads on to different next states. Likely cause: "
            "a state key that leaves out something every state carries (the inventory, what "
            "was said).")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("another state key (the sidebar's State key, --state-key regex:…), or declare the "
            "environment stochastic if it is.")


def ranking(view: GroupView, mask: np.ndarray, order_by: list[str]) -> pd.DataFrame:
    """One row per node of ``mask`` (the view's node codes), ranked by ``order_by``
    (descending), with the graph's node ids (:attr:`Alarm.ranking`)."""
    sig, chosen = view.sig, np.flatnonzero(mask)
    value, var = sig.by_node("node_value"), sig.by_node("node_value_var")
    visits = np.bincount(sig.ix.node, minlength=sig.ix.n_nodes)
    table = pd.DataFrame({
        "node": view.graph_node[chosen], "visits": visits[chosen], "value": value[chosen],
        "value_spread": np.sqrt(var[chosen]), "credit_moved": sig.credit_moved[chosen],
        "mixed": sig.mixed[chosen], "in_sources": sig.in_sources[chosen],
        "invalid_arrival_share": sig.invalid_arrival_share[chosen], "hub": sig.hub[chosen]})
    return table.sort_values([*order_by, "node"], ascending=[False] * len(order_by) + [True],
                             kind="stable").reset_index(drop=True)


def _alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.aliased.any():
        return None
    table = ranking(view, sig.aliased, ["credit_moved"])
    nodes = tuple(int(x) for x in table["node"])
    evidence = split_evidence(sig.splits, steps["state_key"], steps["action"])
    shown = top(table, lambda r: f"node {r.node} ({r.visits} visits, moves "
                                 f"{r.credit_moved:.3g} {REWARD_UNITS}"
                                 f"{', a hub' if r.hub else ''})")
    why = ("In a deterministic environment the state key merges states the environment "
           "tells apart (declare it stochastic if it is not).")
    rows = steps[np.isin(steps["node"].to_numpy(), nodes)]
    return Alarm(
        "aliased", f"Aliased states: {len(nodes)} node(s)",
        f"The same action led on to different next states: {evidence}. {why} Ranked by the "
        "credit the merge moves: Σ |v − V| over the node's steps, each step's own discounted "
        f"outcome v against the node's value V, in {REWARD_UNITS}: {shown}.",
        len(nodes), pairs(rows), nodes, table)


CHECK = register_check(Check(
    kind="aliased", title="Aliased states", measure=_measure, severity=_severity,
    reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm,
    columns={"aliased_evidence": "aliasing evidence", "aliased_share": "|A| on aliased"},
    order=50))
