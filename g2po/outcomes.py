"""Outcomes of a group's trajectories, as the log states them, checked against the rule the
estimators use (a trajectory succeeds when its reward equals the success reward), and episodes
cut at the step limit (truncated).

The estimators' binary terminal gives every trajectory whose reward is not exactly the success
reward the failure value. A log whose successes are rewarded 1.0, scored on a scale, or marked
only by ``won`` would then be silently wrong; :func:`check_outcomes` says so and names the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["OutcomeCheck", "Fix", "check_outcomes", "trajectory_outcomes",
           "truncated_trajectories", "success_reward_from_won"]


@dataclass(frozen=True)
class Fix:
    """A change of parameters that would make the success rule match the log.

    kind : ``success_reward`` (set it to ``value``) | ``terminal_reward`` (value the terminal
        by R_i, for scores).
    """

    kind: str
    label: str
    value: float | None = None


@dataclass(frozen=True)
class OutcomeCheck:
    """What a group's outcomes look like.

    n_traj : trajectories.
    rewards : the distinct episode rewards, ascending.
    n_success : trajectories whose reward equals the success reward (the estimators' rule).
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


def trajectory_outcomes(steps: pd.DataFrame, success_reward: float = 10.0) -> pd.DataFrame:
    """One row per trajectory (index ``traj_id``, naturally ordered as first seen): ``reward``,
    ``success`` (reward equals the success reward), ``won`` (the log's flag on any step; NaN
    without the column), ``truncated`` and ``length``."""
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    grouped = ordered.groupby("traj_id", sort=False)
    table = pd.DataFrame({"reward": grouped["episode_reward"].first().astype(np.float64),
                          "length": grouped.size()})
    table["success"] = np.isclose(table["reward"].to_numpy(), success_reward, rtol=0.0,
                                  atol=1e-9)
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


def success_reward_from_won(steps: pd.DataFrame) -> float | None:
    """The reward every ``won`` trajectory has, when the log marks wins and they share one
    reward that no lost trajectory has; else None."""
    table = trajectory_outcomes(steps)
    if table["won"].isna().all():
        return None
    won = table["won"].astype(bool)
    rewards = np.unique(table.loc[won, "reward"].to_numpy())
    if len(rewards) != 1 or np.isin(rewards[0], table.loc[~won, "reward"].to_numpy()):
        return None
    return float(rewards[0])


def check_outcomes(steps: pd.DataFrame, success_reward: float = 10.0,
                   terminal: str = "binary") -> OutcomeCheck:
    """Compare the log's outcomes with the success-reward rule of the estimators.

    Problems found: ``won`` disagrees with the rule; no reward equals the success reward although
    some are not 0; more than two distinct rewards under the binary terminal (every reward but
    the success reward is then valued as failure).

    Examples
    --------
    >>> import pandas as pd
    >>> steps = pd.DataFrame({"traj_id": ["a", "b"], "t": 0, "episode_reward": [1.0, 0.0],
    ...                       "won": [True, False]})
    >>> check = check_outcomes(steps, success_reward=10.0)
    >>> check.success_rate, [f.value for f in check.fixes if f.kind == "success_reward"]
    (0.5, [1.0])
    """
    table = trajectory_outcomes(steps, success_reward)
    n = len(table)
    rewards = tuple(float(r) for r in np.unique(table["reward"].to_numpy()))
    n_success = int(table["success"].sum())
    has_won = not table["won"].isna().all()
    n_won = int(table["won"].astype(bool).sum()) if has_won else None
    rate = (n_won if has_won else n_success) / n if n else 0.0
    problems: list[str] = []
    fixes: list[Fix] = []
    shown = ", ".join(f"{r:g}" for r in rewards[:8]) + (" …" if len(rewards) > 8 else "")
    if has_won:
        disagree = int((table["won"].astype(bool) != table["success"]).sum())
        if disagree:
            problems.append(
                f"{disagree} of {n} trajectories have a `won` flag that disagrees with "
                f"'reward = success reward {success_reward:g}' (rewards seen: {shown}): the "
                "graph's success terminal and the advantages follow the reward rule.")
            target = success_reward_from_won(steps)
            if target is not None:
                fixes.append(Fix("success_reward", f"Use `won`: set the success reward to "
                                 f"{target:g} (the reward of every won trajectory)", target))
    if n_success == 0 and any(r != 0.0 for r in rewards) and not problems:
        problems.append(f"No trajectory's reward equals the success reward {success_reward:g} "
                        f"(rewards seen: {shown}): every trajectory counts as a failure.")
        if len(rewards) == 2:
            fixes.append(Fix("success_reward", f"Set the success reward to {rewards[-1]:g}",
                             rewards[-1]))
    if len(rewards) > 2 and terminal == "binary":
        problems.append(f"Rewards take {len(rewards)} values ({shown}), not two: under the "
                        "binary terminal every reward other than the success reward is valued "
                        "as failure (0).")
    if problems and terminal == "binary":
        fixes.append(Fix("terminal_reward", "Value the terminal by the reward itself "
                         "(terminal = reward)"))
    return OutcomeCheck(n_traj=n, rewards=rewards, n_success=n_success, n_won=n_won,
                        n_truncated=int(table["truncated"].sum()), success_rate=float(rate),
                        problems=problems, fixes=fixes)
