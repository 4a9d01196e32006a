"""HGPO (He et al., ICLR 2026, "Hierarchy-of-Groups Policy Optimization for Long-Horizon Agentic
Tasks"): GiGPO's step returns normalised within *history groups*, the steps whose last k states
agree, for k = 1 … H + 1, and the groups' advantages combined with weights (k + 1)^α.

Original: verl-agent ``recipe/hgpo/core_hgpo.py`` (``compute_hgpo_outcome_advantage``,
``hgpo_advantage_estimate``), called by ``recipe/hgpo/hgpo_ray_trainer.py``, which feeds it the
discounted environment rewards (``compute_step_discounted_returns``) after subtracting the
invalid-action penalty from each step's return (``apply_invalid_action_penalty``), and takes
H from the environment's ``history_length`` (the steps of history in the prompt).
``docs/estimators.md`` lists every choice made here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from g2po.estimators.g2po import episode_advantage
from g2po.estimators.gigpo import step_returns
from g2po.estimators.registry import register_estimator
from g2po.index import StepIndex
from g2po.segments import EPS, NormMode, check_mode, segment_mean_var

__all__ = ["hgpo", "history_codes", "MAX_HISTORY_LENGTH", "MAX_LOG_WEIGHT"]

#: Largest ``history_length``: the estimator returns one column per history length, and the
#: original's H is the number of steps of history in the prompt (its scripts use 2 and 4).
MAX_HISTORY_LENGTH = 32
#: Bound on |α|·ln(H + 2), so that every weight (k + 1)^α stays within e^±200: larger weights
#: would overflow (or vanish, silently zeroing every advantage) in float64.
MAX_LOG_WEIGHT = 200.0


def history_codes(ix: StepIndex, k_max: int) -> list[np.ndarray]:
    """For k = 1 … k_max, the history group of every step: (n_steps,) int64 codes, equal for
    two steps exactly when their last k state nodes (steps t − k + 1 … t of their own
    trajectories) are equal, and −1 where the step has fewer than k steps behind it (t < k − 1).
    Nodes never merge across groups, so neither do history groups. Stops early once no step
    has a history of the next length."""
    n = ix.n_steps
    prev = np.full(n, -1, dtype=np.int64)
    has_next = ix.next_row >= 0
    prev[ix.next_row[has_next]] = np.flatnonzero(has_next)
    code = ix.node.astype(np.int64, copy=True)
    out = [code]
    for _ in range(2, k_max + 1):
        rows = np.flatnonzero(prev >= 0)
        parent = code[prev[rows]]
        rows, parent = rows[parent >= 0], parent[parent >= 0]
        if len(rows) == 0:
            break
        # (history of length k-1 ending at the previous step, this step's node)
        pair = parent * np.int64(max(ix.n_nodes, 1)) + ix.node[rows]
        codes, _ = pd.factorize(pair, sort=False)
        code = np.full(n, -1, dtype=np.int64)
        code[rows] = codes
        out.append(code)
    return out


def _equal_segments(x: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """(n,) bool: the segment's values are all equal (an empty segment counts as equal)."""
    lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(lo, ids, x)
    np.maximum.at(hi, ids, x)
    return lo >= hi


def _history_advantage(returns: np.ndarray, code: np.ndarray, order: np.ndarray,
                       mode: str) -> np.ndarray:
    """a_k (n_steps,): each step's return normalised within its history group of one length
    (``code``, −1 for none), with the population std; 0 for a step in no group, alone in its
    group, or in a group whose returns are all equal."""
    rows = order[code[order] >= 0]  # canonical order: the sums do not depend on row order
    out = np.zeros(len(returns))
    if len(rows) == 0:
        return out
    x, ids = returns[rows], code[rows]
    n = int(ids.max()) + 1
    mean, var, _ = segment_mean_var(x, ids, n, ddof=0)
    dev = x - mean[ids]
    # Equal returns deviate by exactly 0 (their computed mean can be off by an ulp, which the
    # original's zero test would then count as an item; see docs/estimators.md).
    dev[_equal_segments(x, ids, n)[ids]] = 0.0
    out[rows] = dev / (np.sqrt(var)[ids] + EPS) if mode == "mean_std_norm" else dev
    return out


def _check(history_length: int, length_weight_alpha: float) -> None:
    if not 0 <= history_length <= MAX_HISTORY_LENGTH:
        raise ValueError(f"estimator 'hgpo': parameter 'history_length' must be a whole number "
                         f"from 0 to {MAX_HISTORY_LENGTH}, got {history_length}")
    if abs(length_weight_alpha) * math.log(history_length + 2) > MAX_LOG_WEIGHT:
        bound = MAX_LOG_WEIGHT / math.log(history_length + 2)
        raise ValueError(f"estimator 'hgpo': parameter 'length_weight_alpha' must be within "
                         f"±{bound:.4g} for history_length {history_length} (the weights "
                         f"(k+1)^alpha would leave float64's range), got {length_weight_alpha}")


@register_estimator("hgpo")
def hgpo(
    ix: StepIndex,
    gamma: float = 0.95,
    penalty: float = 0.1,
    history_length: int = 2,
    length_weight_alpha: float = 1.0,
    base_group: bool = False,
    mode: NormMode = "mean_std_norm",
    step_rewards: bool = False,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,) float64: ``adv``, ``return`` (GiGPO's penalised step return G'),
    ``adv_k1`` … ``adv_k{H+1}`` (a_k: G' normalised within the step's history group of length
    k; 0 where it has none, is alone in it, or the group's returns are all equal) and, with
    ``base_group``, ``adv_ep`` (G2PO's episode term, the item of k = 0).

    ``adv`` = Σ_k (k+1)^α·a_k / (Σ_k (k+1)^α + 1e-6), both sums over the step's items with
    a_k ≠ 0 (k = 0 … H+1 with ``base_group``, else 1 … H+1); 0 when none is left. H =
    ``history_length`` (0 … :data:`MAX_HISTORY_LENGTH`), α = ``length_weight_alpha``; history
    groups use the state-key strategy's nodes (exact state keys by default, as the original)."""
    check_mode(mode)
    _check(history_length, length_weight_alpha)
    returns = step_returns(ix, gamma, penalty, step_rewards=step_rewards, name="hgpo")
    n_k = history_length + 1
    longest = int(ix.length.max()) if ix.n_steps else 0
    codes = history_codes(ix, min(n_k, longest))
    items: dict[int, np.ndarray] = {}
    if base_group:
        ep = episode_advantage(ix, penalty, mode)
        # a group's equal scores give exactly 0 (dropped), as every equal set above; a group of
        # one step row keeps the episode term's own rule (s / (1 + eps))
        score = ix.reward - penalty * ix.invalid
        count = np.bincount(ix.group, minlength=ix.n_groups)
        equal = _equal_segments(score, ix.group, ix.n_groups) & (count > 1)
        items[0] = np.where(equal[ix.group], 0.0, ep)
    for k in range(1, n_k + 1):
        items[k] = (_history_advantage(returns, codes[k - 1], ix.order, mode)
                    if k <= len(codes) else np.zeros(ix.n_steps))
    weighted = np.zeros(ix.n_steps)
    total = np.zeros(ix.n_steps)
    for k, a in items.items():
        weight = float(k + 1) ** length_weight_alpha
        weighted += weight * a
        total += np.where(a != 0.0, weight, 0.0)
    out = {"adv": weighted / (total + EPS), "return": returns}
    if base_group:
        out["adv_ep"] = items[0]
    out.update({f"adv_k{k}": items[k] for k in range(1, n_k + 1)})
    return out
