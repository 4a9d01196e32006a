"""GraphGPO (Cheng et al. 2026, "Beyond Trajectory-Level Attribution"): step returns from the
shortest-path distance to success on the group's state graph, normalised in anchor-state groups.

Original: verl-agent ``recipe/GraphGPO/core_graph.py`` (``compute_graph_path_returns``,
``compute_graphgpo_outcome_advantage``), called by ``recipe/GraphGPO/graphgpo_ray_trainer.py``,
which subtracts the invalid-action penalty from the returns afterwards. The distances of all
groups come from one multi-source search on the block-diagonal graph of every group.
"""

from __future__ import annotations

import numpy as np

from g2po.estimators.g2po import (
    MODE_DOC,
    PENALTY_DOC,
    SUCCESS_DOCS,
    episode_advantage,
)
from g2po.estimators.registry import register_estimator
from g2po.estimators.spec import Part
from g2po.index import StepIndex
from g2po.segments import NormMode, powers, segment_norm
from g2po.values import check_gamma, terminal_values, transition_targets

__all__ = ["graphgpo", "distance_to_success"]


def distance_to_success(ix: StepIndex, success: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shortest-path distance (edge weight 1) from every vertex to its group's ``success``
    vertex; a vertex that cannot reach it gets (the group's largest finite distance + 1), as the
    original does. Returns (distance (n_vertices,) float64, target (n_steps,) of each step)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    target, vertex_group = transition_targets(ix, success)
    n_vertices = len(vertex_group)
    if ix.n_steps == 0:
        return np.zeros(n_vertices), target
    # Reversed edges (next state -> state): a search from the success vertices gives s -> success.
    reverse = sp.csr_matrix((np.ones(ix.n_steps), (target, ix.node)),
                            shape=(n_vertices, n_vertices))
    sources = ix.n_nodes + np.arange(ix.n_groups)
    dist = np.atleast_1d(dijkstra(reverse, directed=True, indices=sources, unweighted=True,
                                  min_only=True))
    reached = np.isfinite(dist)
    far = np.zeros(ix.n_groups)
    np.maximum.at(far, vertex_group[reached], dist[reached])
    dist[~reached] = far[vertex_group[~reached]] + 1.0
    return dist, target


@register_estimator(
    "graphgpo",
    title="GraphGPO",
    summary="ω_E·A^EP + ω_S·A^S: the step return 10·γ^d(s′), d the graph distance to "
            "success, normalised over the steps of the same anchor state",
    params={"gamma": "discount γ per graph-distance step (GraphGPO's config: 0.1 ALFWorld, "
                     "0.2 WebShop)",
            "omega_e": "weight ω_E of the episode term", "omega_s": "weight ω_S of the step term",
            "penalty": PENALTY_DOC, "mode": MODE_DOC,
            "normalize_distance": "true: exponent d(s′) − d(s) + 1 instead of d(s′)",
            **SUCCESS_DOCS},
    parts=(Part("adv_ep", "A^EP", "episode term", "omega_e", explain="episode",
                over="step rows"),
           Part("adv_step", "A^S", "step term", "omega_s", explain="peers",
                of="its distance-discounted return is")),
    original="verl-agent recipe/GraphGPO/core_graph.py (compute_graphgpo_outcome_advantage)",
)
def graphgpo(
    ix: StepIndex,
    gamma: float = 0.1,
    omega_e: float = 1.0,
    omega_s: float = 1.0,
    penalty: float = 0.1,
    mode: NormMode = "mean_std_norm",
    normalize_distance: bool = False,
    success_reward: float = 10.0,
    success_threshold: float | None = None,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,): ``adv`` = omega_e * adv_ep + omega_s * adv_step, ``adv_ep`` (G2PO's
    episode term), ``adv_step`` (norm of the penalised return over the exact anchor-state group,
    singletons 0), ``return`` g' = success_reward * gamma^d(s') - penalty * invalid (with
    ``normalize_distance`` the exponent is d(s') - d(s) + 1), ``distance`` d(s').

    The last step of a successful trajectory leads to ``success`` (d = 0), of any other to
    ``failure``. A state-key strategy merges states in the graph only; the anchor groups stay
    the exact state keys, as in the original."""
    check_gamma(gamma)
    success, _ = terminal_values(ix, success_reward, "binary", success_threshold)
    dist, target = distance_to_success(ix, success)
    d_next = dist[target]
    exponent = d_next - dist[ix.node] + 1.0 if normalize_distance else d_next
    # d(s) <= d(s') + 1 along every edge (and both are far + 1 where s cannot reach success), so
    # the exponent is a non-negative whole number in both readings.
    returns = success_reward * powers(gamma, exponent.astype(np.int64)) - penalty * ix.invalid
    n_exact = int(ix.exact_node.max()) + 1 if ix.n_steps else 0
    adv_step = segment_norm(returns, ix.exact_node, n_exact, mode, order=ix.order)
    adv_ep = episode_advantage(ix, penalty, mode)
    return {"adv": omega_e * adv_ep + omega_s * adv_step, "adv_ep": adv_ep,
            "adv_step": adv_step, "return": returns, "distance": d_next}
