"""Outcomes of a group's trajectories, as the log states them, checked against the rule the
estimators use, and episodes cut at the step limit (truncated).

The success rule (:func:`success_mask`) is the reference's by default: a trajectory succeeds
when its reward equals the success reward. With a ``success_threshold`` T, it succeeds when its
reward is at least T (graded rewards, or successes rewarded unequally). Under the binary
terminal every other trajectory gets the failure value, so a log whose successes are rewarded
1.0, scored on a scale, or marked only by ``won`` would be silently wrong; :func:`check_outcomes`
says so and names the fix.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["OutcomeCheck", "Fix", "check_outcomes", "trajectory_outcomes",
           "truncated_trajectories", "success_reward_from_won", "success_threshold_from_won",
           "success_rule_from_won",
           "success_mask", "success_rule", "check_success_threshold"]

#: Rewards within this of the success reward count as equal (the equality rule).
SUCCESS_ATOL = 1e-9


def check_success_threshold(success_threshold: float | None) -> float | None:
    """None (the equality rule) or a finite threshold, as a float."""
    if success_threshold is None:
        return None
    from g2po.index import MAX_ABS_REWARD

    if isinstance(success_threshold, bool | np.bool_) or \
            not isinstance(success_threshold, numbers.Real):
        raise ValueError(f"success_threshold must be None or a number, got "
                         f"{success_threshold!r}")
    value = float(success_threshold)
    if not abs(value) <= MAX_ABS_REWARD:
        raise ValueError(f"success_threshold must be None or at most {MAX_ABS_REWARD:g} in "
                         f"magnitude, got {success_threshold}")
    return value


def success_mask(reward: np.ndarray, success_reward: float = 10.0,
                 success_threshold: float | None = None) -> np.ndarray:
    """Which episode rewards count as success: equal to ``success_reward`` (within 1e-9; the
    reference rule), or, with a ``success_threshold`` T, at least T. One rule for the
    estimators, the graph's terminals and the outcome check.

    >>> success_mask(np.array([0.0, 0.8, 1.0]), 1.0).tolist()
    [False, False, True]
    >>> success_mask(np.array([0.0, 0.8, 1.0]), 1.0, success_threshold=0.8).tolist()
    [False, True, True]
    """
    reward = np.asarray(reward, dtype=np.float64)
    threshold = check_success_threshold(success_threshold)
    if threshold is None:
        return np.abs(reward - success_reward) <= SUCCESS_ATOL
    return reward >= threshold


def success_rule(success_reward: float = 10.0, success_threshold: float | None = None) -> str:
    """The success rule in words, for messages and headings."""
    if success_threshold is None:
        return f"reward = success reward {success_reward:g}"
    return f"reward ≥ threshold {success_threshold:g}"


@dataclass(frozen=True)
class Fix:
    """A change of parameters that would make the success rule match the log.

    kind : ``success_reward`` (set it to ``value``, equality rule) | ``success_threshold``
        (count a reward of at least ``value`` as success; with ``reward`` set, the success
        terminal is valued at it) | ``terminal_reward`` (value the terminal by R_i, for scores).
    """

    kind: str
    label: str
    value: float | None = None
    reward: float | None = None


@dataclass(frozen=True)
class OutcomeCheck:
    """What a group's outcomes look like.

    n_traj : trajectories.
    rewards : the distinct episode rewards, ascending.
    n_success : trajectories that succeed by the estimators' rule (:func:`success_mask`).
    n_won : trajectories the log marks ``won`` (None: no ``won`` column).
    n_truncated : trajectories cut at the step limit (``done`` false on the last step).
    success_rate : from ``won`` when the log has it, else by the success-reward rule.
    problems : what is wrong, one sentence each (empty: the rule matches the log).
    fixes : parameter changes that would make it match.
    """

    n_traj: int
    rewards: tuple[float, ...]
    n_success: int
    n_won: int | None
    n_truncated: int
    success_rate: float
    problems: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)


def trajectory_outcomes(steps: pd.DataFrame, success_reward: float = 10.0,
                        success_threshold: float | None = None) -> pd.DataFrame:
    """One row per trajectory (index ``traj_id``, naturally ordered as first seen): ``reward``,
    ``success`` (by :func:`success_mask`), ``won`` (the log's flag on any step; NaN without the
    column), ``truncated`` and ``length``."""
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    grouped = ordered.groupby("traj_id", sort=False)
    table = pd.DataFrame({"reward": grouped["episode_reward"].first().astype(np.float64),
                          "length": grouped.size()})
    table["success"] = success_mask(table["reward"].to_numpy(), success_reward,
                                    success_threshold)
    if "won" in ordered.columns and ordered["won"].notna().any():
        won = ordered["won"].map(lambda v: bool(v) if pd.notna(v) else False)
        table["won"] = won.groupby(ordered["traj_id"], sort=False).any()
    else:
        table["won"] = np.nan
    table["truncated"] = truncated_trajectories(ordered).reindex(table.index).to_numpy()
    return table


def truncated_trajectories(steps: pd.DataFrame) -> pd.Series:
    """Per ``traj_id``: True when the trajectory was cut at the step limit, that is the log has
    a ``done`` column and it is false (not missing) on the trajectory's last step."""
    if "done" not in steps.columns:
        ids = pd.unique(steps["traj_id"])
        return pd.Series(False, index=pd.Index(ids, name="traj_id"))
    last = steps.sort_values(["traj_id", "t"], kind="stable").groupby("traj_id", sort=False
                                                                      ).tail(1)
    done = last["done"]
    cut = done.notna() & ~done.map(lambda v: bool(v) if pd.notna(v) else True)
    return pd.Series(cut.to_numpy(dtype=bool), index=pd.Index(last["traj_id"], name="traj_id"))


def _won_reward(table: pd.DataFrame) -> float | None:
    """Of a :func:`trajectory_outcomes` table: see :func:`success_reward_from_won`."""
    if table["won"].isna().all():
        return None
    won = table["won"].astype(bool)
    rewards = np.unique(table.loc[won, "reward"].to_numpy())
    if len(rewards) != 1 or np.isin(rewards[0], table.loc[~won, "reward"].to_numpy()):
        return None
    return float(rewards[0])


def _won_threshold(table: pd.DataFrame) -> float | None:
    """Of a :func:`trajectory_outcomes` table: see :func:`success_threshold_from_won`."""
    if table["won"].isna().all():
        return None
    won = table["won"].astype(bool).to_numpy()
    rewards = table["reward"].to_numpy()
    if not won.any():
        return None
    lowest = float(rewards[won].min())
    if (~won).any() and rewards[~won].max() >= lowest:
        return None
    return lowest


def success_reward_from_won(steps: pd.DataFrame) -> float | None:
    """The reward every ``won`` trajectory has, when the log marks wins and they share one
    reward that no lost trajectory has; else None."""
    return _won_reward(trajectory_outcomes(steps))


def success_threshold_from_won(steps: pd.DataFrame) -> float | None:
    """The smallest reward of a ``won`` trajectory, when it is above the reward of every
    trajectory not won (so 'reward ≥ it' reproduces ``won``); else None."""
    return _won_threshold(trajectory_outcomes(steps))


def success_rule_from_won(steps: pd.DataFrame) -> tuple[float, float | None] | None:
    """The success rule the log's ``won`` flags state, as (success reward, threshold): the
    reward every won trajectory has (threshold None: the equality rule), else, when won
    trajectories are rewarded unequally but above every other, the threshold that reproduces
    ``won`` with the largest won reward as the success terminal's value; None when ``won`` is
    absent or no rule reproduces it."""
    table = trajectory_outcomes(steps)
    reward = _won_reward(table)
    if reward is not None:
        return reward, None
    lowest = _won_threshold(table)
    if lowest is None:
        return None
    return float(table.loc[table["won"].astype(bool), "reward"].max()), lowest


def check_outcomes(steps: pd.DataFrame, success_reward: float = 10.0,
                   terminal: str = "binary",
                   success_threshold: float | None = None) -> OutcomeCheck:
    """Compare the log's outcomes with the success rule of the estimators
    (:func:`success_mask`).

    Problems found: ``won`` disagrees with the rule; no trajectory succeeds although some
    rewards are not 0; more than two distinct rewards under the binary terminal and the
    equality rule (every reward but the success reward is then valued as failure); under the
    threshold rule, a success terminal valued above every reward seen.

    Examples
    --------
    >>> import pandas as pd
    >>> steps = pd.DataFrame({"traj_id": ["a", "b"], "t": 0, "episode_reward": [1.0, 0.0],
    ...                       "won": [True, False]})
    >>> check = check_outcomes(steps, success_reward=10.0)
    >>> check.success_rate, [f.value for f in check.fixes if f.kind == "success_reward"]
    (0.5, [1.0])
    """
    threshold = check_success_threshold(success_threshold)
    table = trajectory_outcomes(steps, success_reward, threshold)
    n = len(table)
    rewards = tuple(float(r) for r in np.unique(table["reward"].to_numpy()))
    n_success = int(table["success"].sum())
    has_won = not table["won"].isna().all()
    n_won = int(table["won"].astype(bool).sum()) if has_won else None
    rate = (n_won if has_won else n_success) / n if n else 0.0
    rule = success_rule(success_reward, threshold)
    problems: list[str] = []
    fixes: list[Fix] = []
    shown = ", ".join(f"{r:g}" for r in rewards[:8]) + (" …" if len(rewards) > 8 else "")
    top = rewards[-1] if rewards else 0.0
    # the success terminal's value to go with a threshold, when the success reward is no reward
    terminal_at = top if terminal == "binary" and top > 0 and \
        not np.isclose(rewards, success_reward, rtol=0.0, atol=SUCCESS_ATOL).any() else None
    if has_won:
        disagree = int((table["won"].astype(bool) != table["success"]).sum())
        if disagree:
            problems.append(
                f"{disagree} of {n} trajectories have a `won` flag that disagrees with "
                f"'{rule}' (rewards seen: {shown}): the graph's success terminal and the "
                "advantages follow the reward rule.")
            target = _won_reward(table)  # `won` does not depend on the success rule
            lowest = _won_threshold(table)
            if target is not None and threshold is None:
                fixes.append(Fix("success_reward", f"Use `won`: set the success reward to "
                                 f"{target:g} (the reward of every won trajectory)", target))
            elif lowest is not None:
                fixes.append(Fix("success_threshold", f"Use `won`: count reward ≥ {lowest:g} "
                                 "as success (every won trajectory, no other)", lowest,
                                 terminal_at))
    if n_success == 0 and any(r != 0.0 for r in rewards) and not problems:
        problems.append(f"No trajectory succeeds by '{rule}' (rewards seen: {shown}): every "
                        "trajectory counts as a failure.")
        if len(rewards) == 2:
            fixes.append(Fix("success_reward", f"Set the success reward to {top:g}", top))
    if len(rewards) > 2 and terminal == "binary" and threshold is None:
        problems.append(f"Rewards take {len(rewards)} values ({shown}), not two: under the "
                        "binary terminal every reward other than the success reward is valued "
                        "as failure (0).")
    if problems and threshold is None and len(rewards) > 2 and \
            not any(f.kind == "success_threshold" for f in fixes):
        middle = (rewards[0] + top) / 2.0
        fixes.append(Fix("success_threshold", f"Count reward ≥ {middle:g} as success",
                         middle, terminal_at))
    if threshold is not None and terminal == "binary" and rewards and success_reward > top:
        problems.append(f"Under '{rule}' the success terminal is valued at the success reward "
                        f"{success_reward:g}, above every reward seen ({shown}): the last "
                        "step of each success gets an outsized TD error.")
        if top > 0:
            fixes.append(Fix("success_reward", f"Value the success terminal at {top:g} (set "
                             "the success reward)", top))
    if problems and terminal == "binary":
        fixes.append(Fix("terminal_reward", "Value the terminal by the reward itself "
                         "(terminal = reward)"))
    return OutcomeCheck(n_traj=n, rewards=rewards, n_success=n_success, n_won=n_won,
                        n_truncated=int(table["truncated"].sum()), success_rate=float(rate),
                        problems=problems, fixes=fixes)
