"""Run a registered estimator on a step table: :func:`estimate` and :func:`compute_advantages`,
the one public entry point every caller (app, CLI, trainers) goes through."""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.errors import StepTableError
from g2po.estimators.registry import bind_params, check_columns, get_estimator
from g2po.index import StepIndex, index_steps
from g2po.state_keys import StateKeyFn, resolve_state_key
from g2po.steps import coerce_steps, column_problems

__all__ = ["estimate", "compute_advantages"]


def estimate(
    steps: pd.DataFrame,
    estimator: str = "g2po",
    *,
    state_key: str | StateKeyFn | None = "exact",
    **params,
) -> tuple[dict[str, np.ndarray], StepIndex]:
    """Run one estimator; returns its columns (each (n_steps,), in row order) and the index.

    Raises :class:`g2po.errors.StepTableError` (every problem at once) on a bad table,
    :class:`g2po.errors.UnknownEstimatorError` on an unknown name, ``TypeError`` on a
    parameter the estimator does not take and ``ValueError`` naming the parameter on a value of
    the wrong type, a non-finite number or a choice not offered. Every column an estimator
    returns is checked to be finite.
    """
    fn = get_estimator(estimator)
    params = bind_params(estimator, fn, params)
    problems = column_problems(steps)
    if problems:
        raise StepTableError(problems)
    steps = coerce_steps(steps)
    ix = index_steps(steps, resolve_state_key(state_key))
    columns = fn(ix, **params)
    check_columns(estimator, columns, ix.n_steps)
    return columns, ix


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
