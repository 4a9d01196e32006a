"""Hub states: a node reached mostly through invalid actions from several states (feedback
such as ALFWorld's "Nothing happens." keyed as if it were a state), or reached from many
states where the same action then leads on to different states (what follows depends on where
the agent came from). A real state that many states reach (ALFWorld's "go to drawer 1" from
anywhere, a gridworld cell) is no hub: the thresholds are in :mod:`g2po.analysis.signals`.
Severity: the share of G2PO's |A| on the hubs (at least 0.05).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.aliased import mass_share, ranking
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.signals import HUB_INVALID_SHARE
from g2po.analysis.words import pairs, short_text, top

__all__ = ["CHECK"]

_FEEDBACK_FIX = ("feedback that the action changed nothing (\"Nothing happens.\") is not a "
                 "state: key such a step by the state the agent is still in (the previous "
                 "key: the bundled ALFWorld key and G2PO's ALFWorld anchor do so), e.g. in "
                 "the loader's state key")
_SOURCES_FIX = ("a state key that keeps what tells these situations apart: what the agent "
                "holds or can do there (the admissible actions, as G2PO's ALFWorld anchor "
                "keeps them), the location, or the previous observation")


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    ix, G = sig.ix, sig.ix.n_groups
    evidence = np.full(G, "", dtype=object)
    feedback = np.zeros(G, dtype=bool)
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
        feedback[ix.node_group[hubs]] = sig.invalid_arrival_share[hubs] >= HUB_INVALID_SHARE
    return {"count": sig.per_group(sig.hub, "nodes").astype(np.int64),
            "hub_evidence": evidence, "hub_share": mass_share(sig, sig.hub),
            "hub_feedback": feedback}


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(fires_of(table, "hub"), np.maximum(table["hub_share"].to_numpy(float), 0.05))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    (evidence,) = at_rows(table, rows, "hub_evidence")
    return [f"hub: {e}" for e in evidence]


def _feedback_share(table: pd.DataFrame, fires: np.ndarray) -> float:
    return float(table["hub_feedback"].to_numpy(dtype=bool)[fires].mean()) if fires.any() \
        else 0.0


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    if _feedback_share(table, fires) >= 0.5:
        return ("a state reached mostly through invalid actions from many states: its key is "
                "the environment's feedback (\"Nothing happens.\"), the same text wherever the "
                "agent is, so unrelated situations share one value.")
    return ("states reached from many others, after which the same action leads to different "
            "states: the key merges situations that differ in where the agent came from.")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return (_FEEDBACK_FIX if _feedback_share(table, fires) >= 0.5 else _SOURCES_FIX) + "."


def _alarm(view: GroupView) -> Alarm | None:
    sig, steps = view.sig, view.graph.steps
    if not sig.hub.any():
        return None
    table = ranking(view, sig.hub, ["in_sources", "credit_moved"])
    nodes = tuple(int(x) for x in table["node"])
    shown = top(table, lambda r: f"node {r.node} from {r.in_sources} states, "
                                 f"{r.invalid_arrival_share:.0%} through invalid actions")
    feedback = table["invalid_arrival_share"].iloc[0] >= HUB_INVALID_SHARE
    why = (f"A state reached mostly after invalid actions, from many states, is the "
           f"environment's feedback rather than a place: unrelated steps share one value. "
           f"Fix: {_FEEDBACK_FIX}." if feedback else
           "A state reached from many different states, after which the same action leads "
           "on to different states: the key merges situations that differ in where the agent "
           f"came from. Fix: {_SOURCES_FIX}.")
    rows = steps[np.isin(steps["node"].to_numpy(), nodes)]
    return Alarm("hub", f"Hub states: {len(nodes)} node(s)", f"{shown}. {why}", len(nodes),
                 pairs(rows), nodes, table)


CHECK = register_check(Check(
    kind="hub", title="Hub states", measure=_measure, severity=_severity, reason=_reason,
    run_text=_run_text, fix=_fix, alarm=_alarm,
    columns={"hub_evidence": "hub evidence", "hub_share": "|A| on hubs",
             "hub_feedback": "hub: invalid-action feedback"}, order=60))
