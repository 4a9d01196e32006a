"""Two training steps of one task, compared: which states and transitions appeared or vanished,
how each state's value and visits moved, and how the success rate moved.

Nodes are matched by their canonical key (the state key after the state-key strategy), so the
same observation at two training steps is the same state; terminals by kind; transitions by
(source key, action, target key).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.state_graph import StateGraph

__all__ = ["StepDiff", "step_diff", "success_rate", "APPEARED", "VANISHED", "KEPT"]

APPEARED, VANISHED, KEPT = "appeared", "vanished", "kept"


@dataclass(frozen=True)
class StepDiff:
    """What changed from graph A (the earlier step) to graph B.

    states : one row per state key seen in either: ``key``, ``label`` (first observation),
        ``status`` (appeared | vanished | kept), ``node_a`` / ``node_b`` (ids in each graph,
        -1 when absent), ``visits_a`` / ``visits_b``, ``value_a`` / ``value_b`` (NaN when
        absent), ``value_change`` (B − A, kept states only); sorted by status, then by the size
        of the value change.
    transitions : one row per (source key, action, target key): ``source``, ``action``,
        ``target`` (keys), ``status``, ``count_a``, ``count_b``, ``td_error_a``,
        ``td_error_b``, and the edge's node ids in each graph (``from_node_a``, ``to_node_a``,
        ``from_node_b``, ``to_node_b``; -1 when absent).
    success_a, success_b : success rate of the group's trajectories at each step.
    """

    states: pd.DataFrame
    transitions: pd.DataFrame
    success_a: float
    success_b: float

    @property
    def success_change(self) -> float:
        return self.success_b - self.success_a

    def counts(self) -> dict[str, int]:
        """How many states and transitions appeared, vanished and were kept."""
        out = {}
        for what, table in (("states", self.states), ("transitions", self.transitions)):
            for status in (APPEARED, VANISHED, KEPT):
                out[f"{what}_{status}"] = int((table["status"] == status).sum())
        return out


def success_rate(graph: StateGraph) -> float:
    """Share of the group's trajectories that succeeded by the outcome rule the graph was
    built with (its success terminal): the rule every page counts success by, so the diff
    agrees with the run overview and the group explorer (``won`` may disagree: the group
    explorer says so)."""
    steps = graph.steps
    if steps.empty:
        return float("nan")
    won = steps["success"].astype(bool)
    return float(won.groupby(steps["traj_id"].to_numpy()).any().mean())


def _keyed_nodes(graph: StateGraph) -> pd.DataFrame:
    nodes = graph.nodes
    key = np.where(nodes["kind"].to_numpy() == "state",
                   nodes["canonical_key"].astype(str).to_numpy(),
                   ("<" + nodes["kind"].astype(str) + ">").to_numpy())
    return pd.DataFrame({"key": key, "node": nodes.index.to_numpy(dtype=np.int64),
                         "kind": nodes["kind"].to_numpy(),
                         "visits": nodes["visits"].to_numpy(dtype=np.int64),
                         "value": nodes["value"].to_numpy(dtype=np.float64),
                         "label": nodes["label"].astype(str).to_numpy()})


def _status(in_a: np.ndarray, in_b: np.ndarray) -> np.ndarray:
    return np.where(in_a & in_b, KEPT, np.where(in_b, APPEARED, VANISHED))


def step_diff(graph_a: StateGraph, graph_b: StateGraph) -> StepDiff:
    """Compare one task's state graphs at two training steps (A earlier, B later).

    >>> import pandas as pd
    >>> from g2po.analysis.state_graph import state_graph
    >>> def group(keys, reward):
    ...     return pd.DataFrame({"group_id": "g", "traj_id": "a", "t": range(len(keys)),
    ...         "state_key": keys, "action": "go", "episode_reward": reward,
    ...         "is_action_valid": True})
    >>> from g2po.outcomes import OutcomeRule
    >>> rule = OutcomeRule()
    >>> d = step_diff(state_graph(group(["s0", "s1"], 0.0), rule=rule),
    ...               state_graph(group(["s0", "s2"], 10.0), rule=rule))
    >>> d.states.set_index("key")["status"].to_dict()
    {'s2': 'appeared', 's1': 'vanished', 's0': 'kept'}
    >>> d.success_change
    1.0
    """
    a, b = _keyed_nodes(graph_a), _keyed_nodes(graph_b)
    both = a.merge(b, on="key", how="outer", suffixes=("_a", "_b"))
    both = both[(both["kind_a"].fillna(both["kind_b"]) == "state")]
    in_a, in_b = both["node_a"].notna().to_numpy(), both["node_b"].notna().to_numpy()
    states = pd.DataFrame({
        "key": both["key"].to_numpy(),
        "label": both["label_b"].fillna(both["label_a"]).to_numpy(),
        "status": _status(in_a, in_b),
        "node_a": both["node_a"].fillna(-1).to_numpy(dtype=np.int64),
        "node_b": both["node_b"].fillna(-1).to_numpy(dtype=np.int64),
        "visits_a": both["visits_a"].fillna(0).to_numpy(dtype=np.int64),
        "visits_b": both["visits_b"].fillna(0).to_numpy(dtype=np.int64),
        "value_a": both["value_a"].to_numpy(dtype=np.float64),
        "value_b": both["value_b"].to_numpy(dtype=np.float64),
    })
    states["value_change"] = states["value_b"] - states["value_a"]
    order = {APPEARED: 0, VANISHED: 1, KEPT: 2}
    states = states.assign(_o=states["status"].map(order),
                           _m=-states["value_change"].abs().fillna(0.0))
    states = states.sort_values(["_o", "_m", "key"]).drop(columns=["_o", "_m"])

    def keyed_edges(graph: StateGraph, nodes: pd.DataFrame) -> pd.DataFrame:
        key_of = pd.Series(nodes["key"].to_numpy(), index=nodes["node"].to_numpy())
        edges = graph.edges
        return pd.DataFrame({"source": key_of.loc[edges["source"]].to_numpy(),
                             "action": edges["action"].astype(str).to_numpy(),
                             "target": key_of.loc[edges["target"]].to_numpy(),
                             "count": edges["count"].to_numpy(dtype=np.int64),
                             "from_node": edges["source"].to_numpy(dtype=np.int64),
                             "to_node": edges["target"].to_numpy(dtype=np.int64),
                             "td_error": edges["td_error"].to_numpy(dtype=np.float64)})

    ea, eb = keyed_edges(graph_a, a), keyed_edges(graph_b, b)
    edges = ea.merge(eb, on=["source", "action", "target"], how="outer", suffixes=("_a", "_b"))
    transitions = pd.DataFrame({
        "source": edges["source"].to_numpy(),
        "action": edges["action"].to_numpy(),
        "target": edges["target"].to_numpy(),
        "status": _status(edges["count_a"].notna().to_numpy(), edges["count_b"].notna().to_numpy()),
        "count_a": edges["count_a"].fillna(0).to_numpy(dtype=np.int64),
        "count_b": edges["count_b"].fillna(0).to_numpy(dtype=np.int64),
        "td_error_a": edges["td_error_a"].to_numpy(dtype=np.float64),
        "td_error_b": edges["td_error_b"].to_numpy(dtype=np.float64),
        "from_node_a": edges["from_node_a"].fillna(-1).to_numpy(dtype=np.int64),
        "to_node_a": edges["to_node_a"].fillna(-1).to_numpy(dtype=np.int64),
        "from_node_b": edges["from_node_b"].fillna(-1).to_numpy(dtype=np.int64),
        "to_node_b": edges["to_node_b"].fillna(-1).to_numpy(dtype=np.int64),
    })
    transitions = transitions.assign(_o=transitions["status"].map(order)).sort_values(
        ["_o", "source", "action", "target"]).drop(columns="_o")
    return StepDiff(states=states.reset_index(drop=True),
                    transitions=transitions.reset_index(drop=True),
                    success_a=success_rate(graph_a), success_b=success_rate(graph_b))
