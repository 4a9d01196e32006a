"""Which registered estimator, with which parameters, explains a set of advantages best.

Given the advantage a trainer recorded per step, :func:`fit_credit` runs every registered
estimator over a small grid of its main parameters (γ, w / ω, normalisation mode, penalty;
:data:`GRID`, plus each estimator's own default and the run's values) on the same rows, and
scores each candidate per group by the share of recorded steps it reproduces (within the
audit's tolerance, :func:`close`), then by the mean absolute difference. Each estimator checks
and indexes the table once (:func:`g2po.estimators.estimate`, the code the app and the trainers
run), then each of its candidates is one call of its function over all the groups at once. A
group is *explained* when its best candidate reproduces every recorded step.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.errors import G2POError
from g2po.estimators import (
    estimate,
    estimator_params,
    get_estimator,
    list_estimators,
    shared_params,
    step_columns,
)
from g2po.index import StepIndex
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.segments import NORM_MODES
from g2po.steps import REQUIRED_COLUMNS

__all__ = ["GRID", "ATOL", "RTOL", "Candidate", "candidates", "close", "group_keys",
           "estimator_input", "fit_credit", "FIT_COLUMNS"]

#: The values tried of each main parameter an estimator takes (with its default and the
#: run's value added).
GRID: dict[str, tuple] = {
    "gamma": (0.9, 0.95, 0.99, 1.0),
    "w": (0.5, 0.8, 1.0),
    "omega": (0.5, 0.8, 1.0),
    "mode": NORM_MODES,
    "penalty": (0.0, 0.1),
}
#: A recorded value r equals a recomputed c when |r − c| ≤ ATOL + RTOL·|c|: float32 storage
#: (relative 6e-8) and float32 arithmetic in a trainer (~1e-6) pass, real defects do not.
ATOL = 1e-4
RTOL = 1e-4
#: The columns :func:`fit_credit` adds per group.
FIT_COLUMNS = ["best_fit", "fit_match", "fit_error", "explained"]


@dataclass(frozen=True)
class Candidate:
    """One estimator with values for its grid parameters (the others at their defaults)."""

    estimator: str
    params: tuple[tuple[str, object], ...] = ()

    def kwargs(self, rule: OutcomeRule) -> dict:
        """What :func:`estimate` takes: the grid values and the run's outcome rule."""
        return {**shared_params(self.estimator, rule.estimator_kwargs()), **dict(self.params)}

    def describe(self) -> str:
        """``g2po(gamma=0.9, w=1, mode=mean_norm, penalty=0.1)``."""
        shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in self.params)
        return f"{self.estimator}({shown})"


def close(recorded: np.ndarray, recomputed: np.ndarray, atol: float = ATOL,
          rtol: float = RTOL) -> np.ndarray:
    """(n,) bool: recorded values equal to the recomputed ones within the tolerance (NaN and
    inf never are)."""
    return np.abs(recorded - recomputed) <= atol + rtol * np.abs(recomputed)


def candidates(rule: OutcomeRule, params: G2POParams,
               estimators: Iterable[str] | None = None) -> list[Candidate]:
    """Every registered estimator (or those named) over :data:`GRID`: each parameter it takes
    of the grid tried at the grid's values, its own default and ``params``' value where it
    takes that parameter with G2PO's meaning (:meth:`G2POParams.for_estimator`)."""
    out = []
    for name in estimators or list_estimators():
        own = estimator_params(name)
        run = params.for_estimator(name, rule)
        axes = []
        for key, values in GRID.items():
            if key not in own:
                continue
            if own[key] not in values and key not in run:  # another quantity (GraphGPO's γ)
                axes.append((key, (own[key],)))
                continue
            tried = dict.fromkeys((*values, own[key], *([run[key]] if key in run else [])))
            axes.append((key, tuple(tried)))
        for combo in itertools.product(*(values for _, values in axes)):
            out.append(Candidate(name, tuple(zip((k for k, _ in axes), combo, strict=True))))
    return out


def estimator_input(steps: pd.DataFrame) -> pd.DataFrame:
    """Only the columns an estimator reads (the required ones, ``train_step``, ``step_reward``
    and the step columns registered estimators declare, where present): text columns such as
    observations are not validated again on every call."""
    return steps[[c for c in (*REQUIRED_COLUMNS, "train_step", "step_reward", *step_columns())
                  if c in steps.columns]]


def group_keys(steps: pd.DataFrame, ix: StepIndex) -> pd.DataFrame:
    """(n_groups,) rows: ``train_step`` (0 where the table has none, as in the groups table)
    and ``group_id`` of each group code of ``ix``, in code order."""
    first = np.full(ix.n_groups, len(ix.group), dtype=np.int64)
    np.minimum.at(first, ix.group, np.arange(len(ix.group), dtype=np.int64))
    step = steps["train_step"].to_numpy(dtype=np.int64)[first] if "train_step" in steps \
        else np.zeros(ix.n_groups, dtype=np.int64)
    return pd.DataFrame({"train_step": step,
                         "group_id": steps["group_id"].iloc[first].to_numpy()})


def _scores(recorded: np.ndarray, adv: np.ndarray, ix: StepIndex, atol: float, rtol: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the share of recorded steps ``adv`` reproduces, the mean |recorded − adv|."""
    has = ~np.isnan(recorded)
    n = np.bincount(ix.group, weights=has, minlength=ix.n_groups)
    hit = np.bincount(ix.group, weights=has & close(recorded, adv, atol, rtol),
                      minlength=ix.n_groups)
    diff = np.where(has, np.abs(np.nan_to_num(recorded - adv, nan=0.0, posinf=1e300,
                                              neginf=1e300)), 0.0)
    err = np.bincount(ix.group, weights=diff, minlength=ix.n_groups)
    return hit / np.maximum(n, 1), err / np.maximum(n, 1)


def fit_credit(steps: pd.DataFrame, recorded: np.ndarray, *, rule: OutcomeRule,
               params: G2POParams, tried: Sequence[Candidate] | None = None,
               atol: float = ATOL, rtol: float = RTOL) -> pd.DataFrame:
    """Per group of ``steps``, the candidate (default: :func:`candidates`) that explains the
    ``recorded`` (n_steps,) float64 advantages (NaN: not recorded) best.

    Returns one row per group: ``train_step`` (0 where absent), ``group_id``, ``best_fit``
    (:meth:`Candidate.describe`), ``fit_match`` (share of its recorded steps reproduced),
    ``fit_error`` (mean |recorded − fit|) and ``explained`` (every recorded step reproduced).
    Candidates that cannot run on the table (a parameter out of range, a user's estimator
    with a parameter that has no default) are skipped.
    """
    tried = list(tried if tried is not None else candidates(rule, params))
    steps = estimator_input(steps)
    ix = None
    indexed: dict[str, StepIndex] = {}  # each estimator's index, built (and checked) once
    best_match = best_err = best = None
    for number, cand in enumerate(tried):
        try:
            if cand.estimator in indexed:  # the table is checked: its other parameter sets
                columns = get_estimator(cand.estimator)(indexed[cand.estimator],
                                                        **cand.kwargs(rule))
            else:
                columns, indexed[cand.estimator] = estimate(
                    steps, cand.estimator, state_key=params.state_key, **cand.kwargs(rule))
            ix = indexed[cand.estimator]
        except (ValueError, TypeError, G2POError):  # a parameter out of range, or one that a
            continue                                  # user's estimator needs without default
        match, err = _scores(recorded, np.asarray(columns["adv"], dtype=np.float64), ix,
                             atol, rtol)
        if best is None:
            best_match, best_err = match, err
            best = np.full(ix.n_groups, number, dtype=np.int64)
            continue
        better = (match > best_match) | ((match == best_match) & (err < best_err))
        best_match = np.where(better, match, best_match)
        best_err = np.where(better, err, best_err)
        best = np.where(better, number, best)
    if ix is None or best is None:
        raise ValueError("no candidate estimator could run on these steps")
    names = np.array([c.describe() for c in tried], dtype=object)
    return group_keys(steps, ix).assign(best_fit=names[best], fit_match=best_match,
                                        fit_error=best_err, explained=best_match >= 1.0)
