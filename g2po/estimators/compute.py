"""Run a registered estimator on a step table: :func:`estimate` and :func:`compute_advantages`,
the one public entry point every caller (app, CLI, trainers) goes through, and
:func:`check_estimator_params` for a configuration checked before any data exists."""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.errors import StepTableError
from g2po.estimators.registry import bind_params, check_columns, get_spec
from g2po.estimators.spec import EstimatorSpec
from g2po.index import StepIndex, index_steps
from g2po.state_keys import StateKeyFn, resolve_state_key
from g2po.steps import coerce_steps, column_problems

__all__ = ["estimate", "compute_advantages", "check_estimator_params"]


def estimate(
    steps: pd.DataFrame,
    estimator: str = "g2po",
    *,
    state_key: str | StateKeyFn | None = "exact",
    **params,
) -> tuple[dict[str, np.ndarray], StepIndex]:
    """Run one estimator; returns its columns (each (n_steps,), in row order) and the index.

    Raises :class:`g2po.errors.StepTableError` (every problem at once) on a bad table or one
    without a step column the estimator declares it needs,
    :class:`g2po.errors.UnknownEstimatorError` on an unknown name, ``TypeError`` on a
    parameter the estimator does not take and ``ValueError`` naming the parameter on a value of
    the wrong type, a non-finite number or a choice not offered. Every column an estimator
    returns is checked to be finite.
    """
    spec = get_spec(estimator)
    params = bind_params(estimator, spec.fn, params)
    declared = {c.name: c.dtype for c in spec.columns}
    problems = column_problems(steps, declared) + _missing_columns(spec, steps)
    if problems:
        raise StepTableError(problems)
    steps = coerce_steps(steps, declared)
    ix = index_steps(steps, resolve_state_key(state_key), declared)
    columns = spec.fn(ix, **params)
    check_columns(estimator, columns, ix.n_steps)
    return columns, ix


def _missing_columns(spec: EstimatorSpec, steps: pd.DataFrame) -> list[str]:
    """The required step columns ``spec`` declares that ``steps`` lacks or leaves empty, each
    said with what it holds and how to supply it."""
    if not isinstance(steps, pd.DataFrame):
        return []
    out = []
    for column in spec.columns:
        if not column.required:
            continue
        if column.name not in steps.columns:
            out.append(f"estimator {spec.name!r} needs the step column {column.name!r} "
                       f"({column.dtype}: {column.doc}), which this table does not have; map "
                       f"a column of the log to it (--map {column.name}=COLUMN)")
        elif steps[column.name].isna().any():
            rows = steps.index[steps[column.name].isna().to_numpy()]
            shown = ", ".join(map(str, rows[:8])) + (" …" if len(rows) > 8 else "")
            out.append(f"estimator {spec.name!r} needs the step column {column.name!r} on "
                       f"every row; it is empty in {len(rows)} row(s): {shown}")
    return out


def check_estimator_params(name: str, **params) -> None:
    """Check ``params`` for estimator ``name`` before any data exists (a training
    configuration): names, types and the estimator's own ranges, on a probe of two one-step
    rollouts carrying every step column the estimator declares. Raises as :func:`estimate`.

    >>> check_estimator_params("g2po", gamma=2.0)
    Traceback (most recent call last):
    ...
    ValueError: gamma must be in (0, 1], got 2.0
    """
    spec = get_spec(name)
    probe = pd.DataFrame({"group_id": "g", "traj_id": ["a", "b"], "t": 0, "state_key": "s",
                          "action": "x", "episode_reward": [1.0, 0.0], "is_action_valid": True})
    fill = {"bool": False, "float64": 0.0, "int64": 0, "str": ""}
    probe = probe.assign(**{c.name: fill[c.dtype] for c in spec.columns})
    estimate(probe, name, **params)


def compute_advantages(
    steps: pd.DataFrame,
    estimator: str = "g2po",
    *,
    state_key: str | StateKeyFn | None = "exact",
    prefix: str = "",
    **params,
) -> pd.DataFrame:
    """The step table with the estimator's columns added (``prefix`` + name), row order kept.

    ``state_key`` picks the state-merging strategy (see :mod:`g2po.state_keys`); ``params`` are
    the estimator's own (see :func:`estimator_params`).

    >>> import pandas as pd
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "b"], "t": 0,
    ...     "state_key": "s", "action": "go", "episode_reward": [10.0, 0.0],
    ...     "is_action_valid": True})
    >>> compute_advantages(steps, "grpo")["adv"].round(4).tolist()
    [0.7071, -0.7071]
    """
    columns, _ = estimate(steps, estimator, state_key=state_key, **params)
    added = {prefix + k: v for k, v in columns.items()}
    if any(k in steps.columns for k in added):  # recomputed columns keep their place
        return steps.assign(**added)
    # One concat instead of a column at a time: assign re-consolidates the frame per column.
    return pd.concat([steps, pd.DataFrame(added, index=steps.index, copy=False)], axis=1)
