"""A group's transitions as a state × state matrix: the compact view of a graph too dense to
draw readably (every pair of states is one cell, so no transition hides behind another).

Rows are the states a transition leaves, columns the states (and terminals) it reaches, both in
the order of their first step depth; a cell holds the count-weighted mean of an edge quantity
(TD error, mean advantage) over the transitions between the two (every action), NaN where there
is none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.labels import node_names
from g2po.analysis.state_graph import StateGraph

__all__ = ["transition_matrix", "MATRIX_VALUES", "DENSE_EDGES", "DENSE_STATES", "is_dense"]

#: The edge quantities a matrix can show: column of ``StateGraph.edges`` → its name.
MATRIX_VALUES = {"td_error": "TD error", "adv": "mean A", "count": "transitions"}
#: Above this many edges or states, a drawing hides transitions behind others and the matrix
#: reads better for "which transition carries the credit" (the drawing still shows paths).
DENSE_EDGES = 150
DENSE_STATES = 40


def is_dense(graph: StateGraph) -> bool:
    """Whether the group is past the density where the matrix reads better than a drawing."""
    return len(graph.edges) > DENSE_EDGES or graph.n_states > DENSE_STATES


def transition_matrix(graph: StateGraph, value: str = "td_error") -> pd.DataFrame:
    """The state × state matrix of ``value`` (a key of :data:`MATRIX_VALUES`).

    Returns
    -------
    pandas.DataFrame
        Indexed by the source nodes' names, columns the target nodes' names (as the drawing
        names them), in the order of first step depth; ``count`` cells sum, the others are the
        count-weighted mean over the edges between the two nodes.

    Raises
    ------
    ValueError
        For a ``value`` the edges do not have.

    Examples
    --------
    >>> import pandas as pd
    >>> from g2po.analysis.state_graph import state_graph
    >>> from g2po.outcomes import OutcomeRule
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b"], "t": [0, 1, 0],
    ...                       "state_key": ["s0", "s1", "s0"], "action": ["go", "x", "go"],
    ...                       "episode_reward": [1.0, 1.0, 0.0], "is_action_valid": True})
    >>> m = transition_matrix(state_graph(steps, rule=OutcomeRule(success_reward=1.0)), "count")
    >>> float(m.loc["0", "1"]), m.columns.tolist()
    (1.0, ['1', 'success', 'failure'])
    """
    if value not in MATRIX_VALUES:
        raise ValueError(f"value must be one of {', '.join(MATRIX_VALUES)}, not {value!r}")
    edges = graph.edges
    if value not in edges.columns:
        raise ValueError(f"the graph's edges have no {value!r} column")
    names = node_names(graph.nodes)
    order = graph.nodes.assign(_terminal=(graph.nodes["kind"] != "state").to_numpy()) \
        .sort_values(["_terminal", "depth"], kind="stable").index
    count = edges["count"].to_numpy(dtype=np.float64)
    frame = pd.DataFrame({"s": edges["source"].to_numpy(), "t": edges["target"].to_numpy(),
                          "w": count,
                          "v": edges[value].to_numpy(dtype=np.float64) * (
                              1.0 if value == "count" else count)})
    summed = frame.groupby(["s", "t"])[["w", "v"]].sum()
    cells = summed["v"] if value == "count" else summed["v"] / summed["w"]
    matrix = cells.unstack("t")
    rows = [n for n in order if n in matrix.index]
    cols = [n for n in order if n in matrix.columns]
    matrix = matrix.reindex(index=rows, columns=cols)
    matrix.index = names.reindex(rows).to_numpy()
    matrix.columns = names.reindex(cols).to_numpy()
    return matrix
