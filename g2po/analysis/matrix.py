"""A group's transitions as a state × state matrix: the compact view of a graph too dense to
draw readably (every pair of states is one cell, so no transition hides behind another).

Rows are the group's states, columns the same states in the same order then its terminals, so
the diagonal holds the self-loops, cells right of it lead deeper and cells left of it lead back;
states come in the order of their first step depth (then node id), as the drawing's columns do.
A cell holds the count-weighted mean of an edge quantity (TD error, mean advantage) over the
transitions between the two (every action), NaN where there is none. Rows and columns are named
as the drawing names the nodes (a state's number, a terminal's kind): names made of digits, so a
chart must take them as categories, never as numbers.
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
        (n_states, n_states + n_terminals): indexed by every state's name, columns every
        state's name in the same order then the terminals' (as the drawing names them, all
        ``str``); ``count`` cells sum, the others are the count-weighted mean over the edges
        between the two nodes; NaN where no transition joins them.

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
    >>> float(m.loc["0", "1"]), m.index.tolist(), m.columns.tolist()
    (1.0, ['0', '1'], ['0', '1', 'success', 'failure'])
    """
    if value not in MATRIX_VALUES:
        raise ValueError(f"value must be one of {', '.join(MATRIX_VALUES)}, not {value!r}")
    edges = graph.edges
    if value not in edges.columns:
        raise ValueError(f"the graph's edges have no {value!r} column")
    nodes = graph.nodes
    names = node_names(nodes)
    terminal = (nodes["kind"] != "state").to_numpy()
    order = nodes.assign(_terminal=terminal).sort_values(["_terminal", "depth"],
                                                          kind="stable").index
    rows = [n for n in order if nodes.loc[n, "kind"] == "state"]
    cols = rows + [n for n in order if nodes.loc[n, "kind"] != "state"]
    count = edges["count"].to_numpy(dtype=np.float64)
    frame = pd.DataFrame({"s": edges["source"].to_numpy(), "t": edges["target"].to_numpy(),
                          "w": count,
                          "v": edges[value].to_numpy(dtype=np.float64) * (
                              1.0 if value == "count" else count)})
    summed = frame.groupby(["s", "t"])[["w", "v"]].sum()
    cells = summed["v"] if value == "count" else summed["v"] / summed["w"]
    matrix = cells.unstack("t").reindex(index=rows, columns=cols).astype(np.float64)
    matrix.index = pd.Index(names.reindex(rows).to_numpy(dtype=str), dtype=object)
    matrix.columns = pd.Index(names.reindex(cols).to_numpy(dtype=str), dtype=object)
    return matrix
