"""Outcomes of a group's trajectories, as the log states them, checked against the rule the
estimators use, and episodes cut at the step limit (truncated).

The success rule (:func:`success_mask`) is the reference's by default: a trajectory succeeds
when its reward equals the success reward. With a ``success_threshold`` T, it succeeds when its
reward is at least T (graded rewards, or successes rewarded unequally). Under the binary
terminal every other trajectory gets the failure value, so a log whose successes are rewarded
1.0, scored on a scale, or marked only by ``won`` would be silently wrong; :func:`check_outcomes`
says so and names the fix (:func:`detect_reward_scale`: a 0/1 reward read under the success
reward 10). Failures cut at a step limit the log does not state: :mod:`g2po.truncation`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

# the truncation hint lives in its own module; named here too, where the rule's users look
from g2po.truncation import (
    MIN_CUT,
    MIN_CUT_SHARE,
    TruncationHint,
    detect_truncation,
    truncation_from_counts,
)

if TYPE_CHECKING:
    from g2po.index import StepIndex

__all__ = ["OutcomeRule", "OutcomeCheck", "Fix", "check_outcomes", "trajectory_outcomes",
           "truncated_trajectories", "success_reward_from_won", "success_threshold_from_won",
           "success_rule_from_won", "rule_from_won", "TERMINAL_RULES", "flag_values",
           "success_mask", "success_rule", "check_success_threshold", "cut_at_limit",
           "TruncationHint", "detect_truncation", "truncation_from_counts", "MIN_CUT",
           "MIN_CUT_SHARE", "outcome_labels", "truncated_steps", "RewardScale",
           "detect_reward_scale"]

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


def success_mask(reward: np.ndarray, success_reward: float,
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


def success_rule(success_reward: float, success_threshold: float | None = None) -> str:
    """The success rule in words, for messages and headings."""
    if success_threshold is None:
        return f"reward = success reward {success_reward:g}"
    return f"reward ≥ threshold {success_threshold:g}"


#: How a terminal node is valued: ``binary`` (success reward or 0, the reference) or ``reward``
#: (R_i itself, for graded scores).
TERMINAL_RULES = ("binary", "reward")


@dataclass(frozen=True)
class OutcomeRule:
    """How a run's outcomes are read: one value that every page, summary and command takes, so
    a success rate or a truncation count means the same wherever it is shown.

    success_reward : the success terminal's value, and the reward that counts as success under
        the equality rule (default 10, the reference's).
    success_threshold : None (success is reward = success reward) or T (reward ≥ T).
    terminal : ``binary`` | ``reward`` (:data:`TERMINAL_RULES`), how terminals are valued.
    truncate_at : None, or N: a trajectory of N or more steps that did not succeed counts as
        cut at the step limit when the log has no ``done`` flag on its last step (a log's own
        ``done`` always wins). Estimators value truncation as failure either way.

    >>> rule = OutcomeRule(success_reward=1.0, success_threshold=0.5)
    >>> rule.success(np.array([0.0, 0.6, 1.0])).tolist()
    [False, True, True]
    """

    success_reward: float = 10.0
    success_threshold: float | None = None
    terminal: str = "binary"
    truncate_at: int | None = None

    def __post_init__(self) -> None:
        from g2po.index import MAX_ABS_REWARD

        reward = self.success_reward
        if isinstance(reward, bool | np.bool_) or not isinstance(reward, numbers.Real) or \
                not abs(float(reward)) <= MAX_ABS_REWARD:
            raise ValueError(f"success_reward must be a finite number of magnitude at most "
                             f"{MAX_ABS_REWARD:g}, got {reward!r}")
        object.__setattr__(self, "success_reward", float(reward))
        object.__setattr__(self, "success_threshold",
                           check_success_threshold(self.success_threshold))
        if self.terminal not in TERMINAL_RULES:
            raise ValueError(f"terminal must be one of {', '.join(TERMINAL_RULES)}, "
                             f"got {self.terminal!r}")
        cut = self.truncate_at
        if cut is not None:
            if isinstance(cut, bool | np.bool_) or not isinstance(cut, numbers.Integral) or \
                    cut < 1:
                raise ValueError(f"truncate_at must be None or a whole number of steps ≥ 1, "
                                 f"got {cut!r}")
            object.__setattr__(self, "truncate_at", int(cut))

    def success(self, reward: np.ndarray) -> np.ndarray:
        """(n,) bool: which episode rewards count as success (:func:`success_mask`)."""
        return success_mask(reward, self.success_reward, self.success_threshold)

    def truncated(self, length: np.ndarray, done: np.ndarray, success: np.ndarray) -> np.ndarray:
        """(n,) bool: which trajectories were cut at the step limit.

        length : (n,) int, steps per trajectory. done : (n,) float, the log's ``done`` on the
        last step (1, 0, or NaN where the log does not say). success : (n,) bool, by
        :meth:`success`. A ``done`` of 0 is a cut; with ``truncate_at`` N, so is a trajectory
        without ``done`` of N or more steps that did not succeed.
        """
        return cut_at_limit(length, done, success, self.truncate_at)

    def describe(self) -> str:
        """The rule in words, for headings, messages and CLI output."""
        text = success_rule(self.success_reward, self.success_threshold)
        if self.terminal != "binary":
            text += f", terminal = {self.terminal}"
        if self.truncate_at is not None:
            text += f", length ≥ {self.truncate_at} without success ⇒ truncated"
        return text

    def estimator_kwargs(self) -> dict[str, object]:
        """The parameters estimators and :func:`g2po.analysis.state_graph.state_graph` take
        from the rule."""
        return {"success_reward": self.success_reward,
                "success_threshold": self.success_threshold, "terminal": self.terminal}

    def with_changes(self, **changes: object) -> OutcomeRule:
        """A copy with some fields changed (checked again)."""
        return replace(self, **changes)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The rule's fields, in order: what a configuration or a manifest may set."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_values(cls, values: Mapping[str, object], base: OutcomeRule | None = None,
                    *, where: str = "") -> OutcomeRule:
        """``base`` (default: the reference's rule) with ``values`` set: a run's manifest, a
        training configuration. Raises ``ValueError`` naming the field (prefixed by
        ``where``) for an unknown name or a bad value.

        >>> OutcomeRule.from_values({"terminal": "reward", "truncate_at": 30}).describe()
        'reward = success reward 10, terminal = reward, length ≥ 30 without success ⇒ truncated'
        """
        names = cls.names()
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"{where}unknown outcome-rule field(s) {', '.join(unknown)}; "
                             f"they are: {', '.join(names)}")
        try:
            return replace(base or cls(), **values)
        except ValueError as err:
            raise ValueError(f"{where}{err}") from None

    def as_dict(self) -> dict[str, object]:
        """The rule by field, JSON-ready (a run's manifest, a configuration)."""
        return asdict(self)

    def check(self, steps: pd.DataFrame) -> OutcomeCheck:
        """:func:`check_outcomes` of a group's step rows under this rule."""
        return check_outcomes(steps, self.success_reward, self.terminal,
                              self.success_threshold, self.truncate_at)


def outcome_labels(success: np.ndarray, truncated: np.ndarray) -> np.ndarray:
    """(n,) what each trajectory (or step's trajectory) reached, in the words every table
    uses: ``success``, else ``truncated`` (cut at the step limit), else ``failure``.

    >>> outcome_labels(np.array([True, False, False]), np.array([False, True, False])).tolist()
    ['success', 'truncated', 'failure']
    """
    return np.where(np.asarray(success, dtype=bool), "success",
                    np.where(np.asarray(truncated, dtype=bool), "truncated", "failure"))


def cut_at_limit(length: np.ndarray, done: np.ndarray, success: np.ndarray,
                 truncate_at: int | None = None) -> np.ndarray:
    """(n,) bool: which trajectories were cut at the step limit. The one truncation rule of
    the summaries, the outcome check and the graph.

    length : (n,) int, steps per trajectory. done : (n,) float, the log's ``done`` on the
    last step (1, 0, or NaN where the log does not say). success : (n,) bool. A ``done`` of 0
    is a cut; with ``truncate_at`` N, so is a trajectory without ``done`` of N or more steps
    that did not succeed (the log's own ``done`` always wins).

    >>> cut_at_limit(np.array([30, 30, 12]), np.array([np.nan, 1.0, 0.0]),
    ...              np.array([False, False, False]), truncate_at=30).tolist()
    [True, False, True]
    """
    done = np.asarray(done, dtype=np.float64)
    cut = done == 0.0
    if truncate_at is not None:
        cut |= np.isnan(done) & (np.asarray(length) >= truncate_at) & \
            ~np.asarray(success, dtype=bool)
    return cut


@dataclass(frozen=True)
class Fix:
    """A change of parameters that would make the success rule match the log.

    kind : ``success_reward`` (set it to ``value``, equality rule) | ``success_threshold``
        (count a reward of at least ``value`` as success; with ``reward`` set, the success
        terminal is valued at it) | ``terminal_reward`` (value the terminal by R_i, for scores)
        | ``truncate_at`` (a failure of ``value`` steps or more was cut at the step limit).
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
    n_truncated : trajectories cut at the step limit (``done`` false on the last step, or by
        the rule's ``truncate_at``).
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


def _trajectory_facts(steps: pd.DataFrame) -> pd.DataFrame:
    """What the log states per trajectory, before any rule: ``reward``, ``length``, ``won``
    and ``done`` (see :func:`trajectory_outcomes`)."""
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    grouped = ordered.groupby("traj_id", sort=False)
    table = pd.DataFrame({"reward": grouped["episode_reward"].first().astype(np.float64),
                          "length": grouped.size()})
    if "won" in ordered.columns and ordered["won"].notna().any():
        won = ordered["won"].map(lambda v: bool(v) if pd.notna(v) else False)
        table["won"] = won.groupby(ordered["traj_id"], sort=False).any()
    else:
        table["won"] = np.nan
    table["done"] = _last_done(ordered).reindex(table.index).to_numpy()
    return table


def trajectory_outcomes(steps: pd.DataFrame, success_reward: float,
                        success_threshold: float | None,
                        truncate_at: int | None) -> pd.DataFrame:
    """One row per trajectory (index ``traj_id``, naturally ordered as first seen): ``reward``,
    ``length``, ``won`` (the log's flag on any step; NaN without the column), ``done`` (the
    log's flag on the last step: 1.0, 0.0, NaN where it does not say), then by the run's rule
    ``success`` (:func:`success_mask`) and ``truncated`` (:func:`cut_at_limit`)."""
    table = _trajectory_facts(steps)
    table.insert(2, "success", success_mask(table["reward"].to_numpy(), success_reward,
                                            success_threshold))
    table["truncated"] = cut_at_limit(table["length"].to_numpy(), table["done"].to_numpy(),
                                      table["success"].to_numpy(), truncate_at)
    return table


def flag_values(values: pd.Series) -> np.ndarray:
    """A log's boolean-ish column (``done``, ``won``) as (n,) float64: 1.0, 0.0, or NaN where
    the log says nothing. One reading of such flags for the graph, the alarms and the
    summaries."""
    if values.dtype == bool:
        return values.to_numpy(dtype=np.float64)
    out = np.full(len(values), np.nan)
    known = values.notna().to_numpy()
    out[known] = values[known].astype(bool).to_numpy(dtype=np.float64)
    return out


def _last_done(ordered: pd.DataFrame) -> pd.Series:
    """Per ``traj_id`` of rows sorted by (traj_id, t): the ``done`` flag of the last step as
    1.0 / 0.0, NaN where the log does not say (or has no ``done`` column)."""
    ids = pd.Index(pd.unique(ordered["traj_id"]), name="traj_id")
    if "done" not in ordered.columns:
        return pd.Series(np.nan, index=ids)
    last = ordered.groupby("traj_id", sort=False).tail(1)
    return pd.Series(flag_values(last["done"]), index=pd.Index(last["traj_id"], name="traj_id"))


def truncated_trajectories(steps: pd.DataFrame) -> pd.Series:
    """Per ``traj_id``: True when the trajectory was cut at the step limit, that is the log has
    a ``done`` column and it is false (not missing) on the trajectory's last step."""
    done = _last_done(steps.sort_values(["traj_id", "t"], kind="stable"))
    return (done == 0.0).rename(None)


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


@dataclass(frozen=True)
class RewardScale:
    """Rewards on another scale than the rule's: no trajectory reaches the success reward, yet
    the log says which succeeded: ``by`` ``won`` (its flags mark the trajectories of one
    reward) or ``binary`` (every reward is one of two values, the top one positive: 0/1 is the
    common case). ``success_reward``: that reward, the fix; ``n_success`` of ``n_traj``
    trajectories reach it; ``read_at``: the success reward of the rule that counted none."""

    success_reward: float
    n_success: int
    n_traj: int
    by: str
    read_at: float

    def message(self) -> str:
        """What was seen and what it means, in one sentence."""
        why = "the log marks them won" if self.by == "won" else "every reward is one of two " \
            "values"
        return (f"{self.n_success} of {self.n_traj} trajectories reach reward "
                f"{self.success_reward:g} ({why}), but the outcome rule counts success at "
                f"reward {self.read_at:g}: every trajectory reads as a failure. The "
                f"rewards are on another scale: set the success reward to "
                f"{self.success_reward:g}.")

    @property
    def flag(self) -> str:
        """The fix on the command line (``g2po triage``, ``advantages``, ``validate`` …)."""
        return f"--success-reward {self.success_reward:g}"

    def fix(self) -> Fix:
        """The one-click fix: the success reward set to the scale's."""
        return Fix("success_reward", f"Set the success reward to {self.success_reward:g}",
                   self.success_reward)


def detect_reward_scale(table: pd.DataFrame, rule: OutcomeRule) -> RewardScale | None:
    """The reward scale of a log whose successes ``rule`` never counts (a 0/1 reward read
    under the paper's success reward 10), or None: when something succeeds by the rule, the
    rule is a threshold (chosen by hand), or nothing says which trajectories succeeded (all
    rewards 0; a ``won`` column marking none; graded rewards of three values or more, which
    the outcome check offers a threshold for).

    table : one row per trajectory with ``reward`` and ``won`` (1.0 / 0.0, NaN where the log
        has no flag): :func:`trajectory_outcomes`, :func:`loaders.summary.trajectory_table`.

    >>> ones = pd.DataFrame({"reward": [1.0, 0.0, 1.0], "won": np.nan})
    >>> detect_reward_scale(ones, OutcomeRule()).fix().label
    'Set the success reward to 1'
    >>> detect_reward_scale(ones, OutcomeRule(success_reward=1.0)) is None
    True
    """
    reward = table["reward"].to_numpy(dtype=np.float64)
    if rule.success_threshold is not None or not len(reward) or rule.success(reward).any():
        return None
    if "won" in table.columns and not table["won"].isna().all():
        target, by = _won_reward(table), "won"
    else:
        values = np.unique(reward[np.isfinite(reward)])
        top = float(values[-1]) if len(values) else 0.0
        two = len(values) == 2 or (len(values) == 1 and top == 1.0)  # all 1: a 0/1 group
        target, by = (top if top > 0 and two else None), "binary"
    if target is None:
        return None
    hits = int(success_mask(reward, target).sum())
    return RewardScale(float(target), hits, len(reward), by, rule.success_reward)


def success_reward_from_won(steps: pd.DataFrame) -> float | None:
    """The reward every ``won`` trajectory has, when the log marks wins and they share one
    reward that no lost trajectory has; else None."""
    return _won_reward(_trajectory_facts(steps))


def success_threshold_from_won(steps: pd.DataFrame) -> float | None:
    """The smallest reward of a ``won`` trajectory, when it is above the reward of every
    trajectory not won (so 'reward ≥ it' reproduces ``won``); else None."""
    return _won_threshold(_trajectory_facts(steps))


def success_rule_from_won(steps: pd.DataFrame) -> tuple[float, float | None] | None:
    """The success rule the log's ``won`` flags state, as (success reward, threshold): the
    reward every won trajectory has (threshold None: the equality rule), else, when won
    trajectories are rewarded unequally but above every other, the threshold that reproduces
    ``won`` with the largest won reward as the success terminal's value; None when ``won`` is
    absent or no rule reproduces it."""
    rule = rule_from_won(_trajectory_facts(steps))
    return None if rule is None else (rule.success_reward, rule.success_threshold)


def rule_from_won(table: pd.DataFrame) -> OutcomeRule | None:
    """The rule a log's ``won`` flags state, from a table of one row per trajectory with
    ``reward`` and ``won`` (NaN where the log has no flag; :func:`trajectory_outcomes` or
    :func:`loaders.summary.trajectory_table`): see :func:`success_rule_from_won`."""
    if "won" not in table.columns or table["won"].isna().all():
        return None
    reward = _won_reward(table)
    if reward is not None:
        return OutcomeRule(success_reward=reward)
    lowest = _won_threshold(table)
    if lowest is None:
        return None
    top = float(table.loc[table["won"].fillna(0).astype(bool), "reward"].max())
    return OutcomeRule(success_reward=top, success_threshold=lowest)


def check_outcomes(steps: pd.DataFrame, success_reward: float,
                   terminal: str = "binary",
                   success_threshold: float | None = None,
                   truncate_at: int | None = None) -> OutcomeCheck:
    """Compare the log's outcomes with the success rule of the estimators
    (:func:`success_mask`).

    Problems found: ``won`` disagrees with the rule; no trajectory succeeds although some
    rewards are not 0; more than two distinct rewards under the binary terminal and the
    equality rule (every reward but the success reward is then valued as failure); under the
    threshold rule, a success terminal valued above every reward seen; failures that look cut
    at a step limit the log does not state (:func:`detect_truncation`; the fix sets
    ``truncate_at``).

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
    table = trajectory_outcomes(steps, success_reward, threshold, truncate_at)
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
        scale = detect_reward_scale(table, OutcomeRule(success_reward, threshold, terminal))
        if scale is not None:
            fixes.append(scale.fix())
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
    hint = detect_truncation(table["length"].to_numpy(), table["success"].to_numpy(),
                             table["done"].to_numpy(), truncate_at)
    if hint is not None:
        problems.append(hint.message())
        fixes.append(Fix("truncate_at", f"Count length ≥ {hint.length} without success as "
                         "truncated", float(hint.length)))
    return OutcomeCheck(n_traj=n, rewards=rewards, n_success=n_success, n_won=n_won,
                        n_truncated=int(table["truncated"].sum()), success_rate=float(rate),
                        problems=problems, fixes=fixes)


def truncated_steps(steps: pd.DataFrame, ix: StepIndex, success: np.ndarray,
                    truncate_at: int | None = None) -> np.ndarray:
    """(n_steps,) bool, row-aligned with ``steps``: the step's trajectory was cut at the step
    limit (:func:`g2po.outcomes.cut_at_limit` on each trajectory's last step: ``done`` false
    there, or with ``truncate_at`` N a failure of N steps or more without ``done``).

    ix : the :class:`StepIndex` of ``steps``. success : (n_steps,) bool, the estimator's.
    """
    last = np.flatnonzero(ix.next_row < 0)
    if "done" in steps.columns:
        done = flag_values(steps["done"])[last]
    else:
        done = np.full(len(last), np.nan)
    cut = cut_at_limit(ix.length[last], done, np.asarray(success, dtype=bool)[last],
                       truncate_at)
    by_traj = np.zeros(ix.n_traj, dtype=bool)
    by_traj[ix.traj[last]] = cut
    return by_traj[ix.traj]
