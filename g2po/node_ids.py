"""The node ids of every step, as the group's state graph numbers them.

:func:`g2po.analysis.state_graph.state_graph` numbers one group's state nodes 0 … n−1 in
order of first appearance, then the success and failure terminals n and n+1 (and the truncated
terminal n+2, where trajectories were cut at the step limit). Exports and tables of many groups
at once need the same ids without building each group's graph: :func:`step_node_ids` computes
them for every group at once from the estimator's index.
"""

from __future__ import annotations

import numpy as np

from g2po.index import StepIndex

__all__ = ["step_node_ids"]


def step_node_ids(ix: StepIndex, success: np.ndarray,
                  truncated: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per step, the id of its node and of the next step's node in its group's state graph.

    Parameters
    ----------
    ix : the step table's index (node codes global over groups, in any order).
    success : (n_steps,) bool, the step's trajectory reached the success terminal (the G2PO
        estimator's ``success`` column).
    truncated : (n_steps,) bool or None, the step's trajectory was cut at the step limit
        (:func:`g2po.outcomes.truncated_steps`).

    Returns
    -------
    node, next_node : (n_steps,) int64 each; on a trajectory's last step ``next_node`` is the
        group's success terminal (its number of state nodes), failure terminal (one more) or,
        for a failure cut at the step limit, truncated terminal (two more).
    """
    n_states = np.bincount(ix.node_group, minlength=ix.n_groups)
    first = np.full(ix.n_nodes, ix.n_steps, dtype=np.int64)
    np.minimum.at(first, ix.node, np.arange(ix.n_steps, dtype=np.int64))  # first row of each
    # within a group, nodes are numbered by the row where each first appears
    order = np.lexsort((first, ix.node_group))
    start = np.concatenate([[0], np.cumsum(n_states)[:-1]])
    local = np.empty(ix.n_nodes, dtype=np.int64)
    local[order] = np.arange(ix.n_nodes) - start[ix.node_group[order]]
    node = local[ix.node]
    success = np.asarray(success, dtype=bool)
    offset = np.where(success, 0, 1)
    if truncated is not None:
        offset[np.asarray(truncated, dtype=bool) & ~success] = 2
    terminal = n_states[ix.group] + offset
    has_next = ix.next_row >= 0
    next_node = terminal.astype(np.int64)
    next_node[has_next] = node[ix.next_row[has_next]]
    return node, next_node
