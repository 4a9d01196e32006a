"""Every g2po library estimator as a verl advantage estimator (``algorithm.adv_estimator=NAME``).

Each name of :func:`g2po.estimators.list_estimators` (when this module is imported) is
registered in verl's estimator registry under
:func:`~g2po.trainers.verl_backend.settings.verl_estimator_name`: its own name (``g2po``,
``gigpo``, ``g2po_ep``, ``value_iteration``, …), or ``g2po:NAME`` where verl has a built-in
of that name (``g2po:grpo``, ``g2po:rloo``; verl's ``grpo`` and ``rloo`` stay verl's). So
whatever library estimator verl trains with, its numbers are the ones the app and the local
trainer show for that name. Parameters come from ``algorithm.<library name>``.

verl calls a registered estimator with ``token_level_rewards``, ``response_mask``, ``index``
(the ``uid`` of each row) and ``config`` only. G2PO needs more of every row: its trajectory,
its step index, its state key and whether its action was valid. The G2PO trainer mode
(:mod:`g2po.trainers.verl_backend.trainer`) reads those from the rows the agent loop wrote and
hands them over with :func:`provide_step_fields` around verl's own advantage code; the
estimator picks them up from that context. Called without them it fails with a message saying
how to fix it, or, when the user opted in with ``missing_step_fields=episode_only``, computes
the episode term alone — never something else silently.

The advantages are the g2po library's (:func:`g2po.estimators.estimate`), one value per agent
step, broadcast over the step's response tokens (times ``response_mask``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from g2po.analysis.diagnostics import batch_metrics
from g2po.errors import G2POError
from g2po.estimators import estimate
from g2po.params import G2POParams
from g2po.trainers.verl_backend.settings import (
    TRAINER_MODE,
    EstimatorSettings,
    estimator_settings,
    verl_estimator_name,
)

__all__ = [
    "MissingStepFieldsError",
    "StepFields",
    "AdvantageResult",
    "FieldsSlot",
    "provide_step_fields",
    "current_step_fields",
    "step_advantages",
    "verl_estimator",
    "register_library_estimators",
]

logger = logging.getLogger(__name__)


class MissingStepFieldsError(G2POError, RuntimeError):
    """The estimator ran without the per-step fields (not under the G2PO trainer mode)."""


@dataclass(frozen=True)
class StepFields:
    """What G2PO needs of each training row beyond verl's estimator arguments.

    Every array is (n_rows,), aligned with the rows verl passes to the estimator.

    group_id : object, the row's ``uid`` (the task instance its N rollouts share).
    traj_id : object, the rollout inside the group (verl's session id).
    t : int64, the step index inside the trajectory.
    state_key : object, the anchor observation the state graph merges on.
    action : object, the action the environment executed.
    is_action_valid : bool, False where the environment rejected the action.
    keep : bool, False for rows that are no agent step (verl's batch padding); they get
        advantage 0 and stay out of every group.
    extra : optional step-table columns (observation, response, won, …), each (n_rows,).
    """

    group_id: np.ndarray
    traj_id: np.ndarray
    t: np.ndarray
    state_key: np.ndarray
    action: np.ndarray
    is_action_valid: np.ndarray
    keep: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.group_id)

    def table(self, episode_reward: np.ndarray) -> pd.DataFrame:
        """The step table of the kept rows (index = row position in the batch).

        ``episode_reward`` is (n_rows,) float64, the outcome reward of each row.
        """
        keep = self.keep
        columns = {
            "group_id": self.group_id[keep].astype(str),
            "traj_id": self.traj_id[keep].astype(str),
            "t": self.t[keep].astype(np.int64),
            "state_key": self.state_key[keep].astype(str),
            "action": self.action[keep].astype(str),
            "episode_reward": np.asarray(episode_reward, dtype=np.float64)[keep],
            "is_action_valid": self.is_action_valid[keep].astype(bool),
        }
        columns.update({k: v[keep] for k, v in self.extra.items()})
        return pd.DataFrame(columns, index=np.flatnonzero(keep))


@dataclass
class AdvantageResult:
    """What one estimator call produced, for the trainer to log.

    steps : the step table with the estimator's columns (adv, adv_ep, …), kept rows only.
    metrics : scalar diagnostics (``g2po/merge_rate``, ``adv/ec/std``, …).
    seconds : wall time of the estimator call (graph, values, advantages).
    """

    estimator: str
    steps: pd.DataFrame
    metrics: dict[str, float]
    seconds: float = 0.0


@dataclass
class FieldsSlot:
    """The step fields of the batch being processed and, once the estimator ran, its result."""

    fields: StepFields
    results: list[AdvantageResult] = field(default_factory=list)


_SLOT: contextvars.ContextVar[FieldsSlot | None] = contextvars.ContextVar("g2po_step_fields",
                                                                         default=None)


@contextlib.contextmanager
def provide_step_fields(fields: StepFields) -> Iterator[FieldsSlot]:
    """Make ``fields`` visible to the estimators called inside the ``with`` block, as the
    trainer does around verl's advantage step::

        with provide_step_fields(fields) as slot:
            data = compute_advantage(data, adv_estimator="g2po", config=cfg.algorithm)
        slot.results[0].metrics["g2po/merge_rate"]
    """
    slot = FieldsSlot(fields)
    token = _SLOT.set(slot)
    try:
        yield slot
    finally:
        _SLOT.reset(token)


def current_step_fields() -> FieldsSlot | None:
    """The slot :func:`provide_step_fields` opened, or None outside one."""
    return _SLOT.get()


def _missing_message(name: str) -> str:
    return (
        f"algorithm.adv_estimator={verl_estimator_name(name)} needs each row's trajectory, step "
        "index, state key and "
        "action validity, which verl's estimator interface does not pass. Run the G2PO trainer "
        f"mode, which supplies them: trainer.v1.trainer_mode={TRAINER_MODE} (with the g2po_env "
        "agent loop, actor_rollout_ref.rollout.agent.default_agent_loop=g2po_env). To train on "
        f"the episode term A^EP alone instead, opt in with "
        f"algorithm.{name}.missing_step_fields=episode_only."
    )


def _check_alignment(fields: StepFields, n_rows: int, index: Sequence | None) -> None:
    if len(fields) != n_rows:
        raise MissingStepFieldsError(
            f"the step fields describe {len(fields)} rows but the batch has {n_rows}; they "
            "must come from the same batch keys, in the same order")
    if index is None:
        return
    uid = np.asarray(index, dtype=object)
    wrong = np.flatnonzero(fields.keep & (uid.astype(str) != fields.group_id.astype(str)))
    if len(wrong):
        i = int(wrong[0])
        raise MissingStepFieldsError(
            f"{len(wrong)} row(s) of the batch do not match the step fields (first: row {i}, "
            f"uid {uid[i]!r} vs step field group {fields.group_id[i]!r}); the batch was "
            "reordered after the fields were read")


def step_advantages(
    settings: EstimatorSettings,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    fields: StepFields,
    index: Sequence | None = None,
) -> tuple[torch.Tensor, AdvantageResult]:
    """One advantage per agent step from the g2po library, broadcast over its tokens.

    Parameters
    ----------
    settings : which estimator and its parameters.
    token_level_rewards : (n_rows, response_length) float; a row's episode reward is its sum.
    response_mask : (n_rows, response_length), 1 on the tokens the policy generated.
    fields : the rows' :class:`StepFields`.
    index : (n_rows,) verl's uid per row, checked against ``fields.group_id``.

    Returns
    -------
    advantages : (n_rows, response_length), the row's step advantage times ``response_mask``,
        in the dtype of ``token_level_rewards``; 0 on rows ``fields.keep`` drops.
    result : the step table with the estimator's columns and the diagnostics.
    """
    start = time.perf_counter()
    n_rows = token_level_rewards.shape[0]
    _check_alignment(fields, n_rows, index)
    reward = token_level_rewards.detach().to(torch.float64).sum(dim=-1).cpu().numpy()
    table = fields.table(reward)
    columns, ix = estimate(table, settings.name, state_key=settings.state_key,
                           **settings.kwargs())
    adv = np.zeros(n_rows, dtype=np.float64)
    adv[np.flatnonzero(fields.keep)] = columns["adv"]
    advantages = torch.as_tensor(adv, dtype=token_level_rewards.dtype,
                                 device=token_level_rewards.device)
    advantages = advantages.unsqueeze(-1) * response_mask.to(token_level_rewards.dtype)
    result = AdvantageResult(settings.name, table.assign(**columns),
                             batch_metrics(ix, columns), time.perf_counter() - start)
    return advantages, result


def _episode_only(settings: EstimatorSettings, token_level_rewards: torch.Tensor,
                  response_mask: torch.Tensor, index: Sequence | None) -> torch.Tensor:
    """The opt-in fallback: every row one single-step trajectory of its uid's group, so G2PO's
    episode term norm(R - p * invalid) over the group's rows, with no row counted invalid."""
    if index is None:
        raise MissingStepFieldsError("the episode-only fallback still needs verl's index (uid)")
    n_rows = token_level_rewards.shape[0]
    rows = np.arange(n_rows).astype(str)
    fields = StepFields(
        group_id=np.asarray(index, dtype=object), traj_id=rows, t=np.zeros(n_rows, np.int64),
        state_key=rows, action=np.full(n_rows, "", dtype=object),
        is_action_valid=np.ones(n_rows, bool), keep=np.ones(n_rows, bool))
    params = G2POParams(penalty=settings.params.penalty,
                        mode=settings.own.get("mode", settings.params.mode))
    episode = EstimatorSettings("g2po_ep", params, settings.rule)
    advantages, _ = step_advantages(episode, token_level_rewards, response_mask, fields, index)
    return advantages


def _run(name: str, token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
         index: Sequence | None, config: Mapping | None) -> tuple[torch.Tensor, torch.Tensor]:
    settings = estimator_settings(name, config)
    slot = current_step_fields()
    if slot is None:
        if settings.missing_step_fields != "episode_only":
            raise MissingStepFieldsError(_missing_message(name))
        logger.warning("%s without per-step fields: training on the episode term only "
                       "(algorithm.%s.missing_step_fields=episode_only)", name, name)
        advantages = _episode_only(settings, token_level_rewards, response_mask, index)
        return advantages, advantages
    with torch.no_grad():
        advantages, result = step_advantages(settings, token_level_rewards, response_mask,
                                             slot.fields, index)
    slot.results.append(result)
    # Outcome-style estimators return the advantage as the return too (verl's convention).
    return advantages, advantages


def verl_estimator(name: str):
    """verl's estimator function for library estimator ``name``: ``fn(token_level_rewards,
    response_mask, index=None, config=None, **kwargs) -> (advantages, returns)``, each
    (n_rows, response_length); parameters from ``config.<name>`` (verl's ``algorithm``)."""

    def compute(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                index: Sequence | None = None, config: Mapping | None = None,
                **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return _run(name, token_level_rewards, response_mask, index, config)

    compute.__name__ = f"compute_{name}_advantage"
    compute.__qualname__ = compute.__name__
    compute.library_estimator = name
    return compute


def register_library_estimators() -> dict[str, str]:
    """Register every library estimator in verl's registry (idempotent); returns
    ``{verl name: library name}``."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    from g2po.estimators import list_estimators

    names = {}
    for name in list_estimators():
        key = verl_estimator_name(name)
        current = ADV_ESTIMATOR_REGISTRY.get(key)
        if getattr(current, "library_estimator", None) != name:
            if current is not None:
                raise RuntimeError(f"verl already has an estimator {key!r} that is not g2po's "
                                   f"{name}; add it to VERL_BUILTIN_ESTIMATORS")
            register_adv_est(key)(verl_estimator(name))
        names[key] = name
    return names


register_library_estimators()
