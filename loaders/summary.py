"""Per-training-step and per-group summaries of a step table: the numbers a run is browsed by.

Two layers, so that a run's outcome rule can change without reading its rows again:
:func:`trajectory_table` reduces a training step's rows to one row per trajectory, independent
of any rule (logs may cache it); :func:`step_summary` and :func:`group_summary` apply a
:class:`g2po.outcomes.OutcomeRule` to it. Every page and command that shows a success rate
goes through them with the run's one rule.

A value a loader assumed rather than read is unknown here, never a number: a log without
``is_action_valid`` (its loader filled in True, :meth:`loaders.report.LoadReport.assume`) has
NaN invalid counts, and every summary over them an invalid-action rate of NaN.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from g2po.outcomes import OutcomeRule, TruncationHint, detect_truncation, flag_values

__all__ = [
    "SUMMARY_COLUMNS",
    "GROUP_SUMMARY_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "UNKNOWN_WITHOUT",
    "trajectory_table",
    "with_outcomes",
    "group_summary",
    "step_summary",
    "truncation_hint",
    "step_summaries",
]

#: Columns of ``Log.summary()``: one row per training step.
SUMMARY_COLUMNS = ["train_step", "n_groups", "n_traj", "n_steps", "mean_reward",
                   "success_rate", "mean_length", "invalid_rate", "truncated_rate"]
#: Columns of ``Log.group_summary()``: one row per group of a training step.
GROUP_SUMMARY_COLUMNS = ["group_id", "n_traj", "n_steps", "mean_reward", "success_rate",
                         "mean_length", "invalid_rate", "truncated_rate"]
#: Columns of :func:`trajectory_table` (``task`` only where the step table has one).
TRAJECTORY_COLUMNS = ["group_id", "traj_id", "length", "reward", "invalid", "won", "done"]
#: Summary column → the step-table column it is computed from, where a log may lack that
#: column (its loader then assumes a value): the summary is NaN there, never the assumed value.
UNKNOWN_WITHOUT = {"invalid_rate": "is_action_valid"}


def trajectory_table(steps: pd.DataFrame, assumed: Collection[str] = ()) -> pd.DataFrame:
    """One row per (group_id, traj_id), sorted by both, whatever the rule:

    length : (int) steps of the trajectory. reward : its episode reward. invalid : (float)
    its steps with an invalid action; NaN when ``is_action_valid`` is among ``assumed`` (the
    step-table columns a loader filled in rather than read). won : 1.0 / 0.0 from the log's
    ``won`` flag on any step, NaN where the log has no ``won`` column. done : the log's
    ``done`` on the last step (largest ``t``): 1.0 / 0.0, NaN where the log does not say.
    task : the first ``task`` of the trajectory, where the step table has that column.
    """
    if steps.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("group_id", "traj_id")
                                          else np.float64) for c in TRAJECTORY_COLUMNS})
    group_codes, group_ids = pd.factorize(steps["group_id"], sort=True)
    traj_codes, traj_ids = pd.factorize(steps["traj_id"], sort=True)
    # one code per (group, traj), in (group_id, traj_id) order
    pair = group_codes.astype(np.int64) * len(traj_ids) + traj_codes
    keys, codes = np.unique(pair, return_inverse=True)
    n = len(keys)
    t = steps["t"].to_numpy(dtype=np.int64)
    order = np.lexsort((t, codes))
    last = order[np.r_[np.flatnonzero(np.diff(codes[order])), len(order) - 1]]
    first = order[np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]]
    invalid = ~steps["is_action_valid"].to_numpy(dtype=bool)
    invalid_counts = np.bincount(codes, weights=invalid, minlength=n)
    if "is_action_valid" in assumed:
        invalid_counts = np.full(n, np.nan)
    table = pd.DataFrame({
        "group_id": group_ids.to_numpy()[keys // len(traj_ids)],
        "traj_id": traj_ids.to_numpy()[keys % len(traj_ids)],
        "length": np.bincount(codes, minlength=n).astype(np.int64),
        "reward": steps["episode_reward"].to_numpy(dtype=np.float64)[first],
        "invalid": invalid_counts,
    })
    if "won" in steps.columns and steps["won"].notna().any():
        won = np.nan_to_num(flag_values(steps["won"]), nan=0.0)
        table["won"] = (np.bincount(codes, weights=won, minlength=n) > 0).astype(np.float64)
    else:
        table["won"] = np.nan
    table["done"] = flag_values(steps["done"])[last] if "done" in steps.columns else np.nan
    if "task" in steps.columns:
        table["task"] = steps["task"].to_numpy()[first]
    return table


def with_outcomes(trajectories: pd.DataFrame, rule: OutcomeRule) -> pd.DataFrame:
    """:func:`trajectory_table` with ``success`` and ``truncated`` (bool) by ``rule``."""
    success = rule.success(trajectories["reward"].to_numpy(dtype=np.float64))
    truncated = rule.truncated(trajectories["length"].to_numpy(),
                               trajectories["done"].to_numpy(dtype=np.float64), success)
    return trajectories.assign(success=success, truncated=truncated)


def _summarise(traj: pd.DataFrame, by: str) -> pd.DataFrame:
    """The numbers of :data:`GROUP_SUMMARY_COLUMNS` per value of column ``by`` of
    :func:`with_outcomes`' table; an invalid-action rate is NaN where any count is."""
    grouped = traj.groupby(by, sort=True)
    out = grouped.agg(
        n_traj=("traj_id", "size"), n_steps=("length", "sum"), mean_reward=("reward", "mean"),
        success_rate=("success", "mean"), mean_length=("length", "mean"),
        invalid=("invalid", "sum"), truncated_rate=("truncated", "mean"),
    )
    unknown = traj["invalid"].isna().groupby(traj[by], sort=True).any()
    out["invalid_rate"] = (out.pop("invalid") / out["n_steps"]).mask(unknown)
    return out


def group_summary(trajectories: pd.DataFrame, rule: OutcomeRule) -> pd.DataFrame:
    """One row per group of one training step (:data:`GROUP_SUMMARY_COLUMNS`, and ``task``,
    the group's first task, where the table has that column), from its
    :func:`trajectory_table` under ``rule``."""
    columns = GROUP_SUMMARY_COLUMNS + (["task"] if "task" in trajectories.columns else [])
    if trajectories.empty:
        return pd.DataFrame(columns=columns)
    traj = with_outcomes(trajectories, rule)
    out = _summarise(traj, "group_id")
    if "task" in traj.columns:
        out["task"] = traj.groupby("group_id", sort=True)["task"].first()
    return out.reset_index()[columns]


def step_summary(trajectories: pd.DataFrame,
                 rule: OutcomeRule) -> dict[str, float | int]:
    """Summary of one training step (:data:`SUMMARY_COLUMNS` but ``train_step``), from its
    :func:`trajectory_table` under ``rule``."""
    if trajectories.empty:
        return {"n_groups": 0, "n_traj": 0, "n_steps": 0, "mean_reward": float("nan"),
                "success_rate": float("nan"), "mean_length": float("nan"),
                "invalid_rate": float("nan"), "truncated_rate": float("nan")}
    traj = with_outcomes(trajectories, rule)
    n_steps = int(traj["length"].sum())
    return {
        "n_groups": int(traj["group_id"].nunique()),
        "n_traj": len(traj),
        "n_steps": n_steps,
        "mean_reward": float(traj["reward"].mean()),
        "success_rate": float(traj["success"].mean()),
        "mean_length": float(traj["length"].mean()),
        "invalid_rate": float(traj["invalid"].to_numpy().sum() / n_steps),  # NaN stays NaN
        "truncated_rate": float(traj["truncated"].mean()),
    }


def truncation_hint(trajectories: pd.DataFrame,
                    rule: OutcomeRule) -> TruncationHint | None:
    """Failures that look cut at a step limit the log does not state, in a
    :func:`trajectory_table` (one training step, or several concatenated) under ``rule``:
    :func:`g2po.outcomes.detect_truncation`."""
    if trajectories.empty:
        return None
    traj = with_outcomes(trajectories, rule)
    return detect_truncation(traj["length"].to_numpy(), traj["success"].to_numpy(),
                             traj["done"].to_numpy(dtype=np.float64), rule.truncate_at)


def step_summaries(trajectories: pd.DataFrame, rule: OutcomeRule) -> pd.DataFrame:
    """:func:`step_summary` of many training steps at once (:data:`SUMMARY_COLUMNS`, one row
    per step, ascending): ``trajectories`` is the :func:`trajectory_table` of each step with
    a ``train_step`` column. One grouped pass, for logs that hold every step's table."""
    if trajectories.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    traj = with_outcomes(trajectories, rule)
    out = _summarise(traj, "train_step")
    out["n_groups"] = traj.groupby("train_step", sort=True)["group_id"].nunique()
    return out.reset_index()[SUMMARY_COLUMNS]
