"""Hub states: state nodes reached from many different states, or mostly through invalid
actions (ALFWorld's "Nothing happens."): the key leaves out where the agent is, so unrelated
situations share one value (thresholds in :mod:`g2po.analysis.signals`). Severity: the share
of G2PO's |A| on the hubs (at least 0.05).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import fires_of, where
from g2po.analysis.checks.aliased import mass_share, ranking
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import pairs, short_text, top

__all__ = ["CHECK"]

def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    ix, G = sig.ix, sig.ix.n_groups
    evidence = np.full(G, "", dtype=object)
    if sig.hub.any():
        hubs = np.flatnonzero(sig.hub)
        hubs = hubs[np.lexsort((-sig.in_sources[hubs], ix.node_group[hubs]))]
        hubs = hubs[np.r_[True, ix.node_group[hubs][1:] != ix.node_group[hubs][:-1]]]
        first_row = np.full(ix.n_nodes, -1, dtype=np.int64)
        first_row[ix.node[::-1]] = np.arange(ix.n_steps - 1, -1, -1)
        for h, key in zip(hubs, batch.text("state_key", first_row[hubs]), strict=True):
            evidence[ix.node_group[h]] = (
                f"'{short_text(key)}' reached from {sig.in_sources[h]} states, "
                f"{sig.invalid_arrival_share[h]:.0%} through invalid actions")
    return {"count": sig.per_group(sig.hub, "nodes").astype(np.int64),
            "hub_evidence": evidence, "hub_share": mass_share(sig, sig.hub)}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "hub"), np.maximum(table["hub_share"].to_numpy(float), 0.05))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    return [f"hub: {table['hub_evidence'].iat[i]}" for i in rows]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("states reached from many others (\"Nothing happens.\") merge unrelated "
            "situations.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "a state key that keeps the location (--state-key regex:…)."


def _alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.hub.any():
        return None
    table = ranking(view, sig.hub, ["in_sources", "credit_moved"])
    nodes = tuple(int(x) for x in table["node"])
    shown = top(table, lambda r: f"node {r.node} from {r.in_sources} states, "
                                 f"{r.invalid_arrival_share:.0%} through invalid actions")
    why = ("A state reached from many different states, or mostly after invalid actions "
           "(feedback like \"Nothing happens.\"), says little about where the agent is: its "
           "key probably leaves out the situation, so unrelated steps share one value. "
           "Consider a state key that keeps the location (a regex, or the previous "
           "observation).")
    rows = steps[np.isin(steps["node"].to_numpy(), nodes)]
    return Alarm("hub", f"Hub states: {len(nodes)} node(s)", f"{shown}. {why}", len(nodes),
                 pairs(rows), nodes, table)


CHECK = register_check(Check(
    kind="hub", title="Hub states", measure=_measure, severity=_severity, reason=_reason,
    run_text=_run_text, fix=_fix, alarm=_alarm,
    columns={"hub_evidence": "hub evidence", "hub_share": "|A| on hubs"}, order=60))
