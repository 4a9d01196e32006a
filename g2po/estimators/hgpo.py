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

from g2po.estimators.g2po import EPISODE_PART, MODE_DOC, episode_advantage
from g2po.estimators.gigpo import RETURN_DOCS, step_returns
from g2po.estimators.hgpo_sums import torch_order_sums
from g2po.estimators.registry import register_estimator
from g2po.estimators.spec import Part
from g2po.index import StepIndex
from g2po.segments import EPS, NormMode, check_mode, segment_mean_var

__all__ = ["hgpo", "history_codes", "part_weights", "MAX_HISTORY_LENGTH", "MAX_LOG_WEIGHT",
           "ROUNDING"]

#: Largest ``history_length``: the estimator returns one column per history length, and the
#: original's H is the number of steps of history in the prompt (its scripts use 2 and 4).
MAX_HISTORY_LENGTH = 32
#: A deviation from a group's mean at most ROUNDING · (members) · (largest |return|) is the
#: float mean's rounding (a sum of m terms is off by < (m − 1)·u·Σ|x|, u = eps/2), not a
#: difference of returns: the item is 0.
ROUNDING = 2 * np.finfo(np.float64).eps
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


def _deviations(x: np.ndarray, ids: np.ndarray, n: int, ddof: int,
                zero_within_rounding: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each value's deviation from its segment's mean (m,) and each segment's variance (n,);
    ``x`` in the canonical order (the original's: trajectories by id, each in step order).

    The deviation is the original's: from the mean torch computes in float64 (the members
    summed in :func:`torch_order_sums`'s order, divided by their count), so it is exactly 0
    where the original's is, and an ulp of noise where the original's is (docs/estimators.md).
    A segment whose torch sum would overflow (values near float64's limit) takes the scaled
    mean instead. With ``zero_within_rounding`` a deviation no larger than the float mean's
    rounding error (:data:`ROUNDING` · count · largest |x| of the segment) is 0 instead."""
    mean, var, count = segment_mean_var(x, ids, n, ddof=ddof)
    dev = x - mean[ids]
    top = np.zeros(n)
    np.maximum.at(top, ids, np.abs(x))
    near = np.abs(dev) <= ROUNDING * (count * top)[ids]
    if zero_within_rounding:
        dev[near] = 0.0
        return dev, var
    # Two float means of m values differ by less than m·eps·(largest |x|) whatever the order
    # of their sums, so only a segment with a value that near its mean can have a deviation
    # whose zero test depends on torch's order; the others keep theirs.
    seg = np.zeros(n, dtype=bool)
    seg[ids[near]] = True
    seg &= top > 0  # all zeros: exactly 0 in any order
    if seg.any():
        rows = seg[ids]
        sub, n_sub = np.unique(ids[rows], return_inverse=True)
        with np.errstate(over="ignore", invalid="ignore"):
            torch_mean = torch_order_sums(x[rows], n_sub.ravel(), len(sub)) / count[sub]
        torch_mean = np.where(np.isfinite(torch_mean), torch_mean, mean[sub])
        dev[rows] = x[rows] - torch_mean[n_sub.ravel()]
    return dev, var


def _history_advantage(returns: np.ndarray, code: np.ndarray, order: np.ndarray,
                       mode: str, zero_within_rounding: bool) -> np.ndarray:
    """a_k (n_steps,): each step's return normalised within its history group of one length
    (``code``, −1 for none), with the population std; 0 for a step in no group, alone in its
    group, or whose return is the group's mean (:func:`_deviations`)."""
    rows = order[code[order] >= 0]  # canonical order: the sums do not depend on row order
    out = np.zeros(len(returns))
    if len(rows) == 0:
        return out
    x, ids = returns[rows], code[rows]
    dev, var = _deviations(x, ids, int(ids.max()) + 1, 0, zero_within_rounding)
    out[rows] = dev / (np.sqrt(var)[ids] + EPS) if mode == "mean_std_norm" else dev
    return out


def _episode_item(ix: StepIndex, penalty: float, mode: str,
                  zero_within_rounding: bool) -> np.ndarray:
    """The item of k = 0: G2PO's episode term, with the deviations of :func:`_deviations` in a
    group of several step rows (the score R − p·invalid, unbiased std); a group of one step
    row keeps the term's own rule, s / (1 + eps)."""
    ep = episode_advantage(ix, penalty, mode)
    rows = ix.order
    ids = ix.group[rows]
    dev, var = _deviations((ix.reward - penalty * ix.invalid)[rows], ids, ix.n_groups, 1,
                           zero_within_rounding)
    many = np.bincount(ids, minlength=ix.n_groups)[ids] > 1
    if zero_within_rounding:
        ep[rows[many & (dev == 0.0)]] = 0.0
        return ep
    # where the deviation is exactly 0, or is an ulp the scaled term would not see
    zero, noise = many & (dev == 0.0), many & (dev != 0.0) & (ep[rows] == 0.0)
    ep[rows[zero]] = 0.0
    ep[rows[noise]] = (dev[noise] if mode == "mean_norm"
                       else dev[noise] / (np.sqrt(var)[ids[noise]] + EPS))
    return ep


def _sequential_returns(ix: StepIndex, gamma: float, penalty: float,
                        step_rewards: bool) -> np.ndarray:
    """G' with the original's float64 rounding: G_t = r_t + γ·G_{t+1} summed step by step from
    each trajectory's end (``compute_step_discounted_returns``), then p·invalid subtracted; the
    original's zero test depends on these last bits (GiGPO's G' can differ from them by an
    ulp)."""
    reward = ix.step_reward if step_rewards else np.where(ix.next_row < 0, ix.reward, 0.0)
    out = np.asarray(reward, dtype=np.float64).copy()
    rows = np.argsort(ix.remaining, kind="stable")
    bounds = np.searchsorted(ix.remaining[rows], np.arange(1, int(ix.remaining.max()) + 2))
    for level in range(len(bounds) - 1):  # steps with level + 1 steps after them
        at = rows[bounds[level]:bounds[level + 1]]
        out[at] = out[at] + gamma * out[ix.next_row[at]]
    return out - penalty * ix.invalid


def _check(history_length: int, length_weight_alpha: float) -> None:
    if not 0 <= history_length <= MAX_HISTORY_LENGTH:
        raise ValueError(f"estimator 'hgpo': parameter 'history_length' must be a whole number "
                         f"from 0 to {MAX_HISTORY_LENGTH}, got {history_length}")
    if abs(length_weight_alpha) * math.log(history_length + 2) > MAX_LOG_WEIGHT:
        bound = MAX_LOG_WEIGHT / math.log(history_length + 2)
        raise ValueError(f"estimator 'hgpo': parameter 'length_weight_alpha' must be within "
                         f"±{bound:.4g} for history_length {history_length} (the weights "
                         f"(k+1)^alpha would leave float64's range), got {length_weight_alpha}")


def part_weights(parts: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """Each item's weight in ``adv`` at each step, (n_steps, n_items), labelled as ``parts``
    (``A^EP`` the item of k = 0, ``A^k{k}`` that of k): (k+1)^α over the sum of the step's
    non-zero items' (k+1)^α, + 1e-6, as :func:`hgpo` weighs them."""
    alpha = float(settings.get("length_weight_alpha", 1.0))
    ks = [0 if c == "A^EP" else int(c.removeprefix("A^k")) for c in parts.columns]
    raw = np.array([float(k + 1) ** alpha for k in ks])
    present = parts.to_numpy(dtype=np.float64) != 0.0
    total = (present * raw).sum(axis=1, keepdims=True)
    return pd.DataFrame(np.broadcast_to(raw, parts.shape) / (total + EPS),
                        columns=parts.columns, index=parts.index)


@register_estimator(
    "hgpo",
    title="HGPO",
    summary="Σ_k (k+1)^α·a_k / Σ_k (k+1)^α, a_k GiGPO's return normalised over the steps "
            "whose last k states agree with this one's",
    params={**RETURN_DOCS, "mode": MODE_DOC,
            "history_length": "H, the environment's history length: history groups of 1 … "
                              "H + 1 states",
            "length_weight_alpha": "α of the weights (k+1)^α",
            "base_group": "true: the episode term joins as the item of k = 0",
            "zero_within_rounding": "true: an item within the rounding of its group's mean is "
                                    "0 (the formula's reading); false: exactly 0 only (the "
                                    "original's)"},
    parts=(EPISODE_PART, Part("adv_k{k}", "A^k{k}", "history term", explain="history")),
    weights=part_weights,
    original="verl-agent recipe/hgpo/core_hgpo.py (compute_hgpo_outcome_advantage)",
)
def hgpo(
    ix: StepIndex,
    gamma: float = 0.95,
    penalty: float = 0.1,
    history_length: int = 2,
    length_weight_alpha: float = 1.0,
    base_group: bool = False,
    mode: NormMode = "mean_std_norm",
    step_rewards: bool = False,
    zero_within_rounding: bool = False,
) -> dict[str, np.ndarray]:
    """Columns (n_steps,) float64: ``adv``, ``return`` (GiGPO's penalised step return G'),
    ``adv_k1`` … ``adv_k{H+1}`` (a_k: G' normalised within the step's history group of length
    k; 0 where it has none, is alone in it, or its return is the group's mean) and, with
    ``base_group``, ``adv_ep`` (G2PO's episode term, the item of k = 0).

    ``adv`` = Σ_k (k+1)^α·a_k / (Σ_k (k+1)^α + 1e-6), both sums over the step's items with
    a_k ≠ 0 (k = 0 … H+1 with ``base_group``, else 1 … H+1); 0 when none is left. H =
    ``history_length`` (0 … :data:`MAX_HISTORY_LENGTH`), α = ``length_weight_alpha``; history
    groups use the state-key strategy's nodes (exact state keys by default, as the original).

    An item is 0 (dropped) when its float64 deviation is exactly 0, as the original's, whose
    mean torch sums in its own order: a float mean of equal returns off by an ulp keeps an
    item of noise that takes its weight from the others, as it does in the original. With
    ``zero_within_rounding`` an item within the rounding of its group's mean
    (:data:`ROUNDING`) is 0 instead: the formula's reading, not the original's
    (docs/estimators.md)."""
    check_mode(mode)
    _check(history_length, length_weight_alpha)
    returns = step_returns(ix, gamma, penalty, step_rewards=step_rewards, name="hgpo")
    if not zero_within_rounding and ix.n_steps:
        returns = _sequential_returns(ix, gamma, penalty, step_rewards)
    n_k = history_length + 1
    longest = int(ix.length.max()) if ix.n_steps else 0
    codes = history_codes(ix, min(n_k, longest))
    items: dict[int, np.ndarray] = {}
    if base_group:
        items[0] = _episode_item(ix, penalty, mode, zero_within_rounding)
    for k in range(1, n_k + 1):
        items[k] = (_history_advantage(returns, codes[k - 1], ix.order, mode,
                                       zero_within_rounding)
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
