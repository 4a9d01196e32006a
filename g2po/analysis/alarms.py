"""Credit alarms: per group, the places where G2PO's credit is likely not what the user thinks.

Each alarm names the steps it is about, so a view can show them:

- ``no_signal``: every advantage of the group is ~0 under an estimator (said per estimator:
  G2PO's graph terms still rank the steps of an all-success group, GRPO's outcome term does
  not), so the group teaches the policy nothing;
- ``collapsed``: every rollout the same sequence of states and actions: nothing to compare, so
  whatever advantage an estimator gives there (G2PO's edge term from discounting) is an
  artifact;
- ``all_success``: every rollout succeeded: GRPO gives no signal, G2PO's edge term still ranks
  the steps (by depth, through γ);
- ``aliased``: state nodes where the same action led on to different next states. In a
  deterministic environment that can only be a state key merging states the environment tells
  apart; a wide spread of values at a node without such a split is the policy's randomness and
  no alarm. With ``stochastic=True`` (the environment itself is random) the split says nothing
  and the alarm is not raised. Ranked by the credit the merge moves
  (:func:`GroupSignals.credit_moved`), the biggest first;
- ``hub``: state nodes reached from many different states, or mostly through invalid actions
  (ALFWorld's "Nothing happens."): the key leaves out where the agent is, so unrelated
  situations share one value;
- ``penalty_amplification``: under ``mean_std_norm``, a group whose rollouts all got the same
  reward, so the only spread left is the invalid-action penalty, which normalisation turns into
  unit-size advantages (invalid steps strongly negative, every valid step positive, whatever it
  did);
- ``truncation``: trajectories cut at the step limit, valued as failures; the alarm names the
  transitions their last steps took, largest |TD error| first (often the group's critical
  transitions);
- ``no_merging``: a merge rate near 0 (the state key probably includes the history or a step
  counter), so the graph is a set of chains and the node terms carry no signal.

Everything is decided by :func:`group_signals`, vectorised over every group of a step table at
once (one G2PO and one GRPO call): :func:`credit_alarms` words the alarms of one group's graph,
:func:`alarm_counts` counts them for every group of a training step (the groups table,
:mod:`g2po.analysis.triage`). One implementation, so the table and the group explorer agree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.analysis.state_graph import StateGraph
from g2po.estimators import estimate, get_estimator
from g2po.index import StepIndex, merge_rate
from g2po.outcomes import OutcomeRule, truncated_steps
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.steps import OPTIONAL_COLUMNS, REQUIRED_COLUMNS

__all__ = ["Alarm", "GroupSignals", "group_signals", "alarm_counts", "credit_alarms",
           "ALARM_KINDS", "ALARM_TITLES", "SIGNAL_ESTIMATORS", "SHOWN", "STOCHASTIC_NOTE",
           "split_evidence", "split_phrase", "short_text", "ADV_UNITS", "REWARD_UNITS"]

ALARM_KINDS = ("no_signal", "collapsed", "penalty_amplification", "all_success", "aliased",
               "hub", "truncation", "no_merging")
#: A short name of each kind, for column headers, filters and legends.
ALARM_TITLES = {"no_signal": "No training signal", "collapsed": "Collapsed",
                "penalty_amplification": "Penalty-only signal", "all_success": "All succeeded",
                "aliased": "Aliased states", "hub": "Hub states", "truncation": "Truncation",
                "no_merging": "No merging"}
#: What the aliasing check cannot tell once the environment is declared stochastic.
STOCHASTIC_NOTE = ("the environment is declared stochastic: the same (state, action) may lead "
                   "to different next states by chance, so a state key that merges states "
                   "the environment tells apart can no longer be told from that, and the "
                   "aliasing alarm is not raised")
#: Estimators whose "no training signal" is checked, with their display names.
SIGNAL_ESTIMATORS = {"g2po": "G2PO", "grpo": "GRPO"}
#: An advantage of at most this magnitude counts as ~0 (normalised advantages are unit-sized;
#: a group with no spread gives exact zeros up to rounding).
ZERO_ADV = 1e-6
#: A node's value spread (std of its merged step values) counts as high at this share of the
#: success reward.
VALUE_STD_SHARE = 0.25
#: Merge rates below this count as "no merging".
NO_MERGE_RATE = 0.05
#: A hub by its sources: reached from at least this many different states, and from at least
#: :data:`HUB_MEDIAN_FACTOR` times as many as the group's median state with arrivals.
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
#: Ranked alarms name (and views show) this many nodes first; the rest are "n more".
SHOWN = 3
_SIGN_TOL = 1e-9


@dataclass(frozen=True)
class Alarm:
    """One credit alarm of a group.

    kind : one of :data:`ALARM_KINDS`.
    title : a short name with the count.
    detail : one or two sentences saying what was found and why it matters.
    count : how many nodes, steps or trajectories it is about (the unit is in ``title``).
    steps : (traj_id, t) of the steps concerned.
    nodes : node ids concerned, in rank order for ranked alarms (may be empty).
    ranking : for ``aliased`` and ``hub``, one row per node of ``nodes``, in the same order:
        node, visits, value, value_spread, credit_moved, mixed, in_sources,
        invalid_arrival_share, hub.
    edges : for ``truncation``, the rows of ``StateGraph.edges`` that the cut trajectories'
        last steps took, largest |TD error| first.
    """

    kind: str
    title: str
    detail: str
    count: int
    steps: pd.DataFrame
    nodes: tuple[int, ...] = ()
    ranking: pd.DataFrame | None = None
    edges: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupSignals:
    """What the alarms are decided from, for every group of a step table at once.

    ix : the step table's index (groups, trajectories, nodes).
    g2po : the G2PO estimator's columns, each (n_steps,).
    grpo : (n_steps,) GRPO's advantage.
    opposite : (n_steps,) bool, G2PO's and GRPO's advantages have opposite signs.
    truncated : (n_traj,) bool, cut at the step limit (the rule's ``done`` / ``truncate_at``).
    credit_moved : (n_nodes,) Σ |v − V(k)| over the node's steps: how far merging moved each
        step's own discounted outcome v to the node's value V(k) (≈ value spread × visits).
    mixed : (n_nodes,) bool, one action from the node led to both success and failure
        (information: a stochastic policy does that everywhere).
    wide : (n_nodes,) bool, visited twice or more with a value std ≥ :data:`VALUE_STD_SHARE`
        of the success reward (information, never the aliasing alarm).
    split : (n_nodes,) bool, one action from the node led on to two or more next states.
    splits : one row per (node, action, next node) of the split pairs: ``group``, ``node``,
        ``row`` (a step row taking the pair), ``next_row`` (a step row at the next node),
        ``count``; the most-taken next state first within a pair, pairs by steps taken.
    collapsed : (n_groups,) bool, every rollout the same (state, action) sequence.
    in_sources : (n_nodes,) int64, distinct other nodes with a transition into the node.
    invalid_arrival_share : (n_nodes,) share of those transitions (from other nodes) taken by
        an invalid action (0 without arrivals).
    hub : (n_nodes,) bool, see :data:`HUB_MIN_SOURCES` and :data:`HUB_INVALID_SOURCES`.
    zero : estimator name → (n_groups,) bool, every advantage of the group is ~0.
    counts : alarm kind → (n_groups,) int64, the alarm's count (0: it does not fire).
    """

    ix: StepIndex
    g2po: dict[str, np.ndarray]
    grpo: np.ndarray
    opposite: np.ndarray
    truncated: np.ndarray
    credit_moved: np.ndarray
    mixed: np.ndarray
    wide: np.ndarray
    split: np.ndarray
    splits: pd.DataFrame
    collapsed: np.ndarray
    in_sources: np.ndarray
    invalid_arrival_share: np.ndarray
    hub: np.ndarray
    zero: dict[str, np.ndarray]
    counts: dict[str, np.ndarray]

    @property
    def aliased(self) -> np.ndarray:
        """(n_nodes,) bool: the nodes of the ``aliased`` alarm (none if stochastic)."""
        return self.split if self.counts["aliased"].any() else np.zeros_like(self.split)

    def by_node(self, column: str) -> np.ndarray:
        """(n_nodes,) a G2PO column that is one value per node (``node_value``,
        ``node_value_var``), by node code."""
        return _by_node(self.ix, self.g2po[column])


def _by_node(ix: StepIndex, values: np.ndarray) -> np.ndarray:
    out = np.zeros(ix.n_nodes)
    out[ix.node] = values
    return out


def _count(seg: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    """How many rows of each of ``n`` segments ``mask`` holds, (n,) float64."""
    return np.bincount(seg, weights=np.asarray(mask, dtype=np.float64), minlength=n)


def _segment_median(values: np.ndarray, seg: np.ndarray, n: int) -> np.ndarray:
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
) -> GroupSignals:
    """Every alarm's numbers for every group of ``steps`` (one G2PO and one GRPO call).

    ``params`` and the run's ``rule`` (success reward, threshold, terminal and truncation)
    are passed whole; ``truncated_rows`` (n_steps,) bool marks steps of trajectories known to
    be cut (a graph's ``truncated`` column), in addition to the rule's. ``stochastic``
    declares the environment random: the aliasing alarm (a (key, action) leading to different
    next states) is then not raised (:data:`STOCHASTIC_NOTE`).
    """
    cols, ix = estimate(steps, "g2po", **params.g2po_kwargs(rule))
    mode, penalty = params.mode, params.penalty
    grpo = get_estimator("grpo")(ix, mode=mode)["adv"]
    n, G = ix.n_steps, ix.n_groups
    action = pd.factorize(steps["action"], sort=False)[0].astype(np.int64)
    success = np.asarray(cols["success"], dtype=bool)
    last = ix.next_row < 0

    # outcomes per trajectory: success by the rule, cut at the step limit by the rule
    cut_rows = truncated_steps(steps, ix, success, rule.truncate_at)
    if truncated_rows is not None:
        cut_rows = cut_rows | truncated_rows
    truncated = _count(ix.traj, cut_rows, ix.n_traj) > 0

    # per node: the credit the merge moves, mixed outcomes, spread, arrivals
    node, n_nodes = ix.node, ix.n_nodes
    visits = np.bincount(node, minlength=n_nodes)
    credit_moved = np.bincount(node, weights=np.abs(cols["step_value"] - cols["node_value"]),
                               minlength=n_nodes)
    base = np.int64(action.max() + 1 if n else 1)
    pair_code, pair_ids = pd.factorize(node * base + action, sort=False)
    pair_hits = np.bincount(pair_code, weights=success.astype(np.float64))
    pair_n = np.bincount(pair_code)
    mixed_pair = (pair_hits > 0) & (pair_hits < pair_n)
    mixed = np.zeros(n_nodes, dtype=bool)
    mixed[np.asarray(pair_ids)[mixed_pair] // base] = True
    node_var = _by_node(ix, cols["node_value_var"])
    scale = max(abs(rule.success_reward), 1e-12)
    wide = (np.sqrt(node_var) >= VALUE_STD_SHARE * scale) & (visits >= 2)

    has_next = ~last
    # aliasing: one (node, action) pair leading on to different next nodes
    rows_next = np.flatnonzero(has_next)
    nxt = node[ix.next_row[rows_next]]
    pair_next = pair_code[rows_next].astype(np.int64) * np.int64(n_nodes) + nxt
    uniq, first_row, taken = np.unique(pair_next, return_index=True, return_counts=True)
    uniq_pair = uniq // n_nodes
    n_next = np.bincount(uniq_pair, minlength=len(pair_n))
    is_split = n_next[uniq_pair] > 1
    split = np.zeros(n_nodes, dtype=bool)
    split[node[rows_next[first_row[is_split]]]] = True
    srow = rows_next[first_row[is_split]]
    pair_steps = np.bincount(uniq_pair[is_split], weights=taken[is_split],
                             minlength=len(pair_n))
    splits = pd.DataFrame({"group": ix.group[srow], "node": node[srow], "row": srow,
                           "next_row": ix.next_row[srow], "count": taken[is_split],
                           "_pair": uniq_pair[is_split],
                           "_pair_steps": pair_steps[uniq_pair[is_split]]})
    splits = splits.sort_values(["group", "_pair_steps", "_pair", "count"],
                                ascending=[True, False, True, False], kind="stable")
    splits = splits.drop(columns=["_pair_steps"]).reset_index(drop=True)

    src = node[has_next]
    dst = node[ix.next_row[has_next]]
    moved = src != dst
    src, dst = src[moved], dst[moved]
    bad = ix.invalid[has_next][moved]
    arrivals = np.bincount(dst, minlength=n_nodes)
    invalid_arrivals = np.bincount(dst, weights=bad, minlength=n_nodes)
    edges = np.unique(src * np.int64(n_nodes) + dst)
    in_sources = np.bincount(edges % n_nodes, minlength=n_nodes).astype(np.int64)
    invalid_share = np.where(arrivals > 0, invalid_arrivals / np.maximum(arrivals, 1), 0.0)
    reached = in_sources > 0
    median = _segment_median(in_sources[reached], ix.node_group[reached], G)
    by_sources = (in_sources >= HUB_MIN_SOURCES) & \
        (in_sources >= HUB_MEDIAN_FACTOR * np.nan_to_num(median[ix.node_group], nan=np.inf))
    moves = np.bincount(ix.node_group[dst], minlength=G)
    group_rate = np.bincount(ix.node_group[dst], weights=bad, minlength=G) / np.maximum(moves, 1)
    by_invalid = (in_sources >= HUB_INVALID_SOURCES) & (invalid_share >= HUB_INVALID_SHARE)
    if by_invalid.any():
        from scipy.special import bdtrc  # P(X > k) of a binomial; only when a node qualifies

        k = np.maximum(invalid_arrivals[by_invalid] - 1, 0)
        chance = bdtrc(k, arrivals[by_invalid], group_rate[ix.node_group[by_invalid]])
        by_invalid[by_invalid] = chance < HUB_INVALID_P
    hub = by_sources | by_invalid

    # per group
    n_steps = np.bincount(ix.group, minlength=G)
    n_states = np.bincount(ix.node_group, minlength=G)
    rollouts_of = np.bincount(ix.traj_group, minlength=G)
    zero = {}
    for name, adv in (("g2po", cols["adv"]), ("grpo", grpo)):
        zero[name] = (_count(ix.group, np.abs(adv) > ZERO_ADV, G) == 0) & (n_steps > 0)
    counts: dict[str, np.ndarray] = {}
    any_zero = np.logical_or.reduce(list(zero.values()))
    counts["no_signal"] = np.where(any_zero, n_steps, 0)
    counts["collapsed"] = np.where(_collapsed(ix, pair_code), rollouts_of, 0)
    wins = np.bincount(ix.traj_group, weights=rule.success(ix.traj_reward).astype(np.float64),
                       minlength=G)
    counts["all_success"] = np.where((wins == rollouts_of) & (rollouts_of > 0), rollouts_of, 0)
    counts["aliased"] = np.zeros(G) if stochastic else _count(ix.node_group, split, G)
    counts["hub"] = _count(ix.node_group, hub, G)
    r_lo = np.full(G, np.inf)
    r_hi = np.full(G, -np.inf)
    np.minimum.at(r_lo, ix.traj_group, ix.traj_reward)
    np.maximum.at(r_hi, ix.traj_group, ix.traj_reward)
    n_invalid = np.bincount(ix.group, weights=ix.invalid, minlength=G)
    amplified = (penalty > 0) & (n_steps > 1) & (r_lo == r_hi) & (wins == 0) & \
        (n_invalid > 0) & (n_invalid < n_steps)
    counts["penalty_amplification"] = np.where(amplified, n_invalid, 0)
    adv = cols["adv"]
    opposite = ((adv > _SIGN_TOL) & (grpo < -_SIGN_TOL)) | \
        ((adv < -_SIGN_TOL) & (grpo > _SIGN_TOL))
    counts["truncation"] = _count(ix.traj_group, truncated, G)
    rate = merge_rate(n_states, n_steps)
    counts["no_merging"] = np.where((n_steps >= 10) & (rate < NO_MERGE_RATE), n_states, 0)
    counts = {k: np.asarray(v).astype(np.int64) for k, v in counts.items()}
    return GroupSignals(ix=ix, g2po=cols, grpo=grpo, opposite=opposite, truncated=truncated,
                        credit_moved=credit_moved, mixed=mixed, wide=wide, split=split,
                        splits=splits, collapsed=counts["collapsed"] > 0,
                        in_sources=in_sources, invalid_arrival_share=invalid_share, hub=hub,
                        zero=zero, counts=counts)


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


def alarm_counts(signals: GroupSignals) -> pd.DataFrame:
    """(n_groups, len(ALARM_KINDS)) the count of each alarm per group code (0: it does not
    fire), columns :data:`ALARM_KINDS`."""
    return pd.DataFrame({kind: signals.counts[kind] for kind in ALARM_KINDS})


def _pairs(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[["traj_id", "t"]].sort_values(["traj_id", "t"]).reset_index(drop=True)


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _ranking(signals: GroupSignals, graph_node: np.ndarray, chosen: np.ndarray,
             order_by: list[str]) -> pd.DataFrame:
    """One row per chosen node (global codes), ranked by ``order_by`` (descending), with the
    graph's node ids."""
    ix = signals.ix
    value, var = signals.by_node("node_value"), signals.by_node("node_value_var")
    visits = np.bincount(ix.node, minlength=ix.n_nodes)
    table = pd.DataFrame({
        "node": graph_node[chosen], "visits": visits[chosen], "value": value[chosen],
        "value_spread": np.sqrt(var[chosen]), "credit_moved": signals.credit_moved[chosen],
        "mixed": signals.mixed[chosen], "in_sources": signals.in_sources[chosen],
        "invalid_arrival_share": signals.invalid_arrival_share[chosen],
        "hub": signals.hub[chosen]})
    return table.sort_values([*order_by, "node"], ascending=[False] * len(order_by) + [True],
                             kind="stable").reset_index(drop=True)


def _top(ranking: pd.DataFrame, describe) -> str:
    shown = "; ".join(describe(row) for row in ranking.head(SHOWN).itertuples())
    more = len(ranking) - SHOWN
    return shown + (f"; {more} more" if more > 0 else "")


def short_text(text: object, limit: int = 40) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = str(text)
    head = " ".join(text[:4 * limit].split())  # a long observation: only its start is shown
    if len(head) <= limit and len(text) > 4 * limit:
        head = " ".join(text.split())
    return head if len(head) <= limit else head[:limit - 1] + "…"


def split_phrase(key: str, action: str, nexts: Sequence[str], counts: Sequence[int],
                 limit: int = 40) -> str:
    """One split pair in words: "'key' + action → next (5×) | other (3×)", each text on one
    line and shortened, the next states without the start they share (what tells them
    apart)."""
    texts = [str(t) for t in nexts]
    common = os.path.commonprefix(texts)
    # show what tells them apart: from the last word boundary of the start they share
    cut = max(common.rfind(c) for c in " \n\t") + 1 if len(common) > 8 else 0
    shown = " | ".join(f"{'…' if cut else ''}{short_text(text[cut:], limit)} ({int(n)}×)"
                       for text, n in zip(texts, counts, strict=True))
    return f"'{short_text(key, limit)}' + {short_text(action, limit)} → {shown}"


def split_evidence(splits: pd.DataFrame, key: pd.Series, action: pd.Series,
                   limit: int = 40) -> str:
    """The first split pair of ``splits`` (rows of :attr:`GroupSignals.splits` of one group)
    in words (:func:`split_phrase`); ``key`` and ``action`` are the step table's columns
    (row-aligned with the signals)."""
    if splits.empty:
        return ""
    pair = splits[splits["_pair"] == splits["_pair"].iloc[0]]
    row = int(pair["row"].iloc[0])
    return split_phrase(str(key.iloc[row]), str(action.iloc[row]),
                        [str(key.iloc[int(r)]) for r in pair["next_row"]],
                        pair["count"].tolist(), limit)


#: The unit G2PO's advantages read in, by normalisation mode (alarms say it after each figure).
ADV_UNITS = {"mean_std_norm": "in standard deviations (mode mean_std_norm)",
             "mean_norm": "in reward units (mode mean_norm)"}
#: Values, TD errors and the credit a merge moves are discounted rewards.
REWARD_UNITS = "reward units"


def credit_alarms(
    graph: StateGraph,
    *,
    rule: OutcomeRule,
    params: G2POParams = DEFAULT_PARAMS,
    stochastic: bool = False,
) -> list[Alarm]:
    """The alarms that fire for one group's graph (built with the same ``params`` and
    ``rule``), in the order of :data:`ALARM_KINDS`.

    ``rule`` is the run's outcome rule (success, terminal, truncation). G2PO and GRPO
    advantages come from the estimators on the group's rows (:func:`group_signals`), so the
    numbers are exactly those the trainer would use. ``stochastic`` declares the environment
    random (no aliasing alarm, :data:`STOCHASTIC_NOTE`).

    Examples
    --------
    >>> import pandas as pd
    >>> from g2po.analysis.state_graph import state_graph
    >>> from g2po.outcomes import OutcomeRule
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...     "t": [0, 1, 0, 1], "state_key": ["s0", "s1", "s0", "s1"],
    ...     "action": ["go", "go", "go", "look"],
    ...     "episode_reward": 0.0, "is_action_valid": [True, False, True, True]})
    >>> rule = OutcomeRule()
    >>> [a.kind for a in credit_alarms(state_graph(steps, rule=rule), rule=rule)]
    ['no_signal', 'penalty_amplification']
    """
    steps = graph.steps
    raw = steps[[c for c in steps.columns if c in REQUIRED_COLUMNS or c in OPTIONAL_COLUMNS]]
    cut_rows = steps["truncated"].to_numpy(dtype=bool) if "truncated" in steps.columns else None
    sig = group_signals(raw, rule=rule, params=params, truncated_rows=cut_rows,
                        stochastic=stochastic)
    ix, cols = sig.ix, sig.g2po
    count = {kind: int(values[0]) if len(values) else 0 for kind, values in sig.counts.items()}
    graph_node = np.zeros(ix.n_nodes, dtype=np.int64)
    graph_node[ix.node] = steps["node"].to_numpy(dtype=np.int64)
    states = graph.nodes[graph.nodes["kind"] == "state"]
    rewards = steps["episode_reward"].to_numpy(dtype=np.float64)
    invalid = ~steps["is_action_valid"].to_numpy(dtype=bool)
    n_traj = ix.n_traj
    adv_unit = ADV_UNITS.get(params.mode, f"(mode {params.mode})")
    alarms: list[Alarm] = []

    # no training signal, per estimator
    if count["no_signal"]:
        none = [SIGNAL_ESTIMATORS[k] for k, z in sig.zero.items() if z[0]]
        some = [k for k, z in sig.zero.items() if not z[0]]
        same = np.ptp(ix.traj_reward) == 0 if n_traj else True
        why = (f"all {n_traj} rollouts got reward {ix.traj_reward[0]:g}"
               + ("" if invalid.any() else " and no action was invalid")) if same else \
            "no step's score differs from its reference"
        detail = f"{_names(none)} give{'s' if len(none) == 1 else ''} every step an " \
                 f"advantage of ~0: {why}, so this group teaches the policy nothing" + \
                 (" under " + _names(none) if some else "") + "."
        if "g2po" in some:
            adv = cols["adv"]
            detail += (f" G2PO still ranks its steps through the graph terms (mean |A| "
                       f"{np.abs(adv).mean():.3g}: A^EC from the TD errors "
                       f"{np.abs(cols['adv_ec']).mean():.3g}, A^NC within merged states "
                       f"{np.abs(cols['adv_nc']).mean():.3g}, A^EP "
                       f"{np.abs(cols['adv_ep']).mean():.3g}; {adv_unit}).")
        alarms.append(Alarm("no_signal", f"No training signal: {_names(none)}", detail,
                            len(steps), _pairs(steps)))

    def ranked(kind: str, mask: np.ndarray, order_by: list[str], describe, detail) -> None:
        """The alarm of ``kind`` on the nodes of ``mask``, ranked by ``order_by``: the top
        few described (``describe(row)``) inside ``detail(top)``."""
        ranking = _ranking(sig, graph_node, np.flatnonzero(mask), order_by)
        nodes = tuple(int(x) for x in ranking["node"])
        rows = steps[np.isin(steps["node"].to_numpy(), nodes)]
        alarms.append(Alarm(kind, f"{ALARM_TITLES[kind]}: {len(nodes)} node(s)",
                            detail(_top(ranking, describe)), len(nodes), _pairs(rows), nodes,
                            ranking))

    adv = cols["adv"]
    if count["collapsed"]:
        detail = f"All {n_traj} rollouts are the same sequence of states and actions: there " \
                 "is nothing to compare, so whatever advantage an estimator gives here is an " \
                 "artifact"
        if np.abs(adv).max() > ZERO_ADV:
            detail += f" (G2PO's A from {adv.min():+.2f} to {adv.max():+.2f}, {adv_unit}, " \
                      "comes from the " \
                      "discount in the edge term: identical steps ranked by depth alone)"
        alarms.append(Alarm("collapsed", f"Collapsed: {n_traj} identical rollouts",
                            detail + ". The policy has collapsed on this task.", n_traj,
                            _pairs(steps)))
    if count["all_success"]:
        alarms.append(Alarm(
            "all_success", f"All {n_traj} rollouts succeeded",
            "No outcome to compare: GRPO gives every step 0; G2PO's edge term still ranks the "
            f"steps (A from {adv.min():+.2f} to {adv.max():+.2f}, {adv_unit}), by how soon "
            "each reaches "
            "the goal (γ).", n_traj, _pairs(steps)))

    # aliased states: the same action led on to different next states
    if count["aliased"]:
        evidence = split_evidence(sig.splits, steps["state_key"], steps["action"])
        ranked("aliased", sig.aliased, ["credit_moved"],
               lambda r: f"node {r.node} ({r.visits} visits, moves "
                         f"{r.credit_moved:.3g} {REWARD_UNITS}{', a hub' if r.hub else ''})",
               lambda top: f"The same action led on to different next states: {evidence}. "
                           "In a deterministic environment the state key merges states the "
                           "environment tells apart (declare it stochastic if it is not). "
                           "Ranked by the credit the merge moves: Σ |v − V| over the node's "
                           "steps, each step's own discounted outcome v against the node's "
                           f"value V, in {REWARD_UNITS}: {top}.")

    # hubs: reached from many states, or mostly through invalid actions
    if count["hub"]:
        ranked("hub", sig.hub, ["in_sources", "credit_moved"],
               lambda r: f"node {r.node} from {r.in_sources} states, "
                         f"{r.invalid_arrival_share:.0%} through invalid actions",
               lambda top: f"{top}. A state reached from many different states, or mostly "
                           "after invalid actions (feedback like \"Nothing happens.\"), says "
                           "little about where the agent is: its key probably leaves out the "
                           "situation, so unrelated steps share one value. Consider a state "
                           "key that keeps the location (a regex, or the previous "
                           "observation).")

    # penalty amplification: equal outcomes, so the penalty is all the spread normalisation sees
    if count["penalty_amplification"]:
        success = rule.success(ix.traj_reward)
        adv_ep = cols["adv_ep"]
        outcome_word = "succeed" if success.all() else "fail" if not success.any() else \
            "get the same reward"
        alarms.append(Alarm(
            "penalty_amplification",
            f"Penalty-only signal: {int(invalid.sum())} invalid step(s)",
            f"All rollouts {outcome_word} (reward {rewards[0]:g}): the only spread left is the "
            f"invalid-action penalty p = {params.penalty:g} {REWARD_UNITS}"
            + (", and mean_std_norm scales it to unit size. " if params.mode == "mean_std_norm"
               else ". ") +
            f"Invalid steps get A^EP ≈ {adv_ep[invalid].mean():.2f}, every valid step "
            f"≈ {adv_ep[~invalid].mean():+.2f} ({adv_unit}), whatever it did. Consider "
            "mode = mean_norm or "
            "a smaller penalty.",
            int(invalid.sum()), _pairs(steps[invalid])))

    # truncation treated as failure, with the transitions the cut steps took
    if count["truncation"]:
        cut_last = sig.truncated[ix.traj] & (ix.next_row < 0)
        last = steps[cut_last]
        edge_rows = _edge_rows(graph, last)
        detail = (f"{count['truncation']} trajectory(ies) were cut at the step limit; the "
                  "estimator values them as failures (terminal value "
                  f"{'R_i' if rule.terminal == 'reward' else '0'}), so their last step is "
                  "blamed for running out of steps.")
        top = graph.edges.loc[edge_rows[0]] if edge_rows else None
        if top is not None and abs(float(top["td_error"])) > 1e-12:
            td = graph.edges["td_error"].abs().to_numpy()
            rank = int((td > abs(float(top["td_error"])) + 1e-12).sum()) + 1
            where = "the largest of the group" if rank == 1 else \
                f"number {rank} of the group's {len(td)} transitions"
            detail += (f" The largest |TD error| of their last transitions is "
                       f"{float(top['td_error']):+.4g} {REWARD_UNITS} (node "
                       f"{int(top['source'])} → "
                       f"{int(top['target'])}), {where} by |TD error|: where it shows among "
                       "the critical transitions, it says the episode ran out of steps, not "
                       "that the step was bad.")
        alarms.append(Alarm(
            "truncation", f"Truncation treated as failure: {count['truncation']} "
            "trajectory(ies)", detail, count["truncation"], _pairs(last),
            edges=tuple(edge_rows)))

    # no merging: every step its own state
    if count["no_merging"]:
        n_steps, n_states = len(steps), len(states)
        rate = 1.0 - n_states / n_steps if n_steps else 0.0
        alarms.append(Alarm(
            "no_merging", f"No merging: merge rate {rate:.0%}",
            f"{n_states} state nodes for {n_steps} steps: almost no two steps share a state "
            "key, so A^NC has no reference sets. The key probably includes the history or a "
            "step counter; try another state-key strategy (normalized, regex).",
            n_states, _pairs(steps)))
    return alarms


def _edge_rows(graph: StateGraph, rows: pd.DataFrame) -> list[int]:
    """The rows of ``graph.edges`` that ``rows`` (steps of the graph) took, largest |TD
    error| first."""
    if rows.empty:
        return []
    taken = rows[["node", "action", "next_node"]].drop_duplicates()
    edges = graph.edges.reset_index().rename(columns={"index": "_row"})
    hit = edges.merge(taken.rename(columns={"node": "source", "next_node": "target"}),
                      on=["source", "action", "target"])
    order = np.lexsort((hit["_row"].to_numpy(), -hit["td_error"].abs().to_numpy()))
    return [int(r) for r in hit["_row"].to_numpy()[order]]
