"""Aliased states: state nodes where the same action led on to different next states.

In a deterministic environment that can only be a key merging states the environment tells
apart. What separates them decides the advice (issue 37):

- the state-key strategy merged keys that differ (a regex, ``normalized``, ``similarity``):
  a finer strategy fixes it;
- the steps that split arrived from different places (the previous state and action tell the
  next states apart): the key leaves out where the agent came from; a key that keeps it (the
  log's observation rather than a summary, or the previous observation) fixes it;
- the split stays among steps that arrived the same way (``GroupSignals.hidden``): the
  difference is older than the previous step — the world changed where this observation does
  not show it (a door opened in another room): partial observability, which no strategy over
  this key can separate; or the environment is random (declare it stochastic).

A wide spread of values at a node without such a split is the policy's randomness and no
alarm. Severity: the share of G2PO's |A| on the aliased nodes (not hubs, at least 0.05), a
third of it where the evidence is hidden state (nothing a key can fix).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.signals import GroupSignals
from g2po.analysis.words import REWARD_UNITS, pairs, same_place, split_evidence, split_phrase, top

__all__ = ["CHECK", "mass_share", "ranking"]

#: Severity of hidden-state aliasing, against a key that merges what the log tells apart.
HIDDEN_WEIGHT = 1 / 3


def mass_share(sig: GroupSignals, nodes: np.ndarray) -> np.ndarray:
    """(n_groups,) the share of each group's G2PO |A| on steps at ``nodes`` ((n_nodes,) bool)."""
    ix, adv = sig.ix, np.abs(sig.g2po["adv"])
    mass = np.bincount(ix.group, weights=adv, minlength=ix.n_groups)
    on = np.bincount(ix.group, weights=adv * nodes[ix.node], minlength=ix.n_groups)
    return np.where(mass > 0, on / np.maximum(mass, 1e-300), 0.0)


def _merged_keys(batch: Batch) -> np.ndarray:
    """(n_nodes,) bool: the strategy merged two or more distinct keys of the log into the
    node (the batch's ``_key_code``, the log's own key before a value-wise strategy mapped
    it, where the triage keeps one; else the index's exact node)."""
    ix = batch.sig.ix
    steps = batch.steps
    raw = steps["_key_code"].to_numpy(dtype=np.int64) if "_key_code" in steps.columns \
        else ix.exact_node
    if raw is ix.node or not len(raw):
        return np.zeros(ix.n_nodes, dtype=bool)
    base = np.int64(int(raw.max()) + 1)
    codes = np.unique(ix.node * base + raw)
    return np.bincount(codes // base, minlength=ix.n_nodes) > 1


def _evidence(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """(phrase, next states read as one place) of each group's most-taken split pair."""
    sig, text = batch.sig, batch.text
    out = np.full(sig.ix.n_groups, "", dtype=object)
    alike = np.zeros(sig.ix.n_groups, dtype=bool)
    if sig.stochastic or not len(sig.splits):
        return out, alike
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
        alike[group_of[a]] = same_place(nexts[a:b])
    return out, alike


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    aliased = sig.aliased
    n_aliased = sig.per_group(aliased, "nodes")
    hidden = sig.per_group(aliased & sig.hidden, "nodes")
    evidence, alike = _evidence(batch)
    share = np.where(n_aliased > 0, hidden / np.maximum(n_aliased, 1), 0.0)
    return {"count": n_aliased.astype(np.int64),
            "aliased_evidence": evidence,
            "aliased_share": mass_share(sig, aliased & ~sig.hub),
            "aliased_hidden": np.where(alike & (n_aliased > 0), 1.0, share),
            "aliased_merged": sig.per_group(aliased & _merged_keys(batch), "nodes") > 0}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    hidden = table["aliased_hidden"].to_numpy(float) * \
        ~table["aliased_merged"].to_numpy(dtype=bool)
    weight = 1 - (1 - HIDDEN_WEIGHT) * hidden
    return where(fires_of(table, "aliased"),
                 np.maximum(table["aliased_share"].to_numpy(float), 0.05) * weight)


def _kind(merged: bool, hidden: float) -> str:
    if merged:
        return " (the strategy merged keys that differ)"
    if hidden >= 0.5:
        return " (hidden state: the same observation, another world)"
    return ""  # the common case: the key leaves out where the agent came from


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    merged, hidden, evidence = at_rows(table, rows, "aliased_merged", "aliased_hidden",
                                       "aliased_evidence")
    return [f"key merges states{_kind(m, h)}: {e}"
            for m, h, e in zip(merged, hidden, evidence, strict=True)]


def _hidden_share(table: pd.DataFrame, fires: np.ndarray) -> float:
    hidden = table["aliased_hidden"].to_numpy(float)[fires] >= 0.5
    merged = table["aliased_merged"].to_numpy(dtype=bool)[fires]
    return float((hidden & ~merged).mean()) if fires.any() else 0.0


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    hidden = _hidden_share(table, fires)
    said = "the same (state key, action) leads on to different next states"
    if hidden >= 0.5:
        return (f"{said}, and on {hidden:.0%} of these groups the next states are one place "
                "with a detail changed, or the split stays among steps that arrived the same "
                "way: the world changed where the observation does not show it (a door opened "
                "in another room, an item taken earlier). That is "
                "partial observability: G2PO's merge averages over the hidden state; no "
                "state-key strategy over this key separates it.")
    return (f"{said}. Likely cause: a state key that leaves out what tells the states apart "
            "(where the agent came from, the inventory, what was said).")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if _hidden_share(table, fires) >= 0.5:
        return ("usually nothing (the observation is all the agent has); to separate them, "
                "a key with the previous observation or the world's facts (fewer merges), or "
                "declare the environment stochastic (--stochastic) if it is random.")
    if table["aliased_merged"].to_numpy(dtype=bool)[fires].any():
        return "a finer state-key strategy (exact, or a narrower --state-key regex:…)."
    return ("a state key that keeps what tells the states apart (the log's observation, or "
            "the previous one), or declare the environment stochastic if it is.")


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
    if view.measured["aliased_merged"]:
        why = ("The state-key strategy merged keys of the log that differ: a finer strategy "
               "(exact, or a narrower regex) separates them.")
    elif view.measured["aliased_hidden"] >= 0.5:
        why = ("The next states are one place with a detail changed, or steps that arrived "
               "the same way still part: the world changed where the observation does not "
               "show it (partial observability: hidden state, e.g. a door opened elsewhere), "
               "or the environment is random. No state-key strategy over this key separates "
               "them; a key with the previous observation would, at the price of merging "
               "less.")
    else:
        why = ("In a deterministic environment the state key merges states the environment "
               "tells apart: where the agent came from tells the next states apart, so a key "
               "that keeps it separates them (declare the environment stochastic if it is "
               "not deterministic).")
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
    columns={"aliased_evidence": "aliasing evidence", "aliased_share": "|A| on aliased",
             "aliased_hidden": "aliased: hidden-state share",
             "aliased_merged": "aliased: strategy merged keys"}, order=50))
