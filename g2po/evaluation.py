"""Evaluation as the paper's Table 1 reports it: success per ALFWorld task type and overall,
WebShop's score and success, and the mean ± std over seeds.

One rule, one place: the trainers' validation (local and verl), ``g2po seeds`` and any page that
shows validation read the metric names and values from here.

- An **episode** is one trajectory of the validation rows; it succeeds by the run's
  :class:`~g2po.outcomes.OutcomeRule` (the rule the estimators and every summary use).
- Its **ALFWorld task type** is the one its task id names (``pick_heat_then_place_in_recep-…``
  of a downloaded game, ``valid_seen/pick_heat_then_place_in_recep-s3`` of a generated one),
  read from the ``task`` column (the verl backend's rows) or else the ``group_id`` (the local
  collector's group is its task id).
- Its **WebShop score** is the environment's own reward summed over the episode
  (``step_reward``: WebShop pays its [0, 1] purchase score on the last step); Table 1 shows its
  mean × 100.

Metric names (:func:`metric_name`): ``val/success``, ``val/success/<task type>``, ``val/score``,
``val/episodes`` and ``val/episodes/<task type>``; success and score are fractions (the tables
show percentages, as the paper).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from g2po.envs.alfworld_games import TASK_TYPES
from g2po.outcomes import OutcomeRule

__all__ = [
    "ALFWORLD_TASK_TYPES",
    "TASK_TYPE_LABELS",
    "VAL_PREFIX",
    "VALIDATION_SUFFIX",
    "metric_name",
    "alfworld_task_types",
    "graded_env",
    "episode_table",
    "evaluation_metrics",
    "validation_dir",
    "seed_table",
    "summary_table",
    "summary_markdown",
]

#: ALFWorld's six task types, in ALFWorld's order (the paper's Table 1 columns).
ALFWORLD_TASK_TYPES: tuple[str, ...] = TASK_TYPES
#: The paper's column headings of the task types.
TASK_TYPE_LABELS = {
    "pick_and_place_simple": "Pick",
    "look_at_obj_in_light": "Look",
    "pick_clean_then_place_in_recep": "Clean",
    "pick_heat_then_place_in_recep": "Heat",
    "pick_cool_then_place_in_recep": "Cool",
    "pick_two_obj_and_place": "Pick2",
}
VAL_PREFIX = "val"
#: The validation run of training run ``runs/x`` is ``runs/x-val``.
VALIDATION_SUFFIX = "-val"
#: Environment families whose reward is a graded score (reported as ``score``).
GRADED_FAMILIES = ("webshop",)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|!#~])")
_TYPE_RE = re.compile(r"(?:^|/)(" + "|".join(map(re.escape, ALFWORLD_TASK_TYPES)) + r")(?=-|/|$)")


def metric_name(measure: str, task_type: str | None = None, prefix: str = VAL_PREFIX) -> str:
    """The one name of an evaluation metric: ``measure`` is ``success``, ``score`` or
    ``episodes``; with ``task_type``, that ALFWorld task type's.

    >>> metric_name("success"), metric_name("success", "pick_two_obj_and_place")
    ('val/success', 'val/success/pick_two_obj_and_place')
    """
    if measure not in ("success", "score", "episodes"):
        raise ValueError(f"evaluation measure must be success, score or episodes, got "
                         f"{measure!r}")
    if task_type is not None and task_type not in ALFWORLD_TASK_TYPES:
        raise ValueError(f"{task_type!r} is not an ALFWorld task type "
                         f"({', '.join(ALFWORLD_TASK_TYPES)})")
    return "/".join([prefix, measure] + ([task_type] if task_type else []))


def alfworld_task_types(ids: pd.Series) -> pd.Series:
    """Per id, the ALFWorld task type it names as a path part's prefix, else None.

    >>> alfworld_task_types(pd.Series(["valid_seen/pick_two_obj_and_place-s3",
    ...     "look_at_obj_in_light-Book-None-DeskLamp-308/trial_T1", "coin-1"])).tolist()
    ['pick_two_obj_and_place', 'look_at_obj_in_light', None]
    """
    found = ids.astype(str).str.extract(_TYPE_RE, expand=False)
    return found.astype(object).where(found.notna(), None)


def graded_env(env: str | None) -> bool:
    """Whether an environment spec's family pays a graded score (WebShop)."""
    return bool(env) and str(env).partition(":")[0] in GRADED_FAMILIES


def episode_table(steps: pd.DataFrame, rule: OutcomeRule) -> pd.DataFrame:
    """One row per episode (trajectory) of a step table: ``group_id``, ``traj_id``, ``env``
    (None where the rows do not say), ``task_type`` (ALFWorld's, else None), ``success`` (by
    ``rule``), ``score`` (the summed ``step_reward``; NaN without that column) and
    ``length``."""
    keys = ["group_id", "traj_id"]
    missing = [c for c in (*keys, "episode_reward") if c not in steps.columns]
    if missing:
        raise ValueError(f"evaluation needs the step columns {', '.join(missing)}")
    grouped = steps.groupby(keys, sort=False)
    out = grouped.agg(episode_reward=("episode_reward", "first"),
                      length=("episode_reward", "size")).reset_index()
    out["env"] = grouped["env"].first().to_numpy() if "env" in steps.columns else None
    types = alfworld_task_types(out["group_id"])
    if "task" in steps.columns:
        types = alfworld_task_types(grouped["task"].first().reset_index(drop=True)) \
            .combine_first(types)
    out["task_type"] = types.to_numpy()
    out["success"] = rule.success(out["episode_reward"].to_numpy())
    out["score"] = grouped["step_reward"].sum().to_numpy(dtype=np.float64) \
        if "step_reward" in steps.columns else np.nan
    return out.drop(columns="episode_reward")


def evaluation_metrics(steps: pd.DataFrame, rule: OutcomeRule, *, env: str | None = None,
                       prefix: str = VAL_PREFIX) -> dict[str, float]:
    """The evaluation metrics of validation rows (names by :func:`metric_name`).

    Always ``success`` and ``episodes``; per ALFWorld task type where the episodes' task ids
    name one; ``score`` for a graded environment (WebShop: ``env``, or the rows' ``env``
    column) whose rows carry ``step_reward``.

    >>> rows = pd.DataFrame({"group_id": ["train/pick_and_place_simple-s0"] * 2,
    ...     "traj_id": ["a", "b"], "t": 0, "episode_reward": [10.0, 0.0]})
    >>> evaluation_metrics(rows, OutcomeRule())["val/success/pick_and_place_simple"]
    0.5
    """
    episodes = episode_table(steps, rule)
    if episodes.empty:
        raise ValueError("evaluation needs at least one episode; the validation rows are empty")
    out = {metric_name("success", prefix=prefix): float(episodes["success"].mean()),
           metric_name("episodes", prefix=prefix): float(len(episodes))}
    typed = episodes.dropna(subset=["task_type"])
    for task_type, part in typed.groupby("task_type", sort=False):
        out[metric_name("success", task_type, prefix)] = float(part["success"].mean())
        out[metric_name("episodes", task_type, prefix)] = float(len(part))
    envs = {env} if env else set(episodes["env"].dropna().astype(str))
    if any(graded_env(e) for e in envs) and episodes["score"].notna().all():
        out[metric_name("score", prefix=prefix)] = float(episodes["score"].mean())
    return out


def validation_dir(run_dir: str | Path) -> Path:
    """Where a training run's validation rollouts go: a run directory beside it
    (``runs/x`` -> ``runs/x-val``), in the same format, so the app opens it as a run whose
    training steps are the steps validated after (0: before training).

    >>> validation_dir("runs/alfworld-g2po").as_posix()
    'runs/alfworld-g2po-val'
    """
    path = Path(run_dir)
    if not path.name:
        raise ValueError(f"{run_dir!r} names no run directory")
    return path.with_name(path.name + VALIDATION_SUFFIX)


# -- over seeds ------------------------------------------------------------------------------
def seed_table(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (over seeds, ``ddof=1``; NaN for one seed) and seed count of every metric, per
    (env, estimator). ``results`` has one row per run: ``env``, ``estimator``, ``seed`` and
    the metric columns (:func:`evaluation_metrics`' names). Returns a long table: ``env``,
    ``estimator``, ``metric``, ``mean``, ``std``, ``n``."""
    for column in ("env", "estimator", "seed"):
        if column not in results.columns:
            raise ValueError(f"the seed results need a {column!r} column")
    metrics = [c for c in results.columns if c.startswith(VAL_PREFIX + "/")]
    long = results.melt(id_vars=["env", "estimator", "seed"], value_vars=metrics,
                        var_name="metric", value_name="value").dropna(subset=["value"])
    stats = long.groupby(["env", "estimator", "metric"], sort=False)["value"] \
        .agg(mean="mean", std=lambda v: v.std(ddof=1) if len(v) > 1 else np.nan, n="size")
    return stats.reset_index()


def _column(metric: str, graded: bool) -> str | None:
    """The Table-1 heading of a metric (None: not a column of the table)."""
    parts = metric.split("/")
    if len(parts) == 3 and parts[1] == "success":
        return TASK_TYPE_LABELS.get(parts[2])
    if metric == metric_name("success"):
        return "Succ." if graded else "All"
    if metric == metric_name("score"):
        return "Score"
    return None


def summary_table(results: pd.DataFrame) -> pd.DataFrame:
    """Table 1's layout: one row per (env, estimator), a column per task type then overall
    success (ALFWorld: Pick … Pick2, All) or Score and Succ. (WebShop), each cell
    ``mean ± std`` in percent (the mean alone for one seed), and the seed count ``n``."""
    stats = seed_table(results)
    rows = []
    order = [*TASK_TYPE_LABELS.values(), "All", "Score", "Succ."]
    for (env, estimator), part in stats.groupby(["env", "estimator"], sort=False):
        row: dict[str, object] = {"env": env, "estimator": estimator,
                                  "n": int(part["n"].max())}
        for metric, mean, std in part[["metric", "mean", "std"]].itertuples(index=False):
            heading = _column(metric, graded_env(env))
            if heading is not None:
                cell = f"{100 * mean:.1f}"
                row[heading] = cell if np.isnan(std) else f"{cell} ± {100 * std:.1f}"
        rows.append(row)
    table = pd.DataFrame(rows)
    present = [c for c in order if c in table.columns]
    return table[["env", "estimator", *present, "n"]].fillna("–")


def _escape(text: str) -> str:
    """Names from run manifests as markdown text (no emphasis, link, HTML or table cell
    break)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def summary_markdown(results: pd.DataFrame) -> str:
    """:func:`summary_table` as markdown, one table per environment (their columns differ)."""
    table = summary_table(results)
    parts = []
    for env, part in table.groupby("env", sort=False):
        part = part.drop(columns="env").replace("–", np.nan).dropna(axis=1, how="all") \
            .fillna("–")
        header = "| " + " | ".join(part.columns) + " |"
        rule = "|" + "|".join(["---"] + ["---:"] * (len(part.columns) - 1)) + "|"
        lines = ["| " + " | ".join(_escape(str(v)) for v in row) + " |"
                 for row in part.itertuples(index=False)]
        parts.append("\n".join([f"### {_escape(str(env))}", "", header, rule, *lines]))
    return "\n\n".join(parts) + "\n"
