"""GraphHCA (Zhu et al., hindsight credit assignment on the state graph): the change of a
state's log success potential, added to the GRPO advantage with a weight.

Only the paper's abstract is at hand; every choice made here is written down in
docs/estimators.md: the success probability p(s) solves p(s) = gamma * sum_{s'} P(s'|s) p(s')
on the group's empirical graph with p(success) = 1 and p(failure) = 0 (one sparse solve for all
groups, a unique fixed point because every state lies on a path to a terminal), and the
potential Phi(s) = log((p(s) + PHI_FLOOR) / (1 + PHI_FLOOR)) stays finite where p(s) = 0.
"""

from __future__ import annotations

import numpy as np

from g2po.estimators.g2po import MODE_DOC, SUCCESS_DOCS
from g2po.estimators.outcome import grpo
from g2po.estimators.registry import register_estimator
from g2po.estimators.spec import Part
from g2po.estimators.value_iteration import solve_graph_values
from g2po.index import StepIndex
from g2po.segments import NormMode, segment_norm
from g2po.values import check_gamma, terminal_values

__all__ = ["graphhca", "PHI_FLOOR"]

#: Additive smoothing of the success probability before the log (Phi(failure) = log(1e-3/1.001)).
PHI_FLOOR = 1e-3


@register_estimator(
    "graphhca",
    title="GraphHCA",
    summary="A^GRPO + w·norm(Φ(s′) − Φ(s)): GRPO plus the change of the state's log success "
            "potential on the group's graph (only the paper's abstract is at hand)",
    params={"gamma": "discount γ of the success-probability recursion",
            "w": "weight w of the credit term (0 gives GRPO)", "mode": MODE_DOC,
            **SUCCESS_DOCS},
    parts=(Part("adv_traj", "A^traj", "trajectory term", explain="episode", over="rollouts"),
           Part("adv_credit", "A^credit", "credit term", "w", explain="rank",
                of="potential gain")),
)
def graphhca(
    ix: StepIndex,
    gamma: float = 0.95,
    w: float = 1.0,
    mode: NormMode = "mean_std_norm",
    success_reward: float = 10.0,
    success_threshold: float | None = None,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,): ``adv`` = adv_traj + w * adv_credit, ``adv_traj`` (GRPO in ``mode``),
    ``adv_credit`` = norm(credit over the group), ``credit`` = Phi(s') - Phi(s),
    ``success_prob`` p(s), ``potential`` Phi(s). w = 0 gives GRPO exactly."""
    check_gamma(gamma)
    success, _ = terminal_values(ix, success_reward, "binary", success_threshold)
    terminal_p = success.astype(np.float64)
    prob = np.clip(solve_graph_values(ix, gamma, terminal_p), 0.0, 1.0)
    has_next = ix.next_row >= 0
    p_here = prob[ix.node]
    p_next = terminal_p.copy()
    p_next[has_next] = p_here[ix.next_row[has_next]]
    phi_here = np.log((p_here + PHI_FLOOR) / (1.0 + PHI_FLOOR))
    phi_next = np.log((p_next + PHI_FLOOR) / (1.0 + PHI_FLOOR))
    credit = phi_next - phi_here
    adv_credit = segment_norm(credit, ix.group, ix.n_groups, mode, order=ix.order)
    adv_traj = grpo(ix, mode=mode)["adv"]
    return {"adv": adv_traj + w * adv_credit, "adv_traj": adv_traj, "adv_credit": adv_credit,
            "credit": credit, "success_prob": p_here, "potential": phi_here}
