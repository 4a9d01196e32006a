"""Integer codes and neighbour links of a step table, computed once and shared by estimators.

Estimators never look at strings: they see group, trajectory and node codes and the row of the
next step. Building these is the only part that touches the text columns, so it is done once per
``compute_advantages`` call.

Every code is canonical, that is independent of the input's row order: groups and trajectories
are numbered in the sorted order of their ids, nodes in the order they first appear when the rows
are read trajectory by trajectory (:attr:`StepIndex.order`). Estimators add up terms in that
order, so shuffling a table never changes a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from g2po.errors import StepTableError
from g2po.state_keys import StateKeyFn, apply_strategy, exact
from g2po.steps import incomplete_rows, trajectory_problems

__all__ = ["StepIndex", "index_steps", "merge_rate", "MAX_ABS_REWARD"]

#: Largest |reward| an estimator accepts. Chosen so that every output column stays finite: the
#: G2PO node-value variance is a square of rewards (≤ 1e300 here); above it a clear error.
MAX_ABS_REWARD = 1e150


def merge_rate(n_states: float | np.ndarray, n_steps: float | np.ndarray
               ) -> float | np.ndarray:
    """The state-merge rate, 1 − state nodes / steps: how much merging equal states compressed
    the steps (0: every step its own state; near 1: few states hold many steps). The one
    definition every table, page and metric shows; 0 where there are no steps.

    Scalars give a float; arrays (e.g. (n_groups,) counts per group) give a float64 array.

    >>> merge_rate(4, 6)
    0.33333333333333337
    >>> merge_rate(np.array([1, 3, 0]), np.array([4, 3, 0]))
    array([0.75, 0.  , 0.  ])
    """
    states = np.asarray(n_states, dtype=np.float64)
    steps = np.asarray(n_steps, dtype=np.float64)
    rate = np.where(steps > 0, 1.0 - states / np.maximum(steps, 1.0), 0.0)
    return float(rate) if rate.ndim == 0 else rate


@dataclass(frozen=True)
class StepIndex:
    """Codes of one step table; every array is (n_steps,) in the table's row order.

    Attributes
    ----------
    group : int64, group code (0 … n_groups-1). With a ``train_step`` column, a group is one
        (train_step, group_id) pair: the same task at two training steps is two groups.
    traj : int64, trajectory code, global over groups.
    node : int64, state node code, global over groups (nodes never merge across groups), after
        the state-key strategy.
    exact_node : int64, node code of the raw ``state_key`` (the same array as ``node`` under the
        ``exact`` strategy); GraphGPO's anchor groups stay exact when its graph merges states.
    t : int64, step index inside the trajectory: its place among the trajectory's rows, the
        logged ``t`` but in a trajectory marked ``incomplete``, whose logged ``t`` skips where
        a loader skipped a malformed line (:mod:`loaders.incomplete`): the estimators take the
        turns it kept, in order, as the trajectory.
    length : int64, T_i of the row's trajectory.
    next_row : int64, row of step t+1 of the same trajectory, -1 on the last step.
    reward : float64, episode reward R_i.
    step_reward : float64 or None, the logged per-step environment reward (``step_reward``
        column) where the table has one without gaps, else None.
    invalid : float64, 1.0 where the action was invalid, else 0.0.
    node_group : (n_nodes,) int64, group code of each node.
    traj_group : (n_traj,) int64, group code of each trajectory.
    traj_reward : (n_traj,) float64, R_i of each trajectory.
    canonical_key : (n_steps,) str Series, the state key after the state-key strategy.
    order : (n_steps,) int64, rows sorted by trajectory code, then step index: the canonical
        order every sum runs in.
    columns : further step columns an estimator declares it reads (its
        :class:`~g2po.estimators.spec.StepColumn`), by name, each (n_steps,) in row order.
    """

    group: np.ndarray
    traj: np.ndarray
    node: np.ndarray
    exact_node: np.ndarray
    t: np.ndarray
    length: np.ndarray
    next_row: np.ndarray
    reward: np.ndarray
    step_reward: np.ndarray | None
    invalid: np.ndarray
    node_group: np.ndarray
    traj_group: np.ndarray
    traj_reward: np.ndarray
    canonical_key: pd.Series
    order: np.ndarray
    n_groups: int
    n_traj: int
    n_nodes: int
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return len(self.group)

    @property
    def is_last(self) -> np.ndarray:
        return self.next_row < 0

    @property
    def remaining(self) -> np.ndarray:
        """(n_steps,) int64, steps after this one in its trajectory (T_i - 1 - t)."""
        return self.length - 1 - self.t


def _codes(values: pd.Series | np.ndarray, *, sort: bool = True) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(values, sort=sort)
    return codes.astype(np.int64, copy=False), len(uniques)


def _combine(outer: np.ndarray, inner: np.ndarray, n_inner: int, *,
             sort: bool = True) -> tuple[np.ndarray, int]:
    """Code of each (outer, inner) pair, in the sorted order of the pairs (or first seen)."""
    key = outer * np.int64(n_inner) + inner
    span = (int(outer.max()) + 1) * n_inner if len(key) else 0
    if sort and span <= 4 * len(key) + 1024:  # dense: no hashing, sorted by construction
        present = np.zeros(span, dtype=bool)
        present[key] = True
        rank = np.cumsum(present) - 1
        return rank[key].astype(np.int64), int(present.sum())
    return _codes(key, sort=sort)


def _canonical_nodes(raw: np.ndarray, order: np.ndarray, n: int) -> np.ndarray:
    """Renumber node codes by first appearance in the canonical row order."""
    first = np.full(n, len(order), dtype=np.int64)
    np.minimum.at(first, raw[order], np.arange(len(order), dtype=np.int64))
    mapping = np.empty(n, dtype=np.int64)
    mapping[np.argsort(first, kind="stable")] = np.arange(n, dtype=np.int64)
    return mapping[raw]


def _trajectory_order(traj: np.ndarray, t: np.ndarray, n_traj: int) -> np.ndarray:
    """Rows sorted by trajectory, then step: ``np.lexsort((t, traj))``, computed as one stable
    sort of a combined key (linear on tables already written trajectory by trajectory)."""
    if len(t) == 0:
        return np.zeros(0, dtype=np.int64)
    low, high = int(t.min()), int(t.max())
    width = high - low + 1
    if n_traj * width >= 2**62:
        return np.lexsort((t, traj))
    return np.argsort(traj * np.int64(width) + (t - low), kind="stable")


def _positions(traj: np.ndarray, order: np.ndarray) -> np.ndarray:
    """(n,) int64: each row's place among its trajectory's rows (0, 1, …, in ``order``)."""
    n = len(traj)
    tr = traj[order]
    start = np.ones(n, dtype=bool)
    start[1:] = tr[1:] != tr[:-1]
    place = np.arange(n) - np.maximum.accumulate(np.where(start, np.arange(n), 0))
    out = np.empty(n, dtype=np.int64)
    out[order] = place
    return out


def _reward_problems(values: np.ndarray, column: str, labels: pd.Index) -> list[str]:
    big = np.abs(values) > MAX_ABS_REWARD
    if not big.any():
        return []
    rows = ", ".join(str(label) for label in labels[big][:8])
    return [f"column {column!r} exceeds the supported magnitude {MAX_ABS_REWARD:g} in "
            f"{int(big.sum())} row(s): {rows}"]


def _traj_desc(steps: pd.DataFrame) -> str:
    return ("train_step / " if "train_step" in steps.columns else "") + "group_id / traj_id"


def index_steps(steps: pd.DataFrame, state_key: StateKeyFn = exact,
                columns: Iterable[str] = ()) -> StepIndex:
    """Build the :class:`StepIndex` of a step table whose columns passed
    :func:`g2po.steps.column_problems`; raises :class:`StepTableError` when a trajectory's step
    indices skip or repeat, its episode reward changes, or a reward exceeds
    :data:`MAX_ABS_REWARD`. ``columns`` are further step columns to carry (those of them the
    table has), as :attr:`StepIndex.columns`.

    The state-key strategy sees the rows in the canonical order (trajectory by trajectory, each in
    step order), so a strategy that depends on the order it meets keys (the similarity rule's
    representatives) gives the same result for any row order of the input.
    """
    group, n_groups = _codes(steps["group_id"])
    if "train_step" in steps.columns:
        ts, n_ts = _codes(steps["train_step"])
        group, n_groups = _combine(ts, group, n_groups)
    tid, n_tid = _codes(steps["traj_id"])
    traj, n_traj = _combine(group, tid, n_tid)

    t = steps["t"].to_numpy(dtype=np.int64)
    reward = steps["episode_reward"].to_numpy(dtype=np.float64)
    order = _trajectory_order(traj, t, n_traj)
    may_skip = incomplete_rows(steps)
    problems = trajectory_problems(traj, t, reward, steps.index, _traj_desc(steps), order,
                                   may_skip)
    problems += _reward_problems(reward, "episode_reward", steps.index)
    step_reward = None
    if "step_reward" in steps.columns and not steps["step_reward"].isna().any():
        step_reward = steps["step_reward"].to_numpy(dtype=np.float64)
        problems += _reward_problems(step_reward, "step_reward", steps.index)
    if problems:
        raise StepTableError(problems)
    if may_skip is not None and may_skip.any():
        t = _positions(traj, order)

    keys = steps["state_key"]
    kid, n_kid = _codes(keys, sort=False)
    raw, n_exact = _combine(group, kid, n_kid, sort=False)
    exact_node = _canonical_nodes(raw, order, n_exact)
    canonical = keys
    node, n_nodes = exact_node, n_exact
    if state_key is not exact:
        merged = np.empty(len(keys), dtype=object)
        merged[order] = np.asarray(apply_strategy(state_key, steps, order, group, traj),
                                   dtype=object)
        canonical = pd.Series(merged, index=keys.index)
        kid, n_kid = _codes(canonical, sort=False)
        raw, n_nodes = _combine(group, kid, n_kid, sort=False)
        node = _canonical_nodes(raw, order, n_nodes)

    next_row = np.full(len(t), -1, dtype=np.int64)
    if len(t) > 1:
        same = traj[order[1:]] == traj[order[:-1]]
        next_row[order[:-1][same]] = order[1:][same]
    length = np.bincount(traj, minlength=n_traj)[traj].astype(np.int64)

    invalid = 1.0 - steps["is_action_valid"].to_numpy(dtype=np.float64)

    node_group = np.zeros(n_nodes, dtype=np.int64)
    node_group[node] = group
    traj_group = np.zeros(n_traj, dtype=np.int64)
    traj_group[traj] = group
    traj_reward = np.zeros(n_traj, dtype=np.float64)
    traj_reward[traj] = reward
    return StepIndex(
        group=group, traj=traj, node=node, exact_node=exact_node, t=t, length=length,
        next_row=next_row, reward=reward, step_reward=step_reward, invalid=invalid,
        node_group=node_group, traj_group=traj_group,
        traj_reward=traj_reward, canonical_key=canonical, order=order,
        n_groups=n_groups, n_traj=n_traj, n_nodes=n_nodes,
        columns={c: steps[c].to_numpy() for c in columns if c in steps.columns},
    )
