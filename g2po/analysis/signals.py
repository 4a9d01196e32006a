"""The signals every check reads, for every group of a step table at once.

:func:`group_signals` runs G2PO and GRPO once over all groups (vectorised: no loop over
groups) and derives, per step, trajectory, state node and group, what the checks of
:mod:`g2po.analysis.checks` decide from: outcomes and cuts, the credit a merge moves, split
(state, action) pairs, arrivals and hubs, paths that part and meet again, starts, collapse.
The groups table (:mod:`g2po.analysis.triage`) and the group explorer's alarms
(:mod:`g2po.analysis.alarms`) both read these, so they agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.words import same_place
from g2po.estimators import estimate, get_estimator
from g2po.index import StepIndex
from g2po.outcomes import OutcomeRule, truncated_steps
from g2po.params import DEFAULT_PARAMS, G2POParams

__all__ = ["GroupSignals", "group_signals", "per_group_count", "segment_median",
           "ZERO_ADV", "VALUE_STD_SHARE", "HUB_MIN_SOURCES", "HUB_MEDIAN_FACTOR",
           "HUB_INVALID_SOURCES", "HUB_INVALID_SHARE", "HUB_INVALID_P"]

#: An advantage of at most this magnitude counts as ~0 (normalised advantages are unit-sized;
#: a group with no spread gives exact zeros up to rounding).
ZERO_ADV = 1e-6
#: A node's value spread (std of its merged step values) counts as high at this share of the
#: success reward.
VALUE_STD_SHARE = 0.25
#: A hub by its sources: reached from at least this many different states, and from at least
#: :data:`HUB_MEDIAN_FACTOR` times as many as the group's median state with arrivals, *and*
#: the same action from it leads on to different states (what follows depends on where the
#: agent came from; not where the next states are one place with a detail changed, which is
#: hidden world state). A well-connected real state (ALFWorld's "go to drawer 1" reaches the
#: drawer from anywhere; a gridworld cell) is no hub.
HUB_MIN_SOURCES = 5
HUB_MEDIAN_FACTOR = 3.0
#: A hub by invalid actions: reached from at least this many different states, at least
#: :data:`HUB_INVALID_SHARE` of its arrivals through an invalid action, and more of them than
#: chance explains: were arrivals invalid at the group's rate, that many or more would occur
#: with a probability below :data:`HUB_INVALID_P` (binomial tail), so random invalid actions
#: never make a hub.
HUB_INVALID_SOURCES = 3
HUB_INVALID_SHARE = 0.5
HUB_INVALID_P = 1e-3
_SIGN_TOL = 1e-9


@dataclass(frozen=True)
class GroupSignals:
    """What the checks are decided from, for every group of a step table at once.

    ix : the step table's index (groups, trajectories, nodes).
    g2po : the G2PO estimator's columns, each (n_steps,).
    grpo : (n_steps,) GRPO's advantage.
    opposite : (n_steps,) bool, G2PO's and GRPO's advantages have opposite signs.
    success : (n_traj,) bool, a success by the run's outcome rule.
    truncated : (n_traj,) bool, cut at the step limit (the rule's ``done`` / ``truncate_at``).
    traj_length : (n_traj,) int64, steps of each trajectory.
    start_node : (n_traj,) int64, the node of each trajectory's first step.
    credit_moved : (n_nodes,) Σ |v − V(k)| over the node's steps: how far merging moved each
        step's own discounted outcome v to the node's value V(k) (≈ value spread × visits).
    mixed : (n_nodes,) bool, one action from the node led to both success and failure
        (information: a stochastic policy does that everywhere).
    wide : (n_nodes,) bool, visited twice or more with a value std ≥ :data:`VALUE_STD_SHARE`
        of the success reward (information, never an alarm).
    split : (n_nodes,) bool, one action from the node led on to two or more next states.
    hidden : (n_nodes,) bool, a split node where every split pair stays split among steps that
        arrived the same way (the same previous state and action): what tells the next states
        apart is older than the previous step (hidden world state) or chance, not where the
        agent came from.
    splits : one row per (node, action, next node) of the split pairs: ``group``, ``node``,
        ``row`` (a step row taking the pair), ``next_row`` (a step row at the next node),
        ``count``; the most-taken next state first within a pair, pairs by steps taken.
    collapsed : (n_groups,) bool, two or more rollouts, every one the same (state, action)
        sequence.
    in_sources : (n_nodes,) int64, distinct other nodes with a transition into the node.
    invalid_arrival_share : (n_nodes,) share of those transitions (from other nodes) taken by
        an invalid action (0 without arrivals).
    hub : (n_nodes,) bool, see :data:`HUB_MIN_SOURCES` and :data:`HUB_INVALID_SOURCES`.
    rejoin : (n_nodes,) bool, reached two or more ways (from two states, from one and as a
        start, or from itself): two paths meet here.
    branch : (n_nodes,) bool, left towards two or more next states: paths part here.
    zero : estimator name → (n_groups,) bool, every advantage of the group is ~0.
    action : (n_steps,) int64, each step's action code (one per distinct action of the
        table).
    stochastic : the environment was declared random (no aliasing alarm).
    """

    ix: StepIndex
    g2po: dict[str, np.ndarray]
    grpo: np.ndarray
    opposite: np.ndarray
    success: np.ndarray
    truncated: np.ndarray
    traj_length: np.ndarray
    start_node: np.ndarray
    credit_moved: np.ndarray
    mixed: np.ndarray
    wide: np.ndarray
    split: np.ndarray
    hidden: np.ndarray
    splits: pd.DataFrame
    collapsed: np.ndarray
    in_sources: np.ndarray
    invalid_arrival_share: np.ndarray
    hub: np.ndarray
    rejoin: np.ndarray
    branch: np.ndarray
    zero: dict[str, np.ndarray]
    action: np.ndarray
    stochastic: bool = False

    @property
    def aliased(self) -> np.ndarray:
        """(n_nodes,) bool: the nodes of the ``aliased`` check (none if stochastic)."""
        return np.zeros_like(self.split) if self.stochastic else self.split

    def by_node(self, column: str) -> np.ndarray:
        """(n_nodes,) a G2PO column that is one value per node (``node_value``,
        ``node_value_var``), by node code."""
        out = np.zeros(self.ix.n_nodes)
        out[self.ix.node] = self.g2po[column]
        return out

    def per_group(self, mask: np.ndarray, of: str) -> np.ndarray:
        """(n_groups,) float64: how many of the ``of`` (``"steps"``, ``"traj"``, ``"nodes"``)
        ``mask`` holds, per group."""
        seg = {"steps": self.ix.group, "traj": self.ix.traj_group,
               "nodes": self.ix.node_group}[of]
        return per_group_count(seg, mask, self.ix.n_groups)


def per_group_count(seg: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    """How many rows of each of ``n`` segments ``mask`` holds, (n,) float64."""
    return np.bincount(seg, weights=np.asarray(mask, dtype=np.float64), minlength=n)


def segment_median(values: np.ndarray, seg: np.ndarray, n: int) -> np.ndarray:
    """Median of ``values`` within each of ``n`` segments (NaN for an empty one)."""
    out = np.full(n, np.nan)
    if len(values) == 0:
        return out
    order = np.lexsort((values, seg))
    counts = np.bincount(seg, minlength=n)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has = counts > 0
    ordered = values[order].astype(np.float64)
    lo = start[has] + (counts[has] - 1) // 2
    hi = start[has] + counts[has] // 2
    out[has] = (ordered[lo] + ordered[hi]) / 2.0
    return out


def group_signals(
    steps: pd.DataFrame,
    *,
    rule: OutcomeRule,
    params: G2POParams = DEFAULT_PARAMS,
    truncated_rows: np.ndarray | None = None,
    stochastic: bool = False,
    text: Callable[[str, np.ndarray], list[str]] | None = None,
    estimated: tuple[dict[str, np.ndarray], StepIndex] | None = None,
) -> GroupSignals:
    """Every check's numbers for every group of ``steps`` (one G2PO and one GRPO call).

    ``params`` and the run's ``rule`` (success reward, threshold, terminal and truncation)
    are passed whole; ``truncated_rows`` (n_steps,) bool marks steps of trajectories known to
    be cut (a graph's ``truncated`` column), in addition to the rule's. ``stochastic``
    declares the environment random: the aliasing check (a (key, action) leading to different
    next states) is then not raised. ``text`` ((column, rows) → the rows' text) lets a split
    be read: a hub by its sources whose every split leads on to one place with a detail
    changed (a drawer open or closed) is hidden world state, not a hub. ``estimated``:
    G2PO's (columns, index) of these very rows under ``params`` and ``rule`` where the caller
    has them (a graph's, :meth:`g2po.analysis.state_graph.StateGraph.estimate_under`): G2PO
    is then not run again.
    """
    cols, ix = estimated if estimated is not None else \
        estimate(steps, "g2po", **params.g2po_kwargs(rule))
    grpo = get_estimator("grpo")(ix, mode=params.mode)["adv"]
    n, G = ix.n_steps, ix.n_groups
    action = pd.factorize(steps["action"], sort=False)[0].astype(np.int64)
    success = rule.success(ix.traj_reward)
    step_success = np.asarray(cols["success"], dtype=bool)

    cut_rows = truncated_steps(steps, ix, step_success, rule.truncate_at)
    if truncated_rows is not None:
        cut_rows = cut_rows | truncated_rows
    truncated = per_group_count(ix.traj, cut_rows, ix.n_traj) > 0
    starts = np.flatnonzero(ix.t == 0)
    start_node = np.zeros(ix.n_traj, dtype=np.int64)
    start_node[ix.traj[starts]] = ix.node[starts]

    node, n_nodes = ix.node, ix.n_nodes
    visits = np.bincount(node, minlength=n_nodes)
    credit_moved = np.bincount(node, weights=np.abs(cols["step_value"] - cols["node_value"]),
                               minlength=n_nodes)
    base = np.int64(action.max() + 1 if n else 1)
    pair_code, pair_ids = pd.factorize(node * base + action, sort=False)
    pair_code = pair_code.astype(np.int64)
    pair_hits = np.bincount(pair_code, weights=step_success.astype(np.float64))
    pair_n = np.bincount(pair_code)
    mixed = np.zeros(n_nodes, dtype=bool)
    mixed[np.asarray(pair_ids)[(pair_hits > 0) & (pair_hits < pair_n)] // base] = True
    node_var = np.zeros(n_nodes)
    node_var[node] = cols["node_value_var"]
    scale = max(abs(rule.success_reward), 1e-12)
    wide = (np.sqrt(node_var) >= VALUE_STD_SHARE * scale) & (visits >= 2)

    split, hidden, splits = _splits(ix, pair_code, len(pair_n))
    in_sources, invalid_share, by_sources, by_invalid, rejoin, branch = \
        _arrivals(ix, split, starts)
    if text is not None and by_sources.any():  # the split a detail of one place: no hub
        alike = _alike_splits(splits, by_sources & ~by_invalid, text)
        by_sources &= ~alike
        hidden |= alike
    hub = by_sources | by_invalid
    zero = {}
    n_steps = np.bincount(ix.group, minlength=G)
    for name, adv in (("g2po", cols["adv"]), ("grpo", grpo)):
        zero[name] = (per_group_count(ix.group, np.abs(adv) > ZERO_ADV, G) == 0) & (n_steps > 0)
    adv = cols["adv"]
    opposite = ((adv > _SIGN_TOL) & (grpo < -_SIGN_TOL)) | \
        ((adv < -_SIGN_TOL) & (grpo > _SIGN_TOL))
    return GroupSignals(
        ix=ix, g2po=cols, grpo=grpo, opposite=opposite, success=success,
        truncated=truncated, traj_length=np.bincount(ix.traj, minlength=ix.n_traj),
        start_node=start_node, credit_moved=credit_moved, mixed=mixed, wide=wide,
        split=split, hidden=hidden, splits=splits, collapsed=_collapsed(ix, pair_code),
        in_sources=in_sources, invalid_arrival_share=invalid_share, hub=hub, rejoin=rejoin,
        branch=branch, zero=zero, action=action, stochastic=stochastic)


def _splits(ix: StepIndex, pair_code: np.ndarray, n_pairs: int
            ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """(split, hidden, splits) of :class:`GroupSignals`: (node, action) pairs leading on to
    different next nodes, and whether the split stays among steps that arrived alike."""
    node, n_nodes = ix.node, ix.n_nodes
    rows_next = np.flatnonzero(ix.next_row >= 0)
    nxt = node[ix.next_row[rows_next]]
    pair_next = pair_code[rows_next] * np.int64(n_nodes) + nxt
    uniq, first_row, taken = np.unique(pair_next, return_index=True, return_counts=True)
    uniq_pair = uniq // n_nodes
    n_next = np.bincount(uniq_pair, minlength=n_pairs)
    is_split = n_next[uniq_pair] > 1
    split = np.zeros(n_nodes, dtype=bool)
    split[node[rows_next[first_row[is_split]]]] = True
    srow = rows_next[first_row[is_split]]
    pair_steps = np.bincount(uniq_pair[is_split], weights=taken[is_split], minlength=n_pairs)
    splits = pd.DataFrame({"group": ix.group[srow], "node": node[srow], "row": srow,
                           "next_row": ix.next_row[srow], "count": taken[is_split],
                           "_pair": uniq_pair[is_split],
                           "_pair_steps": pair_steps[uniq_pair[is_split]]})
    splits = splits.sort_values(["group", "_pair_steps", "_pair", "count"],
                                ascending=[True, False, True, False], kind="stable")
    splits = splits.drop(columns=["_pair_steps"]).reset_index(drop=True)

    # the split pairs again, among steps that arrived by the same (previous node, action)
    hidden = np.zeros(n_nodes, dtype=bool)
    split_pair = np.zeros(n_pairs, dtype=bool)
    split_pair[uniq_pair[is_split]] = True
    taking = rows_next[split_pair[pair_code[rows_next]]]
    if len(taking):
        prev_row = np.full(ix.n_steps, -1, dtype=np.int64)
        prev_row[ix.next_row[rows_next]] = rows_next
        before = prev_row[taking]
        arrival = np.where(before >= 0, pair_code[np.maximum(before, 0)] + 1, 0)
        keyed = pd.factorize(arrival * np.int64(n_pairs) + pair_code[taking])[0]
        triples = np.unique(keyed.astype(np.int64) * np.int64(n_nodes)
                            + node[ix.next_row[taking]])
        spread = np.bincount(triples // n_nodes, minlength=int(keyed.max()) + 1)
        stays = np.zeros(n_pairs, dtype=bool)
        stays[pair_code[taking][spread[keyed] > 1]] = True
        # a node is hidden when every split pair of it stays split
        pair_node = np.zeros(n_pairs, dtype=np.int64)
        pair_node[pair_code] = node
        explained = split_pair & ~stays
        hidden = split & (np.bincount(pair_node[explained], minlength=n_nodes) == 0)
    return split, hidden, splits


def _alike_splits(splits: pd.DataFrame, nodes: np.ndarray,
                  text: Callable[[str, np.ndarray], list[str]]) -> np.ndarray:
    """(n_nodes,) bool: of ``nodes``, those where every split pair leads on to next states
    that read as one place with a detail changed (:func:`g2po.analysis.words.same_place`):
    hidden world state, not where the agent came from."""
    out = np.zeros(len(nodes), dtype=bool)
    rows = splits[nodes[splits["node"].to_numpy()]]
    if rows.empty:
        return out
    texts = text("state_key", rows["next_row"].to_numpy())
    alike = {pair: same_place([texts[i] for i in idx])
             for pair, idx in rows.reset_index(drop=True).groupby("_pair").indices.items()}
    node_of = rows.drop_duplicates("_pair").set_index("_pair")["node"]
    every = pd.Series(alike).groupby(node_of.reindex(list(alike)).to_numpy()).all()
    out[every.index[every.to_numpy()].to_numpy(dtype=np.int64)] = True
    return out


def _arrivals(ix: StepIndex, split: np.ndarray, starts: np.ndarray):
    """(in_sources, invalid_arrival_share, hub by its sources, hub by invalid arrivals,
    rejoin, branch) of :class:`GroupSignals`."""
    node, n_nodes, G = ix.node, ix.n_nodes, ix.n_groups
    has_next = ix.next_row >= 0
    src = node[has_next]
    dst = node[ix.next_row[has_next]]
    moved = src != dst
    loops = np.bincount(src[~moved], minlength=n_nodes) > 0
    src, dst = src[moved], dst[moved]
    bad = ix.invalid[has_next][moved]
    arrivals = np.bincount(dst, minlength=n_nodes)
    invalid_arrivals = np.bincount(dst, weights=bad, minlength=n_nodes)
    edges = np.unique(src * np.int64(n_nodes) + dst)
    in_sources = np.bincount(edges % n_nodes, minlength=n_nodes).astype(np.int64)
    out_targets = np.bincount(edges // n_nodes, minlength=n_nodes)
    invalid_share = np.where(arrivals > 0, invalid_arrivals / np.maximum(arrivals, 1), 0.0)
    reached = in_sources > 0
    median = segment_median(in_sources[reached], ix.node_group[reached], G)
    by_sources = (in_sources >= HUB_MIN_SOURCES) & split & \
        (in_sources >= HUB_MEDIAN_FACTOR * np.nan_to_num(median[ix.node_group], nan=np.inf))
    moves = np.bincount(ix.node_group[dst], minlength=G)
    group_rate = np.bincount(ix.node_group[dst], weights=bad, minlength=G) / np.maximum(moves, 1)
    by_invalid = (in_sources >= HUB_INVALID_SOURCES) & (invalid_share >= HUB_INVALID_SHARE)
    if by_invalid.any():
        from scipy.special import bdtrc  # P(X > k) of a binomial; only when a node qualifies

        k = np.maximum(invalid_arrivals[by_invalid] - 1, 0)
        chance = bdtrc(k, arrivals[by_invalid], group_rate[ix.node_group[by_invalid]])
        by_invalid[by_invalid] = chance < HUB_INVALID_P
    is_start = np.bincount(node[starts], minlength=n_nodes) > 0
    rejoin = (in_sources + is_start + loops) >= 2
    branch = (out_targets + loops) >= 2
    return in_sources, invalid_share, by_sources, by_invalid, rejoin, branch


def _collapsed(ix: StepIndex, pair_code: np.ndarray) -> np.ndarray:
    """(n_groups,) bool: two or more rollouts, all the same sequence of (node, action) pairs.

    Compared by length and two sums Σ code·w[t] with random integer weights: integers below
    2^53, so exact in float64 whatever the row order, equal for equal sequences and, with
    probability ~1, different otherwise."""
    G, t = ix.n_groups, np.asarray(ix.t, dtype=np.int64)
    rng = np.random.default_rng(0)
    codes = (pair_code.astype(np.int64) % ((1 << 20) - 3) + 1).astype(np.float64)
    lengths = np.bincount(ix.traj, minlength=ix.n_traj).astype(np.float64)
    same = np.bincount(ix.traj_group, minlength=G) >= 2
    span = int(t.max()) + 1 if len(t) else 1
    sums = [np.bincount(ix.traj, weights=codes * rng.integers(1, 1 << 20, span)[t],
                        minlength=ix.n_traj) for _ in range(2)]
    for values in (lengths, *sums):
        lo, hi = np.full(G, np.inf), np.full(G, -np.inf)
        np.minimum.at(lo, ix.traj_group, values)
        np.maximum.at(hi, ix.traj_group, values)
        same &= lo == hi
    return same
