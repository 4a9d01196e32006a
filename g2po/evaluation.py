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

Evaluation you can trust:

- A run validates on one **panel** (:class:`ValidationPanel`): the same tasks, in the same
  order, at every validation and after a resume, recorded in the run's manifest; a resume whose
  settings would list other tasks is refused (:meth:`ValidationPanel.check_same`).
- A validation success is a proportion over the panel's episodes: its **noise** is binomial,
  and :func:`validation_curve` gives each validation a 95 % band (Wilson's score interval, which
  stays honest at 0 % and 100 %) and a window mean over the last validations with its own band
  (the pooled proportion; the band is the sampling noise only, the policy changes within it).
- Over seeds, :func:`seed_table` adds each mean's standard error; "the best validation step" is
  biased high, by about the expected maximum of N noisy draws (:func:`best_step_bias`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
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
    "ValidationPanel",
    "PanelChangedError",
    "PANEL_KEY",
    "episodes_metric",
    "proportion_band",
    "validation_curve",
    "expected_max_normal",
    "best_step_bias",
    "Z_95",
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
#: The manifest key under which a run records its validation panel.
PANEL_KEY = "validation_panel"
#: The normal quantile of a two-sided 95 % band.
Z_95 = 1.959963984540054
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


# -- the panel -------------------------------------------------------------------------------
class PanelChangedError(ValueError):
    """A run's validation would play other tasks than the panel it recorded."""


@dataclass(frozen=True)
class ValidationPanel:
    """The fixed tasks every validation of a run plays, recorded in its manifest.

    env : the environment spec the tasks belong to.
    tasks : the task ids, in the order they are played.
    rollouts : episodes per task at each validation (verl's ``val_kwargs.n``).

    >>> panel = ValidationPanel("textworld:coin_collector-level2", ("a", "b"), rollouts=2)
    >>> panel.episodes, ValidationPanel.from_dict(panel.as_dict()) == panel
    (4, True)
    """

    env: str
    tasks: tuple[str, ...]
    rollouts: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(str(t) for t in self.tasks))
        if not self.tasks:
            raise ValueError("a validation panel needs at least one task")
        if len(set(self.tasks)) != len(self.tasks):
            repeated = sorted({t for t in self.tasks if self.tasks.count(t) > 1})
            raise ValueError(f"a validation panel lists each task once; repeated: "
                             f"{', '.join(repeated[:5])}")
        if int(self.rollouts) < 1:
            raise ValueError(f"rollouts per validation task must be >= 1, got {self.rollouts}")

    @property
    def episodes(self) -> int:
        """Episodes of one validation: its size, which sets its noise."""
        return len(self.tasks) * int(self.rollouts)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready, as a manifest records it (under :data:`PANEL_KEY`)."""
        return {"env": self.env, "tasks": list(self.tasks), "rollouts": int(self.rollouts),
                "episodes": self.episodes}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ValidationPanel:
        """The panel a manifest recorded (:meth:`as_dict`)."""
        try:
            return cls(str(data["env"]), tuple(data["tasks"]), int(data.get("rollouts", 1)))
        except (KeyError, TypeError) as err:
            raise ValueError(f"a recorded validation panel needs env, tasks and rollouts "
                             f"({err})") from None

    def check_same(self, recorded: Mapping[str, object] | None, where: str) -> None:
        """Refuse (:class:`PanelChangedError`) to go on when ``recorded`` (a manifest's
        :data:`PANEL_KEY`; None: none recorded yet) is another panel: a run's validations must
        stay comparable."""
        if recorded is None:
            return
        before = ValidationPanel.from_dict(recorded)
        if before == self:
            return
        if before.env != self.env or before.rollouts != self.rollouts:
            what = (f"environment {before.env!r} x {before.rollouts} episode(s) per task, now "
                    f"{self.env!r} x {self.rollouts}")
        else:
            gone = [t for t in before.tasks if t not in self.tasks]
            new = [t for t in self.tasks if t not in before.tasks]
            what = (f"{len(gone)} task(s) left out (first: {gone[:3]}), {len(new)} new (first: "
                    f"{new[:3]})" if gone or new else "the same tasks in another order")
        raise PanelChangedError(
            f"{where}: the run validated on another panel of tasks ({what}); its validations "
            "would not be comparable. Resume with the settings that listed the recorded panel "
            "(val_env, val_tasks, val_seed), or start a new run")


# -- noise -----------------------------------------------------------------------------------
def episodes_metric(metric: str) -> str | None:
    """The episode count a validation success metric is a proportion of, else None.

    >>> episodes_metric("val/success/pick_and_place_simple"), episodes_metric("val/score")
    ('val/episodes/pick_and_place_simple', None)
    """
    parts = metric.split("/")
    if len(parts) >= 2 and parts[0] == VAL_PREFIX and parts[1] == "success":
        return "/".join([VAL_PREFIX, "episodes", *parts[2:]])
    return None


def proportion_band(p: np.ndarray, n: np.ndarray, z: float = Z_95
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The noise of success proportions ``p`` (n_points,) over ``n`` episodes each: the
    standard error sqrt(p(1-p)/n) and Wilson's score interval (low, high) at ``z`` (95 %).
    Wilson's interval, unlike p ± z·SE, is not empty at 0 % or 100 %: 8 of 8 episodes won
    still leaves the true rate anywhere above 68 %.

    >>> se, low, high = proportion_band(np.array([1.0]), np.array([8]))
    >>> float(se[0]), round(float(low[0]), 3), float(high[0])
    (0.0, 0.676, 1.0)
    """
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(p * (1.0 - p) / n)
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    return se, np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


#: The columns of :func:`validation_curve`.
CURVE_COLUMNS = ["train_step", "value", "episodes", "se", "low", "high", "window_mean",
                 "window_episodes", "window_low", "window_high"]


def validation_curve(metrics: pd.DataFrame, metric: str = "val/success", window: int = 3,
                     z: float = Z_95) -> pd.DataFrame:
    """A validation success curve with its noise: per validation (rows of ``metrics``, a run's
    ``train_step`` + metric columns, where ``metric`` is logged), the value, its episode count
    (the metric's :func:`episodes_metric` column), standard error and 95 % band
    (:func:`proportion_band`), and the mean of the last ``window`` validations with its band
    (pooled over their episodes). Columns :data:`CURVE_COLUMNS`; raises ``ValueError`` when
    ``metric`` is no success proportion or its episode counts were not logged.

    >>> m = pd.DataFrame({"train_step": [5, 10, 15], "val/success": [0.25, 0.5, 0.75],
    ...                   "val/episodes": [16, 16, 16]})
    >>> curve = validation_curve(m, window=2)
    >>> curve["window_mean"].tolist(), round(float(curve["se"].iloc[1]), 3)
    ([0.25, 0.375, 0.625], 0.125)
    """
    if window < 1:
        raise ValueError(f"the window holds at least one validation, got {window}")
    count = episodes_metric(metric)
    if count is None:
        raise ValueError(f"{metric!r} is not a validation success proportion (val/success…)")
    missing = [c for c in ("train_step", metric, count) if c not in metrics.columns]
    if missing:
        raise ValueError(f"the metrics lack {', '.join(missing)}: a noise band needs each "
                         "validation's success and its episode count")
    part = pd.DataFrame({
        "train_step": pd.to_numeric(metrics["train_step"], errors="coerce"),
        "value": pd.to_numeric(metrics[metric], errors="coerce"),
        "episodes": pd.to_numeric(metrics[count], errors="coerce")})
    part = part.dropna().query("episodes > 0").sort_values("train_step", kind="stable")
    part = part.drop_duplicates("train_step", keep="last").reset_index(drop=True)
    part["train_step"] = part["train_step"].astype(np.int64)
    part["se"], part["low"], part["high"] = proportion_band(part["value"], part["episodes"], z)
    wins = (part["value"] * part["episodes"]).rolling(window, min_periods=1).sum()
    total = part["episodes"].rolling(window, min_periods=1).sum()
    part["window_mean"] = wins / total
    part["window_episodes"] = total
    _, part["window_low"], part["window_high"] = proportion_band(part["window_mean"], total, z)
    return part[CURVE_COLUMNS]


def expected_max_normal(n: int) -> float:
    """E[max of ``n`` independent standard normal draws]: how far, in standard errors, the best
    of ``n`` equally good validations lands above their true value (0 for one; 1.54 for 10;
    2.04 for 30). Numerically, on a fine grid.

    >>> round(expected_max_normal(2), 4), round(expected_max_normal(10), 3)
    (0.5642, 1.539)
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n == 1:
        return 0.0
    x = np.linspace(-12.0, 12.0, 48_001)
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    density = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    integrand = x * n * density * cdf ** (n - 1)
    return float(np.sum(integrand) * (x[1] - x[0]))


def best_step_bias(success: float, episodes: int, n_validations: int) -> float:
    """How much "the best of ``n_validations`` validations" overstates a success rate
    ``success`` measured on ``episodes`` episodes each, in the same units: the panel's standard
    error times :func:`expected_max_normal` — exact when the validations differ by noise alone
    (a plateau), an upper bound of the noise's share otherwise.

    >>> round(best_step_bias(0.5, 100, 10), 4)
    0.0769
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    se = math.sqrt(max(success * (1.0 - success), 0.0) / episodes)
    return se * expected_max_normal(int(n_validations))


# -- over seeds ------------------------------------------------------------------------------
def seed_table(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (over seeds, ``ddof=1``; NaN for one seed), standard error of the mean
    (std/√n) and seed count of every metric, per (env, estimator); for a success proportion
    whose episode counts the results hold, also ``panel_se``: one run's own validation noise
    (sqrt(p(1-p)/episodes), averaged over the runs), the part of the spread over seeds that a
    bigger panel would remove. ``results`` has one row per run: ``env``, ``estimator``,
    ``seed`` and the metric columns (:func:`evaluation_metrics`' names). Returns a long table:
    ``env``, ``estimator``, ``metric``, ``mean``, ``std``, ``se``, ``n``, ``panel_se``."""
    for column in ("env", "estimator", "seed"):
        if column not in results.columns:
            raise ValueError(f"the seed results need a {column!r} column")
    metrics = [c for c in results.columns if c.startswith(VAL_PREFIX + "/")]
    noise = {}
    for metric in metrics:
        count = episodes_metric(metric)
        if count in results.columns:
            se, _, _ = proportion_band(results[metric], results[count])
            noise[metric] = pd.Series(se, index=results.index)
    panel = pd.DataFrame(noise, index=results.index).reindex(columns=metrics)
    keys = ["env", "estimator", "seed"]
    long = results.melt(id_vars=keys, value_vars=metrics, var_name="metric",
                        value_name="value")
    long["panel_se"] = pd.concat([results[keys], panel], axis=1).melt(
        id_vars=keys, value_vars=metrics, value_name="panel_se")["panel_se"].to_numpy()
    long = long.dropna(subset=["value"])
    stats = long.groupby(["env", "estimator", "metric"], sort=False) \
        .agg(mean=("value", "mean"),
             std=("value", lambda v: v.std(ddof=1) if len(v) > 1 else np.nan),
             n=("value", "size"), panel_se=("panel_se", "mean"))
    stats.insert(2, "se", stats["std"] / np.sqrt(stats["n"]))
    return stats.reset_index()[["env", "estimator", "metric", "mean", "std", "se", "n",
                                "panel_se"]]


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
    ``mean ± std (SE se)`` in percent (the mean alone for one seed), and the seed count
    ``n``."""
    stats = seed_table(results)
    rows = []
    order = [*TASK_TYPE_LABELS.values(), "All", "Score", "Succ."]
    for (env, estimator), part in stats.groupby(["env", "estimator"], sort=False):
        row: dict[str, object] = {"env": env, "estimator": estimator,
                                  "n": int(part["n"].max())}
        for metric, mean, std, se in part[["metric", "mean", "std", "se"]].itertuples(
                index=False):
            heading = _column(metric, graded_env(env))
            if heading is not None:
                cell = f"{100 * mean:.1f}"
                row[heading] = cell if np.isnan(std) else \
                    f"{cell} ± {100 * std:.1f} (SE {100 * se:.1f})"
        rows.append(row)
    table = pd.DataFrame(rows)
    present = [c for c in order if c in table.columns]
    return table[["env", "estimator", *present, "n"]].fillna("–")


def _escape(text: str) -> str:
    """Names from run manifests as markdown text (no emphasis, link, HTML or table cell
    break)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _noise_notes(results: pd.DataFrame, env: str) -> list[str]:
    """What the table's success numbers carry besides the policy: one validation's noise (its
    episodes), and the bias of reporting each run's best validation step (``best_bias``)."""
    part = results[results["env"] == env]
    notes = []
    episodes = part.get(metric_name("episodes"), pd.Series(dtype=float)).dropna()
    if len(episodes):
        stats = seed_table(part)
        noise = stats.loc[stats["metric"] == metric_name("success"), "panel_se"].mean()
        few = int(episodes.min())
        notes.append(f"Each validation plays {few}"
                     f"{'' if few == int(episodes.max()) else f'–{int(episodes.max())}'} "
                     f"episodes: one run's success carries a standard error of "
                     f"{100 * noise:.1f} points here (up to {50 / math.sqrt(few):.1f} at 50 %).")
    if "best_bias" in part.columns and part["best_bias"].notna().any():
        n_val = part["n_validations"].dropna().astype(int)
        count = f"{n_val.min()}" if n_val.min() == n_val.max() else \
            f"{n_val.min()}–{n_val.max()}"
        notes.append(
            f"Each run reports its best of {count} validations: biased high by about "
            f"{100 * part['best_bias'].mean():.1f} points of success (the expected maximum of "
            "that many noisy draws at one validation's noise); the last validation is not.")
    return notes


def summary_markdown(results: pd.DataFrame) -> str:
    """:func:`summary_table` as markdown, one table per environment (their columns differ),
    each followed by its noise notes (:func:`_noise_notes`)."""
    table = summary_table(results)
    parts = []
    for env, part in table.groupby("env", sort=False):
        part = part.drop(columns="env").replace("–", np.nan).dropna(axis=1, how="all") \
            .fillna("–")
        header = "| " + " | ".join(part.columns) + " |"
        rule = "|" + "|".join(["---"] + ["---:"] * (len(part.columns) - 1)) + "|"
        lines = ["| " + " | ".join(_escape(str(v)) for v in row) + " |"
                 for row in part.itertuples(index=False)]
        notes = _noise_notes(results, env)
        parts.append("\n".join([f"### {_escape(str(env))}", "", header, rule, *lines,
                                *([""] + notes if notes else [])]))
    return "\n\n".join(parts) + "\n"
