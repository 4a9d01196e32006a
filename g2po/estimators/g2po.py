"""G2PO: node-centric, edge-centric and episode advantages over the group's state graph.

Follows ``docs/estimators.md`` step by step; the defaults reproduce the authors' public
implementation, ``g2po/core_g2po.py`` in github.com/Nala-YN/G2PO (gamma 0.95, w 1.0,
``mean_std_norm``, penalty 0.1, success reward 10, binary terminals), except that a group of one
step row gets a finite episode term where the original returns NaN. ``success_threshold`` (off by
default) counts a reward of at least it as success instead of equality to the success reward.
"""

from __future__ import annotations

import numpy as np

from g2po.estimators.registry import register_estimator
from g2po.estimators.spec import Part
from g2po.index import StepIndex
from g2po.segments import NormMode, segment_norm
from g2po.values import Terminal, graph_values

__all__ = ["g2po", "episode_advantage", "EPISODE_PART", "MODE_DOC", "PENALTY_DOC",
           "SUCCESS_DOCS"]

MODE_DOC = ("normalisation of every term: mean_std_norm (x − mean) / (std + 1e-6), or "
            "mean_norm x − mean")
PENALTY_DOC = "invalid-action penalty p, subtracted where the environment rejected the action"
#: The success rule's parameters, as every estimator with a success terminal takes them.
SUCCESS_DOCS = {
    "success_reward": "reward of a successful rollout: success is R = success_reward, and the "
                      "success terminal is worth it",
    "success_threshold": "off (None), or T: a rollout with R ≥ T succeeds instead (graded "
                         "rewards)",
}
_PARAMS = {
    "gamma": "discount γ of the step values v = γ^(T − t)·R",
    "mode": MODE_DOC,
    "penalty": PENALTY_DOC,
    **SUCCESS_DOCS,
    "terminal": "binary: the success terminal is worth success_reward, failure 0 (the "
                "authors'); reward: R itself (graded rewards such as WebShop scores)",
}
_ORIGINAL = "Nala-YN/G2PO g2po/core_g2po.py (compute_g2po_outcome_advantage)"
#: The episode term A^EP as a part, wherever an estimator adds it (G2PO, GiGPO, GraphGPO …).
EPISODE_PART = Part("adv_ep", "A^EP", "episode term", 1.0, explain="episode", over="step rows")


def episode_advantage(ix: StepIndex, penalty: float, mode: NormMode) -> np.ndarray:
    """A^EP (n_steps,): R_i - p * invalid, normalised over the group's step rows; a group of one
    step row uses mean 0 and std 1. GiGPO's episode term is the same."""
    score = ix.reward - penalty * ix.invalid
    return segment_norm(score, ix.group, ix.n_groups, mode, singleton="unit", order=ix.order)


@register_estimator(
    "g2po",
    title="G2PO",
    summary="A^EP + w·(A^NC + A^EC): the episode term plus the node- and edge-centric terms "
            "of the group's state graph",
    params={**_PARAMS, "w": "weight w of the node- and edge-centric terms (the paper's sweep "
                            "peaks at 0.8)"},
    parts=(EPISODE_PART,
           Part("adv_nc", "A^NC", "node term", "w", explain="peers",
                of="its next state is worth"),
           Part("adv_ec", "A^EC", "edge term", "w", explain="rank", of="TD error")),
    original=_ORIGINAL,
)
def g2po(
    ix: StepIndex,
    gamma: float = 0.95,
    w: float = 1.0,
    mode: NormMode = "mean_std_norm",
    penalty: float = 0.1,
    success_reward: float = 10.0,
    terminal: Terminal = "binary",
    success_threshold: float | None = None,
) -> dict[str, np.ndarray]:
    """Columns, each (n_steps,) float64: ``adv`` = adv_ep + w * (adv_nc + adv_ec), the three
    components, ``step_value`` v, ``node_value`` V(node), ``node_value_var``, ``next_value`` V',
    ``td_error`` V' - V(node), and ``success`` (bool)."""
    gv = graph_values(ix, gamma, success_reward, terminal, success_threshold)
    adv_nc = segment_norm(gv.next_value - penalty * ix.invalid, ix.node, ix.n_nodes, mode,
                          order=ix.order)
    adv_ec = segment_norm(gv.td_error, ix.group, ix.n_groups, mode, order=ix.order)
    adv_ep = episode_advantage(ix, penalty, mode)
    return {
        "adv": adv_ep + w * (adv_nc + adv_ec),
        "adv_ep": adv_ep,
        "adv_nc": adv_nc,
        "adv_ec": adv_ec,
        "step_value": gv.step_value,
        "node_value": gv.node_value[ix.node],
        "node_value_var": gv.node_var[ix.node],
        "node_visits": gv.node_visits[ix.node],
        "next_value": gv.next_value,
        "td_error": gv.td_error,
        "success": gv.success,
    }


def _component(column: str, doc: str):
    def estimator(
        ix: StepIndex,
        gamma: float = 0.95,
        mode: NormMode = "mean_std_norm",
        penalty: float = 0.1,
        success_reward: float = 10.0,
        terminal: Terminal = "binary",
        success_threshold: float | None = None,
    ) -> dict[str, np.ndarray]:
        cols = g2po(ix, gamma=gamma, w=1.0, mode=mode, penalty=penalty,
                    success_reward=success_reward, terminal=terminal,
                    success_threshold=success_threshold)
        return {"adv": cols[column]}

    estimator.__doc__ = doc
    return estimator


# G2PO's parts as estimators of their own, so a comparison can put each beside its peers.
register_estimator("g2po_nc", title="G2PO's node term", params=_PARAMS, original=_ORIGINAL,
                   summary="A^NC alone: the next state's value against the other visits of "
                           "the step's node")(
    _component("adv_nc", "G2PO's node-centric term A^NC alone."))
register_estimator("g2po_ec", title="G2PO's edge term", params=_PARAMS, original=_ORIGINAL,
                   summary="A^EC alone: the step's TD error normalised over the group")(
    _component("adv_ec", "G2PO's edge-centric term A^EC alone."))
register_estimator("g2po_ep", title="G2PO's episode term", params=_PARAMS, original=_ORIGINAL,
                   summary="A^EP alone: R − p·invalid normalised over the group's step rows",
                   episode="step rows")(
    _component("adv_ep", "G2PO's episode term A^EP alone."))
