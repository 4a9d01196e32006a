"""One group's state graph as node and edge tables, for the app, the CLI and the analyses.

:func:`state_graph` builds them from the very columns the G2PO estimator produced, so the
picture and the loss never disagree.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from g2po.analysis.labels import distinguishing_labels
from g2po.estimators import estimate
from g2po.outcomes import OutcomeRule, truncated_steps
from g2po.params import DEFAULT_PARAMS, G2POParams

if TYPE_CHECKING:
    import networkx as nx

    from g2po.index import StepIndex

__all__ = ["StateGraph", "G2POEstimate", "state_graph", "to_networkx", "SUCCESS", "FAILURE",
           "TRUNCATED"]

SUCCESS, FAILURE, TRUNCATED = "success", "failure", "truncated"


@dataclass(frozen=True)
class G2POEstimate:
    """The G2PO estimator's run a graph was built from: its ``columns`` (each (n_steps,), in
    the steps' row order), the step ``index``, and the ``params`` and ``rule`` it ran under."""

    columns: dict[str, np.ndarray]
    index: StepIndex
    params: G2POParams
    rule: OutcomeRule


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
    estimated : the G2PO run behind the numbers (:class:`G2POEstimate`), so that an analysis
        of the same group under the same parameters and rule reads it instead of running the
        estimator again (:meth:`estimate_under`); None for a graph made otherwise.
    """

    nodes: pd.DataFrame
    edges: pd.DataFrame
    steps: pd.DataFrame
    estimated: G2POEstimate | None = field(default=None, repr=False, compare=False)

    @property
    def n_states(self) -> int:
        return int((self.nodes["kind"] == "state").sum())

    def estimate_under(self, params: G2POParams, rule: OutcomeRule
                       ) -> tuple[dict[str, np.ndarray], StepIndex] | None:
        """(columns, index) of the G2PO run behind the graph when it ran under ``params`` and
        ``rule``, else None (the caller runs the estimator itself)."""
        run = self.estimated
        if run is None or run.params != params or run.rule != rule:
            return None
        return run.columns, run.index


def state_graph(steps: pd.DataFrame, *, rule: OutcomeRule,
                params: G2POParams = DEFAULT_PARAMS,
                estimator_columns: bool = True) -> StateGraph:
    """Build the state graph of the single group in ``steps``.

    ``steps`` holds the rows of exactly one group (one ``group_id``, one ``train_step``);
    ``params`` (γ, w, mode, penalty, state key) go to the G2PO estimator with the run's outcome
    ``rule`` (success reward, threshold, terminal). Columns already computed by the caller are
    recomputed, so the graph always matches the parameters given. The rule's ``truncate_at``:
    a failed trajectory of that many steps or more, whose last step has no ``done`` flag, ends
    at the ``truncated`` terminal; only the drawing changes, the estimator values it as failure
    all the same.

    Raises
    ------
    ValueError
        If ``steps`` holds more or fewer than one group.

    Examples
    --------
    >>> import pandas as pd
    >>> from g2po.outcomes import OutcomeRule
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b"], "t": [0, 1, 0],
    ...     "state_key": ["s0", "s1", "s0"], "action": ["go", "take", "look"],
    ...     "episode_reward": [10.0, 10.0, 0.0], "is_action_valid": True})
    >>> g = state_graph(steps, rule=OutcomeRule())
    >>> list(g.nodes["kind"])
    ['state', 'state', 'success', 'failure']
    >>> int(g.edges["count"].sum())
    3
    """
    group_cols = [c for c in ("train_step", "group_id") if c in steps.columns]
    n_groups = len(steps.drop_duplicates(group_cols)) if len(steps) else 0
    if n_groups != 1:
        raise ValueError(
            f"state_graph needs the rows of exactly one group ({' / '.join(group_cols)}), "
            f"got {n_groups}"
        )
    columns, ix = estimate(steps, "g2po", **params.g2po_kwargs(rule))
    table = steps.assign(**columns)
    local, uniques = pd.factorize(ix.node, sort=False)
    n_states = len(uniques)
    success_id, failure_id = n_states, n_states + 1
    # a trajectory cut at the step limit ends in its own terminal (valued as failure by the
    # estimator, whose numbers are untouched: only where it is drawn changes)
    truncated = truncated_steps(table, ix, table["success"].to_numpy(), rule.truncate_at)
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
    terminals = [(success_id, SUCCESS), (failure_id, FAILURE)]
    if has_truncated:
        terminals.append((truncated_id, TRUNCATED))
    terminal_rows = _terminal_nodes(table.loc[ix.next_row < 0], terminals, max_t)
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
    return StateGraph(nodes=nodes, edges=edges, steps=table,
                      estimated=G2POEstimate(columns, ix, params, rule))


def _terminal_nodes(ends: pd.DataFrame, terminals: list[tuple[int, str]],
                    depth: int) -> list[dict]:
    """The terminal nodes' rows: each valued by the mean next value of the last steps
    (``ends``) that lead to it, at one past the deepest step."""
    rows = []
    for node_id, kind in terminals:
        hit = ends[ends["next_node"] == node_id]
        rows.append({
            "kind": kind, "state_key": f"<{kind}>", "canonical_key": f"<{kind}>",
            "visits": len(hit),
            "value": float(hit["next_value"].mean()) if len(hit) else 0.0,
            "value_var": float(hit["next_value"].var(ddof=0)) if len(hit) else 0.0,
            "is_start": False, "depth": depth, "label": kind, "observation": kind})
    return rows


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
