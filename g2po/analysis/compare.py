"""Several estimators on one group, side by side: the per-step table, rank correlations and the
steps where two estimators disagree in sign (where graph credit differs from outcome credit)."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from g2po.errors import G2POError
from g2po.estimators import compute_advantages, get_estimator
from g2po.segments import NORM_MODES

__all__ = ["Comparison", "compare_estimators", "rank_correlation", "sign_disagreements",
           "zscore", "parameter_choices", "DEFAULT_ESTIMATORS", "KNOWN_CHOICES"]

DEFAULT_ESTIMATORS = ("g2po", "grpo", "gigpo")
#: Choices of text parameters whose annotation does not list them (a user's estimator
#: annotating ``mode: str``): the spec's normalisation modes and terminal rules.
KNOWN_CHOICES: dict[str, tuple[str, ...]] = {"mode": NORM_MODES,
                                             "terminal": ("binary", "reward")}
_KEY = ["traj_id", "t"]


def parameter_choices(name: str) -> dict[str, tuple]:
    """Parameter → its allowed values, for an estimator's parameters that take one of a few:
    from a ``Literal[...]`` annotation (``mode: NormMode``), else :data:`KNOWN_CHOICES` for a
    text parameter of a known name. Parameters taking any number or text are left out."""
    fn = get_estimator(name)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # a user's estimator with unresolvable annotations: fall back on names
        hints = {}
    out: dict[str, tuple] = {}
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        hint = hints.get(param.name)
        if typing.get_origin(hint) is typing.Literal:
            out[param.name] = tuple(typing.get_args(hint))
        elif param.name in KNOWN_CHOICES and (param.default is inspect.Parameter.empty or
                                              isinstance(param.default, str)):
            out[param.name] = KNOWN_CHOICES[param.name]
    return out


@dataclass
class Comparison:
    """``table``: one row per step (traj_id, t, action, the step's text, episode_reward, valid)
    plus one float column per estimator that ran, named by the estimator; ``text_column``: the
    name of the text column, ``observation`` (what the policy saw) where the log has one, else
    ``state_key``; ``errors``: estimator name → message for those that could not run on this
    group; ``params``: what each ran with."""

    table: pd.DataFrame
    estimators: list[str]
    errors: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)
    text_column: str = "state_key"


def compare_estimators(
    steps: pd.DataFrame,
    estimators: list[str],
    params: dict[str, dict] | None = None,
    state_key: str = "exact",
) -> Comparison:
    """Run each estimator on the group's ``steps`` with ``params[name]`` (keyword arguments)
    and collect its ``adv`` column. An estimator that fails (a parameter out of its range, a
    user estimator raising) is reported in ``errors`` instead of stopping the others."""
    params = params or {}
    ordered = steps.sort_values(_KEY, kind="stable").reset_index(drop=True)
    text_col = "observation" if "observation" in ordered.columns else "state_key"
    table = pd.DataFrame({
        "traj_id": ordered["traj_id"].to_numpy(),
        "t": ordered["t"].to_numpy(),
        "action": ordered["action"].to_numpy(),
        text_col: ordered[text_col].to_numpy(),
        "episode_reward": ordered["episode_reward"].to_numpy(dtype=np.float64),
        "valid": ordered["is_action_valid"].to_numpy(dtype=bool),
    })
    ran, errors = [], {}
    for name in estimators:
        kwargs = dict(params.get(name, {}))
        try:
            out = compute_advantages(ordered, name, state_key=state_key, prefix="__",
                                     **kwargs)
        except (G2POError, ValueError, TypeError, KeyError, ArithmeticError) as err:
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        table[name] = out["__adv"].to_numpy(dtype=np.float64)
        ran.append(name)
    return Comparison(table=table, estimators=ran, errors=errors,
                      params={n: dict(params.get(n, {})) for n in estimators},
                      text_column=text_col)


def zscore(table: pd.DataFrame, estimators: list[str]) -> pd.DataFrame:
    """A copy of ``table`` with each estimator's column z-scored over the group's steps
    (mean 0, population std 1), so estimators on very different scales compare by shape. A
    constant column becomes 0. For display: signs change with the mean, so sign comparisons
    use the raw values."""
    out = table.copy()
    for name in estimators:
        values = out[name].to_numpy(dtype=np.float64)
        std = values.std()
        out[name] = (values - values.mean()) / std if std > 1e-12 else np.zeros_like(values)
    return out


def rank_correlation(table: pd.DataFrame, estimators: list[str],
                     method: str = "spearman") -> pd.DataFrame:
    """Rank correlation (``spearman`` or ``kendall``) between the estimators' per-step
    advantages, (k, k). NaN where an estimator is constant on the group (no ranking)."""
    if method not in ("spearman", "kendall"):
        raise ValueError(f"method must be 'spearman' or 'kendall', got {method!r}")
    return table[estimators].corr(method=method)


def sign_disagreements(table: pd.DataFrame, a: str, b: str, tol: float = 1e-9) -> pd.DataFrame:
    """Steps where ``a`` and ``b`` push in opposite directions (one > tol, the other < −tol),
    largest gap first. A zero advantage has no sign and never disagrees."""
    x = table[a].to_numpy(dtype=np.float64)
    y = table[b].to_numpy(dtype=np.float64)
    sx = np.where(x > tol, 1, np.where(x < -tol, -1, 0))
    sy = np.where(y > tol, 1, np.where(y < -tol, -1, 0))
    mask = sx * sy < 0
    text = [c for c in ("observation", "state_key") if c in table.columns][:1]
    out = table.loc[mask, ["traj_id", "t", "action", *text, "episode_reward", a, b]].copy()
    out["gap"] = np.abs(x[mask] - y[mask])
    return out.sort_values(["gap", "traj_id", "t"], ascending=[False, True, True]
                           ).reset_index(drop=True)
