"""A group's critical transitions: the edges of its state graph with the largest |TD error|.

G2PO's edge-centric advantage standardises each step's TD error over the group, so the few
transitions with the largest |TD error| are where its credit lands hardest (a step into
success from a state valued low, a step that loses from a state valued high). The group
explorer numbers them on the drawing and lists them beside it; a command line printer can
print the same table: one ranking, computed here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.labels import node_names
from g2po.analysis.state_graph import StateGraph

__all__ = ["critical_transitions", "CRITICAL_COUNT", "CRITICAL_COLUMNS"]

#: How many transitions a view ranks by default.
CRITICAL_COUNT = 5
#: The columns of :func:`critical_transitions`, in order.
CRITICAL_COLUMNS = ("rank", "source", "target", "from", "to", "action", "count", "invalid",
                    "td_error")
#: |TD error| at or under this is no signal: such an edge is never ranked.
_ZERO = 1e-12


def critical_transitions(graph: StateGraph, k: int = CRITICAL_COUNT) -> pd.DataFrame:
    """The ``k`` edges of ``graph`` with the largest |TD error|, largest first.

    Ties go to the edge taken by more steps, then to the earlier edge of ``graph.edges``. An
    edge whose TD error is 0 is never ranked, so fewer than ``k`` rows come back when fewer
    edges carry a TD error (none for a group whose values are all equal).

    Parameters
    ----------
    graph : the group's state graph (:func:`g2po.analysis.state_graph.state_graph`).
    k : how many transitions to rank; 0 or less gives an empty table.

    Returns
    -------
    pandas.DataFrame
        One row per ranked edge, indexed by the edge's row label in ``graph.edges`` (what
        a view uses to select it): ``rank`` (int, 1..k), ``source`` and ``target`` (node ids),
        ``from`` and ``to`` (the nodes' names as the drawing shows them: a state's number, a
        terminal's kind, :func:`g2po.analysis.labels.node_names`), ``action``, ``count``
        (steps along the edge), ``invalid`` (of them, invalid actions), ``td_error``, then
        every other column of ``graph.edges`` (the mean advantages ``adv``, ``adv_ep``,
        ``adv_nc``, ``adv_ec`` of its steps when the graph has them).

    Examples
    --------
    >>> import pandas as pd
    >>> from g2po.analysis.state_graph import state_graph
    >>> from g2po.outcomes import OutcomeRule
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...                       "t": [0, 1, 0, 1], "state_key": ["s0", "s1", "s0", "s2"],
    ...                       "action": ["go", "take", "look", "drop"],
    ...                       "episode_reward": [10.0, 10.0, 0.0, 0.0],
    ...                       "is_action_valid": True})
    >>> top = critical_transitions(state_graph(steps, rule=OutcomeRule()))
    >>> top[["rank", "from", "to", "action"]].values.tolist()  # drop: TD error 0, not ranked
    [[1, '0', '1', 'go'], [2, '0', '2', 'look'], [3, '1', 'success', 'take']]
    """
    edges = graph.edges
    empty = edges.iloc[:0]
    if k <= 0 or edges.empty:
        return _arrange(empty, graph, np.zeros(0, dtype=np.int64))
    magnitude = edges["td_error"].abs().to_numpy(dtype=np.float64)
    order = np.lexsort((np.arange(len(edges)), -edges["count"].to_numpy(), -magnitude))
    order = order[magnitude[order] > _ZERO][:k]
    return _arrange(edges.iloc[order], graph, np.arange(1, len(order) + 1))


def _arrange(rows: pd.DataFrame, graph: StateGraph, rank: np.ndarray) -> pd.DataFrame:
    """``rows`` of ``graph.edges`` with ``rank``, ``from`` and ``to`` added, the columns of
    :data:`CRITICAL_COLUMNS` first."""
    names = node_names(graph.nodes)
    out = rows.assign(rank=rank.astype(np.int64),
                      **{"from": names.reindex(rows["source"]).to_numpy(dtype=object),
                         "to": names.reindex(rows["target"]).to_numpy(dtype=object)})
    rest = [c for c in out.columns if c not in CRITICAL_COLUMNS]
    return out[list(CRITICAL_COLUMNS) + rest]
