"""The G2PO state graph: node values, next-state values, TD errors, and one group's graph.

The vectorised quantities (:func:`graph_values`) feed the G2PO estimator; :func:`state_graph`
summarises one group as node and edge tables for the app and the CLI, from the very same columns
the estimator produced, so the picture and the loss never disagree.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from g2po.analysis.labels import distinguishing_labels
from g2po.index import StepIndex
from g2po.outcomes import cut_at_limit, flag_values, success_mask
from g2po.segments import powers, segment_mean_var

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "Terminal",
    "transition_targets",
    "GraphValues",
    "graph_values",
    "terminal_values",
    "StateGraph",
    "state_graph",
    "truncated_steps",
    "to_networkx",
]

Terminal = Literal["binary", "reward"]
SUCCESS, FAILURE, TRUNCATED = "success", "failure", "truncated"


def check_gamma(gamma: float, *, strict: bool = False, name: str = "gamma") -> float:
    upper_ok = gamma < 1.0 if strict else gamma <= 1.0
    if not (0.0 < gamma and upper_ok):
        bound = "(0, 1)" if strict else "(0, 1]"
        raise ValueError(f"{name} must be in {bound}, got {gamma}")
    return float(gamma)


def check_success_reward(success_reward: float) -> float:
    from g2po.index import MAX_ABS_REWARD

    if not abs(success_reward) <= MAX_ABS_REWARD:
        raise ValueError(f"success_reward must be at most {MAX_ABS_REWARD:g} in magnitude, "
                         f"got {success_reward}")
    return float(success_reward)


def check_terminal(terminal: str) -> str:
    if terminal not in ("binary", "reward"):
        raise ValueError(f"terminal must be 'binary' or 'reward', got {terminal!r}")
    return terminal


def terminal_values(
    ix: StepIndex, success_reward: float = 10.0, terminal: Terminal = "binary",
    success_threshold: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per step: did its trajectory succeed (n_steps,) bool, by :func:`g2po.outcomes.
    success_mask` (reward equal to the success reward, or at least ``success_threshold``), and
    the value of its terminal node (n_steps,) float64: the success reward or 0 (``binary``), or
    R_i itself (``reward``)."""
    check_terminal(terminal)
    check_success_reward(success_reward)
    success = success_mask(ix.reward, success_reward, success_threshold)
    if terminal == "binary":
        value = np.where(success, float(success_reward), 0.0)
    else:
        value = ix.reward.copy()
    return success, value


def transition_targets(ix: StepIndex, success: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each step's transition leads, in the block-diagonal graph of all groups at once.

    Vertices 0 … n_nodes-1 are the state nodes; ``n_nodes + g`` is group g's ``success`` vertex
    and ``n_nodes + n_groups + g`` its ``failure`` vertex (groups never share a vertex). Returns
    (target (n_steps,) int64: the next step's node, or the terminal vertex on the last step;
    vertex_group (n_vertices,) int64)."""
    target = np.where(success, ix.n_nodes + ix.group, ix.n_nodes + ix.n_groups + ix.group)
    has_next = ix.next_row >= 0
    target[has_next] = ix.node[ix.next_row[has_next]]
    groups = np.arange(ix.n_groups, dtype=np.int64)
    return target.astype(np.int64), np.concatenate([ix.node_group, groups, groups])


@dataclass(frozen=True)
class GraphValues:
    """The value side of the G2PO graph, for all groups at once.

    step_value : (n_steps,) v_{i,t} = gamma^(T_i - t) * R_i
    node_value : (n_nodes,) V(k), the mean step value of node k
    node_var : (n_nodes,) population variance of the step values merged into node k
    node_visits : (n_nodes,) int64 occurrences of node k
    next_value : (n_steps,) V(node of step t+1), or the terminal value on the last step
    td_error : (n_steps,) next_value - V(node of the step)
    success : (n_steps,) bool, the trajectory reached the success terminal
    """

    step_value: np.ndarray
    node_value: np.ndarray
    node_var: np.ndarray
    node_visits: np.ndarray
    next_value: np.ndarray
    td_error: np.ndarray
    success: np.ndarray


def graph_values(
    ix: StepIndex,
    gamma: float = 0.95,
    success_reward: float = 10.0,
    terminal: Terminal = "binary",
    success_threshold: float | None = None,
) -> GraphValues:
    """Steps 1–3 of the G2PO spec and the TD error of step 5 (before normalisation)."""
    check_gamma(gamma)
    step_value = powers(gamma, ix.length - ix.t) * ix.reward
    node_value, node_var, visits = segment_mean_var(step_value, ix.node, ix.n_nodes, ix.order)
    success, term_value = terminal_values(ix, success_reward, terminal, success_threshold)
    has_next = ix.next_row >= 0
    next_value = term_value.copy()
    next_value[has_next] = node_value[ix.node[ix.next_row[has_next]]]
    td_error = next_value - node_value[ix.node]
    return GraphValues(step_value, node_value, node_var, visits, next_value, td_error, success)


@dataclass(frozen=True)
class StateGraph:
    """One group's state graph.

    nodes : one row per node, indexed by ``node`` (int): ``kind`` (``state`` | ``success`` |
        ``failure`` | ``truncated``, the last only when some trajectory was cut at the step
        limit), ``state_key``, ``visits``, ``value`` V(k), ``value_var``, ``is_start`` (some
        trajectory begins there), ``depth`` (smallest step index seen there; terminals one
        past the deepest step), ``label`` (the words of the key that tell it apart from the
        group's other keys, :func:`g2po.analysis.labels.distinguishing_labels`),
        ``observation`` (the first observation seen there, else the key).
    edges : one row per (source, action, target): ``count``, ``td_error``, ``invalid`` (count of
        invalid steps), and the mean of each advantage column of the steps along it.
    steps : the group's step rows with ``node``, ``next_node`` and ``truncated`` (the
        trajectory was cut at the step limit: ``done`` false on its last step) added, in their
        input order. A truncated trajectory's last step leads to the ``truncated`` terminal;
        its value there is the estimator's failure value.
    """

    nodes: pd.DataFrame
    edges: pd.DataFrame
    steps: pd.DataFrame

    @property
    def n_states(self) -> int:
        return int((self.nodes["kind"] == "state").sum())


def state_graph(steps: pd.DataFrame, *, estimator_columns: bool = True,
                truncate_at: int | None = None, **params) -> StateGraph:
    """Build the state graph of the single group in ``steps``.

    ``steps`` holds the rows of exactly one group (one ``group_id``, one ``train_step``);
    ``params`` go to the G2PO estimator (gamma, w, mode, penalty, success_reward, terminal,
    state_key). Columns already computed by the caller are recomputed, so the graph always matches
    the parameters given. ``truncate_at`` (the outcome rule's, :class:`g2po.outcomes.
    OutcomeRule`): a failed trajectory of that many steps or more, whose last step has no
    ``done`` flag, ends at the ``truncated`` terminal; only the drawing changes, the estimator
    values it as failure all the same.

    Raises
    ------
    ValueError
        If ``steps`` holds more or fewer than one group.

    Examples
    --------
    >>> import pandas as pd
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b"], "t": [0, 1, 0],
    ...     "state_key": ["s0", "s1", "s0"], "action": ["go", "take", "look"],
    ...     "episode_reward": [10.0, 10.0, 0.0], "is_action_valid": True})
    >>> g = state_graph(steps)
    >>> list(g.nodes["kind"])
    ['state', 'state', 'success', 'failure']
    >>> int(g.edges["count"].sum())
    3
    """
    from g2po.estimators import estimate  # the estimators import this module

    group_cols = [c for c in ("train_step", "group_id") if c in steps.columns]
    n_groups = len(steps.drop_duplicates(group_cols)) if len(steps) else 0
    if n_groups != 1:
        raise ValueError(
            f"state_graph needs the rows of exactly one group ({' / '.join(group_cols)}), "
            f"got {n_groups}"
        )
    columns, ix = estimate(steps, "g2po", **params)
    table = steps.assign(**columns)
    local, uniques = pd.factorize(ix.node, sort=False)
    n_states = len(uniques)
    success_id, failure_id = n_states, n_states + 1
    # a trajectory cut at the step limit ends in its own terminal (valued as failure by the
    # estimator, whose numbers are untouched: only where it is drawn changes)
    truncated = truncated_steps(table, ix, table["success"].to_numpy(), truncate_at)
    has_truncated = bool(truncated.any())
    truncated_id = n_states + 2
    next_node = np.where(table["success"].to_numpy(), success_id, failure_id)
    if has_truncated:
        next_node = np.where(truncated & ~table["success"].to_numpy(), truncated_id, next_node)
    has_next = ix.next_row >= 0
    next_node[has_next] = local[ix.next_row[has_next]]
    table = table.assign(node=local, next_node=next_node, truncated=truncated)

    by_node = table.groupby("node", sort=True)
    text_col = "observation" if "observation" in table.columns else "state_key"
    max_t = int(table["t"].max()) + 1
    keys = by_node["state_key"].first()
    nodes = pd.DataFrame(
        {
            "kind": "state",
            "state_key": keys,
            "canonical_key": pd.Series(ix.canonical_key.to_numpy()).groupby(local).first(),
            "visits": by_node.size(),
            "value": by_node["node_value"].first(),
            "value_var": by_node["node_value_var"].first(),
            "is_start": by_node["t"].min() == 0,
            "depth": by_node["t"].min(),
            "label": _labels(tuple(str(k) for k in keys)),
            "observation": by_node[text_col].first(),
        }
    )
    ends = table.loc[ix.next_row < 0]
    terminal_rows = []
    terminals = [(success_id, SUCCESS), (failure_id, FAILURE)]
    if has_truncated:
        terminals.append((truncated_id, TRUNCATED))
    for node_id, kind in terminals:
        hit = ends[ends["next_node"] == node_id]
        terminal_rows.append(
            {
                "kind": kind,
                "state_key": f"<{kind}>",
                "canonical_key": f"<{kind}>",
                "visits": len(hit),
                "value": float(hit["next_value"].mean()) if len(hit) else 0.0,
                "value_var": float(hit["next_value"].var(ddof=0)) if len(hit) else 0.0,
                "is_start": False,
                "depth": max_t,
                "label": kind,
                "observation": kind,
            }
        )
    nodes = pd.concat([nodes, pd.DataFrame(terminal_rows, index=[i for i, _ in terminals])])
    nodes.index.name = "node"

    adv_cols = [c for c in ("adv", "adv_ep", "adv_nc", "adv_ec") if c in table.columns]
    edge_keys = ["node", "action", "next_node"]
    grouped = table.assign(invalid=~table["is_action_valid"]).groupby(edge_keys, sort=True)
    edges = grouped.agg(
        count=("t", "size"),
        td_error=("td_error", "first"),
        invalid=("invalid", "sum"),
        **{c: (c, "mean") for c in adv_cols},
    ).reset_index()
    edges = edges.rename(columns={"node": "source", "next_node": "target"})
    if not estimator_columns:
        table = table[[*steps.columns, "node", "next_node", "truncated"]]
    return StateGraph(nodes=nodes, edges=edges, steps=table)


def truncated_steps(steps: pd.DataFrame, ix: StepIndex, success: np.ndarray,
                    truncate_at: int | None = None) -> np.ndarray:
    """(n_steps,) bool, row-aligned with ``steps``: the step's trajectory was cut at the step
    limit (:func:`g2po.outcomes.cut_at_limit` on each trajectory's last step: ``done`` false
    there, or with ``truncate_at`` N a failure of N steps or more without ``done``).

    ix : the :class:`StepIndex` of ``steps``. success : (n_steps,) bool, the estimator's.
    """
    last = np.flatnonzero(ix.next_row < 0)
    if "done" in steps.columns:
        done = flag_values(steps["done"])[last]
    else:
        done = np.full(len(last), np.nan)
    cut = cut_at_limit(ix.length[last], done, np.asarray(success, dtype=bool)[last],
                       truncate_at)
    by_traj = np.zeros(ix.n_traj, dtype=bool)
    by_traj[ix.traj[last]] = cut
    return by_traj[ix.traj]


@functools.lru_cache(maxsize=128)
def _labels(keys: tuple[str, ...]) -> list[str]:
    """Node labels depend on the keys only: a change of γ, w or the penalty reuses them."""
    return distinguishing_labels(keys)


def to_networkx(graph: StateGraph) -> nx.MultiDiGraph:
    """The graph as a networkx ``MultiDiGraph``: one edge per (source, action, target), keyed by
    the action, with the node and edge table columns as attributes."""
    import networkx as nx  # only this conversion needs it

    g = nx.MultiDiGraph()
    for node, row in graph.nodes.iterrows():
        g.add_node(int(node), **row.to_dict())
    for row in graph.edges.itertuples(index=False):
        attrs = row._asdict()
        g.add_edge(int(attrs.pop("source")), int(attrs.pop("target")), key=attrs["action"], **attrs)
    return g
