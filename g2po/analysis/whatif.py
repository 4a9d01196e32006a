"""What if the states merged differently: the credit of a group under two state keys side by
side, and what a candidate key changes over a whole run.

The state key decides every number G2PO computes: which steps share a node, so each node's
value V, each step's TD error and the three advantages. :func:`what_if` recomputes one group
under a second key and lines the steps up: the advantage before and after, the steps whose
advantage changes sign or by more than ``min_change``, and why (their state, or their next
state, merged or split; or only the group's normalisation moved). :func:`merge_nodes` and
:func:`split_node` do the same for a hand edit of one group's graph (two nodes made one; a
node split by where its steps lead next): the API the group explorer's node edits call.
:func:`whatif_groups` gives one row per group of any step table, vectorised over every group
(two G2PO calls), and :func:`whatif_log` streams a whole log through it, a batch of training
steps at a time, as the groups table does (:func:`g2po.analysis.triage.triage_log`).

Everything goes through :func:`g2po.analysis.state_graph.state_graph` and
:func:`g2po.estimators.estimate` with the run's :class:`~g2po.outcomes.OutcomeRule` and the
:class:`~g2po.params.G2POParams` given whole; a group's counts are computed by the same
functions (:func:`step_changes`, :func:`partition_degrees`) on the page, in the CLI and in the
run's table, so they agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from g2po.analysis.alarms import ZERO_ADV
from g2po.analysis.state_graph import StateGraph, state_graph
from g2po.estimators import estimate
from g2po.outcomes import OutcomeRule
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.state_keys import (
    StateKeyFn,
    distinct_key_codes,
    strategy_columns,
)

__all__ = ["WhatIf", "what_if", "merge_nodes", "split_node", "compare_graphs",
           "step_changes", "partition_degrees", "whatif_groups", "whatif_log", "sort_whatif",
           "node_changes_text",
           "DEFAULT_MIN_CHANGE", "STEP_COLUMNS", "NODE_COLUMNS", "RUN_COLUMNS"]

#: A step's advantage "changes" when it moves by more than this (advantages are normalised,
#: so about a tenth of the group's spread) or changes sign.
DEFAULT_MIN_CHANGE = 0.1
#: Per step of :attr:`WhatIf.steps`: each quantity before (the first key) and after.
_COMPARED = ("node", "value", "next_value", "td_error", "adv_nc", "adv_ec", "adv")
STEP_COLUMNS = ["traj_id", "t", "action",
                *[f"{q}_{side}" for q in _COMPARED for side in ("before", "after")],
                "delta", "sign_flip", "changed", "why"]
#: Per changed part of the partition (:attr:`WhatIf.nodes`).
NODE_COLUMNS = ["kind", "nodes_before", "nodes_after", "values_before", "values_after",
                "visits", "labels_before", "labels_after"]
#: Per group of :func:`whatif_groups` / :func:`whatif_log`.
RUN_COLUMNS = ["train_step", "group_id", "task", "steps", "changed", "sign_flips",
               "max_abs_delta", "nodes_before", "nodes_after", "merged", "split"]
#: The columns of a training step the run's table reads (those the log has), besides those
#: the two state-key strategies read (:func:`g2po.state_keys.strategy_columns`).
READ_COLUMNS = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
                "is_action_valid", "done", "task"]


def _check_min_change(min_change: float) -> float:
    if isinstance(min_change, bool) or not isinstance(min_change, (int, float)) or \
            not math.isfinite(min_change) or min_change < 0:
        raise ValueError(f"min_change must be a finite number >= 0, got {min_change!r}")
    return float(min_change)


def step_changes(before: np.ndarray, after: np.ndarray, min_change: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How each step's advantage moved: (delta = after − before, sign_flip, changed), each
    (n_steps,). A flip needs both sides beyond :data:`~g2po.analysis.alarms.ZERO_ADV` (an
    advantage of ~0 has no sign); a step changed when it flips or moves by more than
    ``min_change``.

    >>> d, f, c = step_changes(np.array([0.5, 0.5, 0.0]), np.array([-0.2, 0.55, 0.3]), 0.1)
    >>> f.tolist(), c.tolist()
    ([True, False, False], [True, False, True])
    """
    before = np.asarray(before, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    delta = after - before
    flip = ((before > ZERO_ADV) & (after < -ZERO_ADV)) | ((before < -ZERO_ADV) &
                                                          (after > ZERO_ADV))
    return delta, flip, flip | (np.abs(delta) > _check_min_change(min_change))


def partition_degrees(node_before: np.ndarray, node_after: np.ndarray, n_before: int,
                      n_after: int) -> tuple[np.ndarray, np.ndarray]:
    """How two partitions of the same steps into nodes relate: for each node of the first,
    the number of second-partition nodes its steps fall into ((n_before,) int64: 2 or more,
    it was split), and for each node of the second, the number of first-partition nodes
    its steps came from ((n_after,) int64: 2 or more, nodes merged into it).

    >>> partition_degrees(np.array([0, 1, 2, 2]), np.array([0, 0, 1, 2]), 3, 3)
    (array([1, 1, 2]), array([2, 1, 1]))
    """
    pairs = np.unique(np.asarray(node_before, np.int64) * np.int64(n_after) +
                      np.asarray(node_after, np.int64))
    return (np.bincount(pairs // n_after, minlength=n_before),
            np.bincount(pairs % n_after, minlength=n_after))


@dataclass(frozen=True)
class WhatIf:
    """One group under two partitions into states.

    before, after : the group's state graph under the first key and under the second (or
        after the edit); their ``steps`` are the same rows in the same order.
    steps : one row per step (:data:`STEP_COLUMNS`), in the group's row order: the node,
        value V, next value V', TD error, A^NC, A^EC and A before and after, ``delta`` (A
        after − before), ``sign_flip``, ``changed`` (:func:`step_changes`) and ``why``.
    nodes : one row per part of the partition that changed (:data:`NODE_COLUMNS`): the nodes
        before that now share one node (``merged``), one node now split over several
        (``split``), or both at once (``regrouped``), with their values before and after,
        the steps there (``visits``) and the nodes' labels.
    label_before, label_after : what each side is (a state key, or the edit).
    min_change : the threshold ``changed`` used.
    """

    before: StateGraph
    after: StateGraph
    steps: pd.DataFrame
    nodes: pd.DataFrame
    label_before: str
    label_after: str
    min_change: float

    @property
    def changed(self) -> pd.DataFrame:
        """The changed steps, sign flips first, then the largest |delta|."""
        rows = self.steps[self.steps["changed"]]
        order = np.lexsort((-np.abs(rows["delta"].to_numpy()), ~rows["sign_flip"].to_numpy()))
        return rows.iloc[order]

    def summary(self) -> dict[str, float | int]:
        """The group's row of the run's table: the numbers :func:`whatif_groups` gives it."""
        steps = self.steps
        deg_before, deg_after = partition_degrees(
            steps["node_before"].to_numpy(), steps["node_after"].to_numpy(),
            self.before.n_states, self.after.n_states)
        return {"steps": len(steps), "changed": int(steps["changed"].sum()),
                "sign_flips": int(steps["sign_flip"].sum()),
                "max_abs_delta": float(np.abs(steps["delta"]).max()) if len(steps) else 0.0,
                "nodes_before": self.before.n_states, "nodes_after": self.after.n_states,
                "merged": int((deg_after >= 2).sum()), "split": int((deg_before >= 2).sum())}


# -- one group -------------------------------------------------------------------------------

def _key_name(key: str | StateKeyFn) -> str:
    return key if isinstance(key, str) else getattr(key, "__name__", repr(key))


def what_if(steps: pd.DataFrame, key: str | StateKeyFn, *, rule: OutcomeRule,
            params: G2POParams = DEFAULT_PARAMS,
            min_change: float = DEFAULT_MIN_CHANGE) -> WhatIf:
    """One group (the rows of exactly one group) under ``params.state_key`` and under
    ``key`` (any state-key strategy, :func:`g2po.state_keys.resolve_state_key`), with the
    other ``params`` and the run's ``rule`` the same on both sides.

    Examples
    --------
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...     "t": [0, 1, 0, 1], "state_key": ["start", "Hall", "start", "hall"],
    ...     "action": "go", "episode_reward": [10.0, 10.0, 0.0, 0.0],
    ...     "is_action_valid": True})
    >>> result = what_if(steps, "normalized", rule=OutcomeRule())
    >>> result.nodes[["kind", "nodes_before", "nodes_after", "values_before", "values_after"]]
         kind nodes_before nodes_after values_before values_after
    0  merged       [1, 2]         [1]    [9.5, 0.0]       [4.75]
    >>> result.steps[["traj_id", "t", "adv_before", "adv_after", "why"]].round(2)
      traj_id  t  adv_before  adv_after                                     why
    0       a  0        2.79       0.86  next state merged: nodes 1, 2 → node 1
    1       a  1        0.93       2.80       state merged: nodes 1, 2 → node 1
    2       b  0       -2.80      -0.87  next state merged: nodes 1, 2 → node 1
    3       b  1       -0.93      -2.80       state merged: nodes 1, 2 → node 1
    """
    before = state_graph(steps, rule=rule, params=params)
    after = state_graph(steps, rule=rule, params=replace(params, state_key=key))
    return compare_graphs(before, after, min_change=min_change,
                          label_before=_key_name(params.state_key), label_after=_key_name(key))


def _check_state_node(graph: StateGraph, node: int) -> int:
    if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or \
            not 0 <= int(node) < graph.n_states:
        raise ValueError(f"node {node!r} is not a state node of this graph (state nodes are "
                         f"0 to {graph.n_states - 1}; the others are terminals)")
    return int(node)


def _canonical(graph: StateGraph) -> np.ndarray:
    """Each step's canonical key (its node's), (n_steps,) object."""
    keys = graph.nodes["canonical_key"].to_numpy(dtype=object)
    return keys[graph.steps["node"].to_numpy(dtype=np.int64)].copy()


def _edited(graph: StateGraph, keys: np.ndarray, label: str, *, rule: OutcomeRule,
            params: G2POParams, min_change: float) -> WhatIf:
    """``graph`` against the same steps keyed by ``keys`` (exact): a hand edit's result."""
    derived = ["node", "next_node", "truncated"]
    steps = graph.steps.drop(columns=[c for c in derived if c in graph.steps.columns])
    after = state_graph(steps.assign(state_key=pd.array(keys, dtype=object)), rule=rule,
                        params=replace(params, state_key="exact"))
    return compare_graphs(graph, after, min_change=min_change,
                          label_before=_key_name(params.state_key), label_after=label)


def merge_nodes(graph: StateGraph, a: int, b: int, *, rule: OutcomeRule,
                params: G2POParams = DEFAULT_PARAMS,
                min_change: float = DEFAULT_MIN_CHANGE) -> WhatIf:
    """``graph`` (built under ``params`` and ``rule``) against the same group with state
    nodes ``a`` and ``b`` made one (the steps of ``b`` keyed as ``a``'s): the recomputed
    graph is the result's ``after``. Raises ``ValueError`` for a node that is not a state
    node of the graph, or ``a == b``."""
    a, b = _check_state_node(graph, a), _check_state_node(graph, b)
    if a == b:
        raise ValueError(f"merging node {a} with itself changes nothing: choose two nodes")
    keys = _canonical(graph)
    keys[graph.steps["node"].to_numpy() == b] = graph.nodes.at[a, "canonical_key"]
    return _edited(graph, keys, f"nodes {a} and {b} merged", rule=rule, params=params,
                   min_change=min_change)


#: Joins a node's key and where its steps lead, in the keys of :func:`split_node`.
SPLIT_MARK = "\n⟶ next: "


def split_node(graph: StateGraph, node: int, *, rule: OutcomeRule,
               params: G2POParams = DEFAULT_PARAMS,
               min_change: float = DEFAULT_MIN_CHANGE) -> WhatIf:
    """``graph`` against the same group with state node ``node`` split by where its steps
    lead next: one node per next state (or terminal) reached from it. Raises ``ValueError``
    for a node that is not a state node, or whose steps all lead to the same place."""
    node = _check_state_node(graph, node)
    steps = graph.steps
    at = steps["node"].to_numpy() == node
    targets = steps["next_node"].to_numpy()[at]
    if len(np.unique(targets)) < 2:
        raise ValueError(f"every step at node {node} leads to node {int(targets[0])}: "
                         "there is nothing to split it by")
    keys = _canonical(graph)
    target_keys = graph.nodes["canonical_key"].reindex(targets).to_numpy(dtype=object)
    keys[at] = [f"{k}{SPLIT_MARK}{t}" for k, t in zip(keys[at], target_keys)]
    return _edited(graph, keys, f"node {node} split by next state", rule=rule, params=params,
                   min_change=min_change)


def compare_graphs(before: StateGraph, after: StateGraph, *,
                   min_change: float = DEFAULT_MIN_CHANGE, label_before: str = "before",
                   label_after: str = "after") -> WhatIf:
    """The :class:`WhatIf` of two graphs of the same steps (in the same row order) that
    differ in how the steps merged into nodes."""
    b, a = before.steps, after.steps
    if len(b) != len(a) or not b.index.equals(a.index):
        raise ValueError("compare_graphs needs two graphs of the same steps, in the same order")
    node_b, node_a = b["node"].to_numpy(np.int64), a["node"].to_numpy(np.int64)
    deg_b, deg_a = partition_degrees(node_b, node_a, before.n_states, after.n_states)
    delta, flip, changed = step_changes(b["adv"].to_numpy(), a["adv"].to_numpy(), min_change)
    source = {"node": "node", "value": "node_value", "next_value": "next_value",
              "td_error": "td_error", "adv_nc": "adv_nc", "adv_ec": "adv_ec", "adv": "adv"}
    table = {"traj_id": b["traj_id"].to_numpy(), "t": b["t"].to_numpy(np.int64),
             "action": b["action"].to_numpy()}
    for q in _COMPARED:
        table[f"{q}_before"] = b[source[q]].to_numpy()
        table[f"{q}_after"] = a[source[q]].to_numpy()
    members = _members(node_b, node_a)
    why = _why(node_b, node_a, b["next_node"].to_numpy(np.int64),
               a["next_node"].to_numpy(np.int64), (before.n_states, after.n_states),
               (deg_b, deg_a), members,
               np.abs(table["adv_nc_after"] - table["adv_nc_before"]) > 1e-9,
               np.abs(table["adv_ec_after"] - table["adv_ec_before"]) > 1e-9)
    steps = pd.DataFrame({**table, "delta": delta, "sign_flip": flip, "changed": changed,
                          "why": pd.array(why, dtype=object)}, index=b.index)
    return WhatIf(before=before, after=after, steps=steps[STEP_COLUMNS],
                  nodes=_node_changes(before, after, node_b, node_a),
                  label_before=label_before, label_after=label_after,
                  min_change=_check_min_change(min_change))


def _members(node_b: np.ndarray, node_a: np.ndarray) -> tuple[dict, dict]:
    """(after node → its before nodes, before node → its after nodes), sorted."""
    pairs = pd.DataFrame({"b": node_b, "a": node_a}).drop_duplicates()
    return ({int(k): sorted(map(int, v)) for k, v in pairs.groupby("a")["b"]},
            {int(k): sorted(map(int, v)) for k, v in pairs.groupby("b")["a"]})


def _nodes_text(nodes: Sequence[int]) -> str:
    return ("node " if len(nodes) == 1 else "nodes ") + ", ".join(map(str, nodes))


def _change_of(b: int, a: int, degrees: tuple[np.ndarray, np.ndarray],
               members: tuple[dict, dict]) -> str:
    """How the node of a step changed: '' when the node is the same set of steps."""
    merged, split = degrees[1][a] >= 2, degrees[0][b] >= 2
    into, over = members[0][a], members[1][b]
    if merged and split:
        return f"regrouped: node {b} → {_nodes_text(over)}; node {a} ← {_nodes_text(into)}"
    if merged:
        return f"merged: {_nodes_text(into)} → node {a}"
    if split:
        return f"split: node {b} → {_nodes_text(over)}"
    return ""


def _why(node_b, node_a, next_b, next_a, n_states, degrees, members, nc_moved,
         ec_moved) -> list[str]:
    """Why each step's numbers moved, in words: its state, or its next state, merged or
    split; else another visit of its state leads elsewhere now (A^NC); else only the
    group-wide standardisation of the TD errors moved (A^EC); '' when nothing moved."""
    out = []
    for i in range(len(node_b)):
        said = _change_of(node_b[i], node_a[i], degrees, members)
        if said:
            out.append(f"state {said}")
            continue
        if next_b[i] < n_states[0] and next_a[i] < n_states[1]:
            said = _change_of(next_b[i], next_a[i], degrees, members)
        if said:
            out.append(f"next state {said}")
        elif nc_moved[i]:
            out.append("another visit of this state leads elsewhere now (A^NC)")
        elif ec_moved[i]:
            out.append("the group's TD errors moved (A^EC is standardised over the group)")
        else:
            out.append("")
    return out


def _node_changes(before: StateGraph, after: StateGraph, node_b: np.ndarray,
                  node_a: np.ndarray) -> pd.DataFrame:
    """The parts of the partition that changed: connected parts of the relation "a step of
    node x (before) lies in node y (after)" with more than one node on a side."""
    pairs = np.unique(np.column_stack([node_b, node_a]), axis=0) if len(node_b) else \
        np.zeros((0, 2), dtype=np.int64)
    pb, pa = pairs[:, 0], pairs[:, 1]
    label = np.arange(before.n_states, dtype=np.int64)
    while True:  # smallest before node reachable: a few rounds on any real graph
        via_a = np.full(after.n_states, before.n_states, dtype=np.int64)
        np.minimum.at(via_a, pa, label[pb])
        new = label.copy()
        np.minimum.at(new, pb, via_a[pa])
        if np.array_equal(new, label):
            break
        label = new
    rows = []
    for part in np.unique(label[pb]) if len(pb) else []:
        inside = label[pb] == part
        nb, na = np.unique(pb[inside]), np.unique(pa[inside])
        if len(nb) == 1 and len(na) == 1:
            continue
        kind = "merged" if len(na) == 1 else "split" if len(nb) == 1 else "regrouped"
        rows.append({
            "kind": kind, "nodes_before": nb.tolist(), "nodes_after": na.tolist(),
            "values_before": before.nodes.loc[nb, "value"].astype(float).tolist(),
            "values_after": after.nodes.loc[na, "value"].astype(float).tolist(),
            "visits": int(before.nodes.loc[nb, "visits"].sum()),
            "labels_before": before.nodes.loc[nb, "label"].astype(str).tolist(),
            "labels_after": after.nodes.loc[na, "label"].astype(str).tolist()})
    table = pd.DataFrame(rows, columns=NODE_COLUMNS)
    return table.sort_values("visits", ascending=False, kind="stable").reset_index(drop=True)


def node_changes_text(nodes: pd.DataFrame, label_limit: int = 60) -> pd.DataFrame:
    """:attr:`WhatIf.nodes` in words, one row per changed part: ``kind``, ``steps`` (there),
    ``before`` and ``after``: each side's nodes as "3 (V 4.32) label", "; "-joined, labels
    cut to ``label_limit`` characters. Text from the log, as it is: escape it where it
    becomes markup.

    >>> nodes = pd.DataFrame([{"kind": "merged", "nodes_before": [1, 2], "nodes_after": [1],
    ...     "values_before": [9.5, 0.0], "values_after": [4.75], "visits": 2,
    ...     "labels_before": ["Hall", "hall"], "labels_after": ["Hall"]}])
    >>> node_changes_text(nodes)[["before", "after"]].iloc[0].tolist()
    ['1 (V 9.5) Hall; 2 (V 0) hall', '1 (V 4.75) Hall']
    """
    def side(ids: Sequence[int], values: Sequence[float], labels: Sequence[str]) -> str:
        return "; ".join(f"{i} (V {v:.3g}) " + " ".join(str(label).split())[:label_limit]
                         for i, v, label in zip(ids, values, labels))

    return pd.DataFrame({
        "kind": nodes["kind"].to_numpy(), "steps": nodes["visits"].to_numpy(),
        "before": [side(*r) for r in zip(nodes["nodes_before"], nodes["values_before"],
                                         nodes["labels_before"])],
        "after": [side(*r) for r in zip(nodes["nodes_after"], nodes["values_after"],
                                        nodes["labels_after"])]}, index=nodes.index)


# -- every group of a table, and a whole log --------------------------------------------------

def _group_rows(steps: pd.DataFrame, before: tuple[dict, object], after: tuple[dict, object],
                min_change: float) -> pd.DataFrame:
    """:data:`RUN_COLUMNS` of every group, from the two G2PO calls' (columns, index)."""
    (cols_b, ix_b), (cols_a, ix_a) = before, after
    G = ix_b.n_groups
    delta, flip, changed = step_changes(cols_b["adv"], cols_a["adv"], min_change)
    first = np.full(G, ix_b.n_steps, dtype=np.int64)
    np.minimum.at(first, ix_b.group, np.arange(ix_b.n_steps, dtype=np.int64))
    group_id = steps["group_id"].to_numpy()[first]
    task = group_id
    if "task" in steps.columns:
        given = steps["task"].to_numpy(dtype=object)[first]
        task = np.where(pd.isna(given), group_id, given)
    max_abs = np.zeros(G)
    np.maximum.at(max_abs, ix_b.group, np.abs(delta))
    deg_b, deg_a = partition_degrees(ix_b.node, ix_a.node, ix_b.n_nodes, ix_a.n_nodes)
    return pd.DataFrame({
        "train_step": steps["train_step"].to_numpy(dtype=np.int64)[first]
        if "train_step" in steps.columns else np.zeros(G, dtype=np.int64),
        "group_id": pd.array(group_id, dtype=object),
        "task": pd.array(task, dtype=object),
        "steps": np.bincount(ix_b.group, minlength=G),
        "changed": np.bincount(ix_b.group, weights=changed, minlength=G).astype(np.int64),
        "sign_flips": np.bincount(ix_b.group, weights=flip, minlength=G).astype(np.int64),
        "max_abs_delta": max_abs,
        "nodes_before": np.bincount(ix_b.node_group, minlength=G),
        "nodes_after": np.bincount(ix_a.node_group, minlength=G),
        "merged": np.bincount(ix_a.node_group[deg_a >= 2], minlength=G),
        "split": np.bincount(ix_b.node_group[deg_b >= 2], minlength=G),
    })[RUN_COLUMNS]


def whatif_groups(steps: pd.DataFrame, key: str | StateKeyFn, *, rule: OutcomeRule,
                  params: G2POParams = DEFAULT_PARAMS,
                  min_change: float = DEFAULT_MIN_CHANGE) -> pd.DataFrame:
    """One row per group of ``steps`` (any number of groups and training steps): what
    ``key`` changes against ``params.state_key`` (:data:`RUN_COLUMNS`: the group's steps,
    the steps ``changed`` and ``sign_flips`` among them, the largest |ΔA|, its state nodes
    under each key, and how many nodes under ``key`` hold several of before (``merged``)
    and how many of before are spread over several (``split``)), in :func:`sort_whatif`'s
    order. Two G2PO calls, vectorised over every group."""
    _check_min_change(min_change)
    if steps.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in RUN_COLUMNS})
    other = replace(params, state_key=key)
    return sort_whatif(_group_rows(
        steps, estimate(steps, "g2po", **params.g2po_kwargs(rule)),
        estimate(steps, "g2po", **other.g2po_kwargs(rule)), min_change))


def sort_whatif(table: pd.DataFrame, by: str | None = None,
                descending: bool | None = None) -> pd.DataFrame:
    """The run's table sorted by column ``by`` (numbers largest first unless ``descending``
    is False, text A to Z unless it is True), ties by training step and group; by default
    the most sign flips first, then the most changed steps, then the largest |ΔA|. Raises
    ``KeyError`` naming the columns on an unknown one."""
    if by is None:
        keys = [("sign_flips", True), ("changed", True), ("max_abs_delta", True)]
    elif by not in table.columns:
        raise KeyError(f"no column {by!r} to sort by; columns: {', '.join(table.columns)}")
    else:
        text = not pd.api.types.is_numeric_dtype(table[by].dtype)
        keys = [(by, (not text) if descending is None else descending)]
    keys += [(c, False) for c in ("train_step", "group_id") if c != by]
    return table.sort_values([c for c, _ in keys], ascending=[not d for _, d in keys],
                             kind="stable").reset_index(drop=True)


class _Log(Protocol):  # what whatif_log needs of a loaders.Log
    def train_steps(self) -> list[int]: ...
    def columns_of_steps(self, train_steps: Sequence[int], columns: Sequence[str]
                         ) -> Iterable[tuple[int, pd.DataFrame]]: ...
    def rule(self) -> OutcomeRule: ...


def _short_codes(codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Integer codes as short strings (missing stays missing), made by Arrow."""
    codes = np.asarray(codes, dtype=np.int64)
    return pa.array(codes, mask=codes < 0).cast(pa.string()).to_pandas().array


def _keyed(frame: pd.DataFrame, spec: str | StateKeyFn) -> tuple[pd.DataFrame, str | StateKeyFn]:
    """``frame`` with its state keys ready for ``spec``: a value-wise strategy applied to a
    Categorical column's distinct keys (codes left, keyed exactly), else the text of every
    row; Categorical actions as codes (G2PO reads none). Returns the frame and the strategy
    left to apply."""
    changes = {}
    codes = distinct_key_codes(frame["state_key"], spec)
    if codes is not None:
        changes["state_key"], spec = _short_codes(codes), "exact"
    elif isinstance(frame["state_key"].dtype, pd.CategoricalDtype):
        changes["state_key"] = frame["state_key"].to_numpy(dtype=object)
    if isinstance(frame["action"].dtype, pd.CategoricalDtype):
        changes["action"] = _short_codes(frame["action"].cat.codes.to_numpy())
    return (frame.assign(**changes) if changes else frame), spec


def whatif_log(log: _Log, key: str | StateKeyFn, train_steps: Sequence[int] | None = None, *,
               rule: OutcomeRule | None = None, params: G2POParams = DEFAULT_PARAMS,
               min_change: float = DEFAULT_MIN_CHANGE,
               progress: Callable[[int, int], None] | None = None,
               batch_rows: int = 200_000) -> pd.DataFrame:
    """:func:`whatif_groups` of ``train_steps`` of a log (default: all), under ``rule``
    (default: the log's own), streamed: each training step read with only the columns the
    two keys need, computed in batches of about ``batch_rows`` rows (the first step alone,
    so a key the log cannot support fails at once). ``progress`` gets (training steps done,
    in all) as the work goes, last (all, all)."""
    _check_min_change(min_change)
    rule = rule or log.rule()
    other = replace(params, state_key=key)  # checks the key before anything is read
    steps = list(log.train_steps() if train_steps is None else train_steps)
    columns = [*READ_COLUMNS, *strategy_columns(params.state_key, key)]
    total, done = len(steps), 0
    parts: list[pd.DataFrame] = []
    batch: list[tuple[pd.DataFrame, pd.DataFrame]] = []
    applied: list = []  # the strategies left to apply to the batch's frames (the same for all)

    rows = 0

    def flush() -> None:
        nonlocal batch, done, rows
        if not batch:
            return
        frames = [pd.concat([p[i] for p in batch], ignore_index=True) if len(batch) > 1
                  else batch[0][i] for i in (0, 1)]
        parts.append(_group_rows(
            frames[0],
            estimate(frames[0], "g2po", **replace(params, state_key=applied[0])
                     .g2po_kwargs(rule)),
            estimate(frames[1], "g2po", **replace(other, state_key=applied[1])
                     .g2po_kwargs(rule)), min_change))
        done += len(batch)
        batch, rows = [], 0
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)
    for s, frame in log.columns_of_steps(steps, columns):
        frame = frame.assign(train_step=np.int64(s))
        keyed_b, left_b = _keyed(frame, params.state_key)
        keyed_a, left_a = _keyed(frame, key)
        if batch and applied != [left_b, left_a]:  # frames keyed otherwise: never one batch
            flush()
        applied = [left_b, left_a]
        batch.append((keyed_b, keyed_a))
        rows += len(frame)
        if rows >= batch_rows or not parts:
            flush()
        elif progress is not None:
            progress(done + len(batch), total)
    flush()
    if not parts:
        return whatif_groups(pd.DataFrame(), key, rule=rule, params=params)
    return sort_whatif(pd.concat(parts, ignore_index=True))
