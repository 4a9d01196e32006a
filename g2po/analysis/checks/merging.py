"""Merging that does nothing: two checks on what the state key makes of the group's graph.

- ``no_merging``: almost no two steps share a state (merge rate below :data:`NO_MERGE_RATE`,
  10 steps or more), so A^NC has no reference sets. Severity 0.6 · (1 − rate / 0.05).
- ``prefix_tree``: the key makes the graph a tree: paths part (a state left towards two or
  more next states) but no state is ever reached two ways (from two states, from one and as a
  start, or from itself). Rollouts that share a start still share nodes, so the merge rate
  looks healthy; but every node is one history, so merging never pools two histories. The
  key probably carries the history (a turn counter, past actions, a growing transcript).
  Fires with :data:`TREE_MIN_BRANCHES` or more parting points, or where the key grows (each
  next key is the current one with more appended: a transcript); severity 0.6 where the key
  grows, else 0.6 · (1 − 2^−(B−1)), B the parting points: the more the paths part without ever
  meeting, the surer it is the key.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, fires_of, where
from g2po.analysis.checks.registry import Alarm, Batch, Check, GroupView, register_check
from g2po.analysis.words import pairs
from g2po.index import merge_rate

__all__ = ["NO_MERGING", "PREFIX_TREE", "NO_MERGE_RATE", "TREE_MIN_BRANCHES"]

#: Merge rates below this count as "no merging".
NO_MERGE_RATE = 0.05
#: A tree needs at least this many parting points to count as evidence (or a key that
#: grows: each next key the current one with more appended).
TREE_MIN_BRANCHES = 2
#: Transitions per group whose keys are compared to see whether the key grows.
TREE_SAMPLE = 16


# -- no merging --------------------------------------------------------------------------------

def _no_merging_measure(batch: Batch) -> dict[str, np.ndarray]:
    ix = batch.sig.ix
    n_steps = np.bincount(ix.group, minlength=ix.n_groups)
    n_states = np.bincount(ix.node_group, minlength=ix.n_groups)
    rate = merge_rate(n_states, n_steps)
    return {"count": np.where((n_steps >= 10) & (rate < NO_MERGE_RATE), n_states, 0)}


def _no_merging_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    rate = table["merge_rate"].to_numpy(float)
    return where(fires_of(table, "no_merging"),
                 0.6 * np.clip(1 - rate / NO_MERGE_RATE, 0.1, 1))


def _no_merging_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    (rate,) = at_rows(table, rows, "merge_rate")
    return [f"no merging: merge rate {r:.0%}" for r in rate]


def _no_merging_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("almost no two steps share a state key, so G2PO's node terms are empty. Likely "
            "cause: the key holds the history or a step counter.")


def _no_merging_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return "the normalized or a regex state key (--state-key normalized | regex:…)."


def _no_merging_alarm(view: GroupView) -> Alarm | None:
    if not view.measured["count"]:
        return None
    steps = view.graph.steps
    n_steps, n_states = len(steps), view.graph.n_states
    rate = 1.0 - n_states / n_steps if n_steps else 0.0
    return Alarm(
        "no_merging", f"No merging: merge rate {rate:.0%}",
        f"{n_states} state nodes for {n_steps} steps: almost no two steps share a state key, "
        "so A^NC has no reference sets. The key probably includes the history or a step "
        "counter; try another state-key strategy (normalized, regex).",
        n_states, pairs(steps))


NO_MERGING = register_check(Check(
    kind="no_merging", title="No merging", measure=_no_merging_measure,
    severity=_no_merging_severity, reason=_no_merging_reason, run_text=_no_merging_run_text,
    fix=_no_merging_fix, alarm=_no_merging_alarm, order=80))


# -- the graph is a prefix tree ----------------------------------------------------------------

def _grows(batch: Batch, candidate: np.ndarray) -> np.ndarray:
    """(n_groups,) the share of a candidate group's transitions (up to :data:`TREE_SAMPLE`)
    whose next key starts with the current key: a key that is the transcript so far."""
    ix = batch.sig.ix
    out = np.zeros(ix.n_groups)
    rows = np.flatnonzero((ix.next_row >= 0) & candidate[ix.group])
    if not len(rows):
        return out
    rows = rows[np.argsort(ix.group[rows], kind="stable")]
    group = ix.group[rows]
    start = np.r_[0, np.flatnonzero(group[1:] != group[:-1]) + 1]
    rank = np.arange(len(rows)) - np.repeat(start, np.diff(np.r_[start, len(rows)]))
    rows = rows[rank < TREE_SAMPLE]
    keys = batch.text("state_key", rows)
    nexts = batch.text("state_key", ix.next_row[rows])
    grows = np.array([n.startswith(k) and len(n) > len(k) for k, n in zip(keys, nexts,
                                                                          strict=True)])
    hits = np.bincount(ix.group[rows], weights=grows.astype(np.float64), minlength=ix.n_groups)
    seen = np.bincount(ix.group[rows], minlength=ix.n_groups)
    return np.where(seen >= 2, hits / np.maximum(seen, 1), 0.0)


def _tree_measure(batch: Batch) -> dict[str, np.ndarray]:
    sig = batch.sig
    parts = sig.per_group(sig.branch, "nodes")
    meets = sig.per_group(sig.rejoin, "nodes")
    grows = _grows(batch, (meets == 0) & ~sig.collapsed)
    tree = (meets == 0) & ((parts >= TREE_MIN_BRANCHES) | (grows >= 0.9))
    return {"count": np.where(tree, np.maximum(parts, 1), 0).astype(np.int64),
            "rejoins": meets.astype(np.int64), "key_grows": grows}


def _tree_severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    parts = table["alarm_prefix_tree"].to_numpy(float)
    sure = np.where(table["key_grows"].to_numpy(float) >= 0.9, 1.0,
                    1 - 0.5 ** np.maximum(parts - 1, 0))
    return where(fires_of(table, "prefix_tree"), 0.6 * sure)


def _tree_reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    grows, parts = at_rows(table, rows, "key_grows", "alarm_prefix_tree")
    return [f"state key carries the history: each key is the one before with more appended "
            f"({g:.0%} of the steps compared), no state reached two ways" if g >= 0.9 else
            f"state key carries the history: paths part at {p} states and never meet again "
            "(a prefix tree)" for g, p in zip(grows, parts, strict=True)]


def _tree_run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("no state is reached two ways: paths part but never meet again, so every node is "
            "one history and merging pools nothing. Likely cause: a state key that carries "
            "the history (a turn counter, past actions, the whole transcript); or an "
            "environment where paths never meet (then G2PO's node terms cannot help).")


def _tree_fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    return ("key on the current observation alone (the loader's state-key mapping, or "
            "--state-key regex:… keeping the part after the history).")


def _tree_alarm(view: GroupView) -> Alarm | None:
    parts = int(view.measured["count"])
    if not parts:
        return None
    steps = view.graph.steps
    grows = (" Each key is the one before with more appended: the key is the transcript."
             if view.measured["key_grows"] >= 0.9 else "")
    return Alarm(
        "prefix_tree", f"Prefix tree: {parts} parting states, none where paths meet",
        f"Paths part at {parts} states of this group and never meet again: no state is "
        "reached two ways, so every node is one history and merging pools nothing (the "
        "merge rate only counts the shared start). The state key probably carries the "
        f"history (a turn counter, past actions, the transcript); key on the current "
        f"observation alone.{grows}", parts, pairs(steps))


PREFIX_TREE = register_check(Check(
    kind="prefix_tree", title="History in the key", measure=_tree_measure,
    severity=_tree_severity, reason=_tree_reason, run_text=_tree_run_text, fix=_tree_fix,
    alarm=_tree_alarm, columns={"rejoins": "states reached two ways",
                                "key_grows": "keys that grow"}, order=85))
