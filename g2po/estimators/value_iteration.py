"""GRAFT's graph values (Yao et al.): value iteration on the group's empirical graph, its one-step
TD advantage (``value_iteration``) and Graph GAE (``graph_gae``, GRAFT's Eq. 9).

V(s) = sum_{s'} P(s'|s) * gamma * V(s'), with P the group's empirical transition frequencies and
the terminal nodes fixed at their terminal values: GRAFT's Bellman estimate on the graph. The
fixed point is solved exactly as one sparse linear system for all groups at once (block diagonal:
groups never touch). Only GRAFT's abstract is at hand; the choices made are in docs/estimators.md.
"""

from __future__ import annotations

import numpy as np

from g2po.estimators.g2po import MODE_DOC, SUCCESS_DOCS
from g2po.estimators.registry import register_estimator
from g2po.index import StepIndex
from g2po.segments import NormMode, discounted_suffix_sum, segment_norm
from g2po.values import Terminal, check_gamma, terminal_values

_PARAMS = {"gamma": "discount γ of the graph values (< 1, so that cycles converge)",
           "mode": MODE_DOC, **SUCCESS_DOCS,
           "terminal": "binary: the success terminal is worth success_reward, failure 0; "
                       "reward: R itself"}

__all__ = ["value_iteration", "graph_gae", "solve_graph_values", "graph_td"]


def solve_graph_values(
    ix: StepIndex, gamma: float, terminal_value: np.ndarray
) -> np.ndarray:
    """V (n_nodes,) float64 solving (I - gamma * P) V = gamma * b, where b[s] is the mean terminal
    value reached directly from s (weighted by how often s ends its trajectory).

    Every state node lies on a trajectory that ends in a terminal, so I - gamma * P is invertible
    for every gamma in (0, 1]. Terms are added in the canonical row order."""
    import scipy.sparse as sp  # deferred with the other scipy imports: app start-up
    from scipy.sparse.linalg import spsolve

    n = ix.n_nodes
    if n == 0:
        return np.zeros(0)
    order = ix.order
    node, nxt = ix.node[order], ix.next_row[order]
    out_count = np.bincount(node, minlength=n).astype(np.float64)
    has_next = nxt >= 0
    src = node[has_next]
    dst = ix.node[nxt[has_next]]
    weights = gamma / out_count[src]
    transition = sp.csr_matrix((weights, (src, dst)), shape=(n, n))  # duplicates add up
    b = np.bincount(node[~has_next], weights=terminal_value[order][~has_next], minlength=n)
    rhs = gamma * b / np.maximum(out_count, 1.0)
    system = (sp.identity(n, format="csr") - transition).tocsc()
    return np.atleast_1d(spsolve(system, rhs))


def graph_td(ix: StepIndex, gamma: float, success_reward: float, terminal: Terminal,
             success_threshold: float | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per step: V(s), V(s') (the terminal value on the last step) and the TD error
    gamma * V(s') - V(s), each (n_steps,) float64."""
    _, term_value = terminal_values(ix, success_reward, terminal, success_threshold)
    values = solve_graph_values(ix, gamma, term_value)
    has_next = ix.next_row >= 0
    next_value = term_value.copy()
    next_value[has_next] = values[ix.node[ix.next_row[has_next]]]
    node_value = values[ix.node]
    return node_value, next_value, gamma * next_value - node_value


@register_estimator(
    "value_iteration",
    title="graph value iteration",
    summary="norm(γ·V(s′) − V(s)) over the group, V solved on the group's empirical graph "
            "(GRAFT; only the abstract is at hand)",
    params=_PARAMS,
)
def value_iteration(
    ix: StepIndex,
    gamma: float = 0.95,
    mode: NormMode = "mean_std_norm",
    success_reward: float = 10.0,
    terminal: Terminal = "binary",
    success_threshold: float | None = None,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,): ``adv`` = norm(gamma * V(s') - V(s) over the group), ``node_value``
    V(s), ``next_value`` V(s') (terminal value on the last step), ``td_error`` the raw
    gamma * V(s') - V(s). gamma must be < 1 so that cycles converge."""
    check_gamma(gamma, strict=True)
    node_value, next_value, td = graph_td(ix, gamma, success_reward, terminal, success_threshold)
    return {
        "adv": segment_norm(td, ix.group, ix.n_groups, mode, order=ix.order),
        "node_value": node_value,
        "next_value": next_value,
        "td_error": td,
    }


@register_estimator(
    "graph_gae",
    title="Graph GAE",
    summary="norm(Σ_l (γλ)^l·δ_{t+l}) over the group, δ the graph TD error (GRAFT's Eq. 9; "
            "only the abstract is at hand)",
    params={**_PARAMS, "lam": "λ of the GAE sum (0: the one-step TD error)"},
)
def graph_gae(
    ix: StepIndex,
    gamma: float = 0.95,
    lam: float = 0.95,
    mode: NormMode = "mean_std_norm",
    success_reward: float = 10.0,
    terminal: Terminal = "binary",
    success_threshold: float | None = None,
) -> dict[str, np.ndarray]:
    """GRAFT's Graph GAE. Columns (n_steps,): ``adv`` = norm(gae over the group), ``gae`` =
    sum_l (gamma*lam)^l * delta_{t+l} along the trajectory (stopping at its end), ``td_error``
    delta = gamma * V(s') - V(s) with V from :func:`value_iteration`, ``node_value``,
    ``next_value``. lam = 0 is the one-step TD advantage of ``value_iteration``."""
    check_gamma(gamma, strict=True)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    node_value, next_value, td = graph_td(ix, gamma, success_reward, terminal, success_threshold)
    gae = discounted_suffix_sum(td, ix.order, ix.remaining, gamma * lam)
    return {
        "adv": segment_norm(gae, ix.group, ix.n_groups, mode, order=ix.order),
        "gae": gae,
        "td_error": td,
        "node_value": node_value,
        "next_value": next_value,
    }
