"""The value side of G2PO's state graph, for all groups at once: step and node values, the
value of the next state, TD errors, terminal values and where each transition leads.

These are the maths below the estimators (G2PO, GraphGPO, graph value iteration, GraphHCA call
them); :mod:`g2po.analysis.state_graph` summarises one group's graph for the app and the CLI
from the estimator's own columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from g2po.index import MAX_ABS_REWARD, StepIndex
from g2po.outcomes import success_mask
from g2po.segments import powers, segment_mean_var

__all__ = [
    "Terminal",
    "check_gamma",
    "check_success_reward",
    "check_terminal",
    "transition_targets",
    "GraphValues",
    "graph_values",
    "terminal_values",
]

Terminal = Literal["binary", "reward"]
def check_gamma(gamma: float, *, strict: bool = False, name: str = "gamma") -> float:
    upper_ok = gamma < 1.0 if strict else gamma <= 1.0
    if not (0.0 < gamma and upper_ok):
        bound = "(0, 1)" if strict else "(0, 1]"
        raise ValueError(f"{name} must be in {bound}, got {gamma}")
    return float(gamma)


def check_success_reward(success_reward: float) -> float:
    if not abs(success_reward) <= MAX_ABS_REWARD:
        raise ValueError(f"success_reward must be at most {MAX_ABS_REWARD:g} in magnitude, "
                         f"got {success_reward}")
    return float(success_reward)


def check_terminal(terminal: str) -> str:
    if terminal not in ("binary", "reward"):
        raise ValueError(f"terminal must be 'binary' or 'reward', got {terminal!r}")
    return terminal


def terminal_values(
    ix: StepIndex, success_reward: float, terminal: Terminal,
    success_threshold: float | None,
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
    gamma: float,
    success_reward: float,
    terminal: Terminal,
    success_threshold: float | None,
) -> GraphValues:
    """Steps 1–3 of the G2PO spec and the TD error of step 5 (before normalisation). Every
    argument is the caller's (the estimator's parameters and the run's outcome rule): no
    default here can disagree with the run."""
    check_gamma(gamma)
    step_value = powers(gamma, ix.length - ix.t) * ix.reward
    node_value, node_var, visits = segment_mean_var(step_value, ix.node, ix.n_nodes, ix.order)
    success, term_value = terminal_values(ix, success_reward, terminal, success_threshold)
    has_next = ix.next_row >= 0
    next_value = term_value.copy()
    next_value[has_next] = node_value[ix.node[ix.next_row[has_next]]]
    td_error = next_value - node_value[ix.node]
    return GraphValues(step_value, node_value, node_var, visits, next_value, td_error, success)
