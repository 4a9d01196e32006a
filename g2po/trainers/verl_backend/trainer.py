"""The G2PO trainer mode of verl's v1 trainer (``trainer.v1.trainer_mode=g2po``).

verl's synchronous trainer (``PPOTrainerSync``) with three additions:

- **the advantage hook** reads each row's step record (``extra_fields["g2po_step"]``, written by
  the ``g2po_env`` agent loop) and the row keys from TransferQueue, and runs verl's own
  ``_compute_advantage`` inside :func:`~g2po.trainers.verl_backend.estimator.provide_step_fields`,
  so the registered ``g2po`` / ``gigpo`` estimators see the per-step fields verl does not pass;
- **diagnostics**: the estimator's merge rate, singleton-node share, mean |TD error| and
  per-component advantage statistics join the step's training metrics;
- **rollout logging**: every training step's agent steps and metrics go to ``g2po_log.run_dir``
  in the project's run-directory format (:mod:`~g2po.trainers.verl_backend.rollout_log`);
- **the advantage each step was trained with**, read back from TransferQueue after verl's
  advantage step (the value on the row's first response token; the library's estimators put
  one value on every token), goes into those step rows as the column ``advantage`` and into
  verl's own rollout dump (``trainer.rollout_data_dir``) as the key ``advantage`` of each line,
  so every run trained here can be audited against the recomputation;
- **validation as in Table 1**: verl's ``_validate`` runs as it is; the validation rows it
  samples are read as they leave the replay buffer, their metrics
  (:func:`g2po.evaluation.evaluation_metrics`: success overall and per ALFWorld task type,
  WebShop's score) join verl's, and the rows go to the validation run beside the training run
  (:func:`g2po.evaluation.validation_dir`), one step per validation (the step validated after);
- **a step summary line** on stdout: verl's time split (generation, reference, actor update,
  weight sync), the estimator's own time (``timing_s/g2po_advantage``) and peak memory.

verl chooses some behaviour (replay buffer, prompt refill, checkpointing) by comparing the
mode's *name* with ``"sync"``; this class behaves as ``sync`` there (see ``base_mode``).
"""

from __future__ import annotations

import logging
import resource
from typing import Any

import numpy as np
import pandas as pd
import torch
import transfer_queue as tq
from omegaconf import OmegaConf
from transfer_queue import KVBatchMeta
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from g2po.evaluation import evaluation_metrics, validation_dir
from g2po.outcomes import OutcomeRule
from g2po.trainers.verl_backend.estimator import StepFields, provide_step_fields
from g2po.trainers.verl_backend.rollout_log import RolloutLog, run_manifest
from g2po.trainers.verl_backend.rows import step_fields_from_rows
from g2po.trainers.verl_backend.settings import STEP_FIELD, TRAINER_MODE, env_settings
from loaders.log import manifest_rule

__all__ = ["G2POTrainer", "read_step_fields", "read_validation_steps", "read_advantages",
           "row_rewards", "row_advantages", "step_summary"]

logger = logging.getLogger(__name__)


def row_rewards(rm_scores: Any) -> np.ndarray:
    """(n_rows,) float64: each row's reward, the sum of its token scores (verl's ``rm_scores``,
    a nested or padded (n_rows, response_length) tensor)."""
    if isinstance(rm_scores, torch.Tensor) and rm_scores.is_nested:
        rm_scores = rm_scores.to_padded_tensor(0.0)
    return torch.as_tensor(rm_scores).to(torch.float64).sum(dim=-1).cpu().numpy()


def row_advantages(advantages: Any, response_mask: Any) -> np.ndarray:
    """(n_rows,) float64: the advantage each row was trained with, the value on its first
    response token (0.0 for a row without one), from verl's ``advantages`` and
    ``response_mask`` (nested or padded (n_rows, response_length) tensors)."""
    def padded(x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor) and x.is_nested:
            x = x.to_padded_tensor(0.0)
        return torch.as_tensor(x)

    adv, mask = padded(advantages).to(torch.float64), padded(response_mask) > 0
    first = mask.to(torch.int8).argmax(dim=-1)
    value = adv.gather(-1, first.unsqueeze(-1)).squeeze(-1)
    return torch.where(mask.any(dim=-1), value, torch.zeros_like(value)).cpu().numpy()


def read_advantages(batch: KVBatchMeta) -> np.ndarray:
    """(n_rows,) the advantage each row of ``batch`` was trained with
    (:func:`row_advantages`), read from TransferQueue in the batch's key order."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                           select_fields=["advantages", "response_mask"])
    return row_advantages(data["advantages"], data["response_mask"])


def read_step_fields(batch: KVBatchMeta) -> tuple[StepFields, np.ndarray]:
    """The batch's :class:`StepFields` and row rewards (n_rows,), read from TransferQueue in
    the batch's key order."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                           select_fields=["extra_fields", "rm_scores"])
    fields = step_fields_from_rows(batch.keys, batch.tags, list(data["extra_fields"]))
    return fields, row_rewards(data["rm_scores"])


def read_validation_steps(batch: KVBatchMeta) -> pd.DataFrame:
    """The step table of a validation batch, read from TransferQueue as the replay buffer hands
    it out (before verl scores it: each row's episode reward is the one its agent loop's record
    holds, the reward verl scores it with)."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                           select_fields=["extra_fields"])
    extra = list(data["extra_fields"])
    fields = step_fields_from_rows(batch.keys, batch.tags, extra)
    rewards = np.array([float(((e or {}).get(STEP_FIELD) or {}).get("episode_reward", 0.0))
                        if isinstance(e, dict) else 0.0 for e in extra], dtype=np.float64)
    return fields.table(rewards)


#: The parts of verl's step timing the summary line names (``timing_s/<part>``).
SUMMARY_TIMES = ("gen", "old_log_prob", "ref", "adv", "g2po_advantage", "update_actor",
                 "update_weights", "save_checkpoint", "testing", "step")


def step_summary(step: int, metrics: dict) -> str:
    """One line: the step's time split in seconds and the peak memory (GiB) verl reports for
    the actor worker and this trainer process."""
    times = ", ".join(f"{part} {float(metrics[f'timing_s/{part}']):.2f}"
                      for part in SUMMARY_TIMES if f"timing_s/{part}" in metrics)
    memory = [f"{label} {float(metrics[key]):.2f}" for key, label in (
        ("actor/perf/max_memory_allocated_gb", "actor worker"),
        ("perf/trainer_peak_rss_gb", "trainer"))
        if key in metrics]
    return f"g2po step {step}: time (s) {times}; peak memory (GiB) {', '.join(memory)}"


@register_trainer(TRAINER_MODE)
class G2POTrainer(PPOTrainerSync):
    """verl's sync trainer handing G2PO its per-step fields, with diagnostics and run logging."""

    #: The built-in mode whose behaviour this trainer has wherever verl tests the mode's name.
    base_mode = "sync"

    def __init__(self, config):
        super().__init__(config)
        self._resume_from: int | None = None
        self._rollout_log: RolloutLog | None = None
        self._pending_steps: list[pd.DataFrame] = []
        self._validation_log: RolloutLog | None = None
        #: The training step and, per row key, the advantage it was trained with.
        self._trained: tuple[int, dict[str, float]] = (-1, {})
        self._dumping_rollouts = False

    def _build_replay_buffer(self):
        # Called from PPOTrainer.__init__ right after it read trainer_mode ("g2po"); every later
        # check of the name (dataloader refill, prompt persistence, checkpoints) sees "sync".
        self.trainer_mode = self.base_mode
        self._val_steps: list[pd.DataFrame] = []
        buffer = super()._build_replay_buffer()
        sample = buffer.sample

        def sample_and_read(global_steps: int, partition_id: str, batch_size: int):
            # verl's _validate clears each validation batch from TransferQueue once scored;
            # its step rows are read here, as the batch leaves the buffer.
            batch, info = sample(global_steps=global_steps, partition_id=partition_id,
                                 batch_size=batch_size)
            if partition_id == "val":
                self._val_steps.append(read_validation_steps(batch))
            return batch, info

        buffer.sample = sample_and_read  # this instance only; its class stays verl's
        return buffer

    def _validate(self) -> dict:
        self._val_steps = []
        metrics = super()._validate()
        steps, self._val_steps = self._val_steps, []
        if not steps:
            return metrics
        table = pd.concat(steps, ignore_index=True)
        manifest = run_manifest(self.config)
        env = env_settings(self.config).val_name
        rule = manifest_rule(manifest) or OutcomeRule()
        own = evaluation_metrics(table, rule, env=env)
        metrics.update(own)
        if OmegaConf.select(self.config, "g2po_log.enable", default=False):
            self.log_validation(int(self.global_steps), table, {**manifest, "env": env},
                                metrics)
        return metrics

    def on_init_end(self):
        super().on_init_end()
        if self.global_steps > 0:  # verl loaded a checkpoint of this training step
            self._resume_from = int(self.global_steps)

    def _compute_advantage(self, batch: KVBatchMeta, metrics: dict) -> KVBatchMeta:
        fields, rewards = read_step_fields(batch)
        with provide_step_fields(fields) as slot:
            batch = super()._compute_advantage(batch, metrics)
        for result in slot.results:
            metrics.update(result.metrics)
        metrics["timing_s/g2po_advantage"] = sum(r.seconds for r in slot.results)
        trained = read_advantages(batch)
        now = int(getattr(self, "global_steps", 0))  # set by verl's fit
        step, by_key = self._trained
        if step != now:  # a new training step (verl may call this more than once a step)
            by_key = {}
        by_key.update(zip(batch.keys, trained.tolist(), strict=True))
        self._trained = (now, by_key)
        if fields.keep.any():
            table = fields.table(rewards)
            self._pending_steps.append(table.assign(advantage=trained[table.index.to_numpy()]))
        return batch

    def _log_rollout_data(self, batch: KVBatchMeta, timing_raw: dict, rollout_data_dir: str):
        self._dumping_rollouts = True  # what verl dumps now is the training step's rows
        try:
            super()._log_rollout_data(batch, timing_raw, rollout_data_dir)
        finally:
            self._dumping_rollouts = False

    def _dump_generations(self, inputs, outputs, gts, scores, reward_extra_infos_dict,
                          dump_path):
        if self._dumping_rollouts:  # each line gets the advantage its row was trained with
            _, by_key = self._trained
            keys = reward_extra_infos_dict["uid"]
            reward_extra_infos_dict = {**reward_extra_infos_dict,
                                       "advantage": [by_key.get(k) for k in keys]}
        super()._dump_generations(inputs, outputs, gts, scores, reward_extra_infos_dict,
                                  dump_path)

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        # Linux reports ru_maxrss in KiB.
        metrics["perf/trainer_peak_rss_gb"] = (
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
        print(step_summary(global_steps, metrics), flush=True)
        steps, self._pending_steps = self._pending_steps, []
        if steps and OmegaConf.select(self.config, "g2po_log.enable", default=False):
            self.log_rollouts(global_steps, pd.concat(steps, ignore_index=True), metrics)

    def log_rollouts(self, train_step: int, steps: pd.DataFrame, metrics: dict) -> None:
        """Write one training step to the run directory (created on first use)."""
        if self._rollout_log is None:
            self._rollout_log = RolloutLog(self.config.g2po_log.run_dir, run_manifest(self.config),
                                           resume_from=self._resume_from)
            logger.info("G2PO rollouts are written to %s", self._rollout_log.path)
        self._rollout_log.write(train_step, steps, metrics)

    def log_validation(self, train_step: int, steps: pd.DataFrame, manifest: dict,
                       metrics: dict) -> None:
        """Write one validation (after training step ``train_step``; 0 before training) to the
        validation run beside the training run (created on first use)."""
        if self._validation_log is None:
            run_dir = self.config.g2po_log.run_dir
            resume = self._resume_from
            if resume is not None and self.config.trainer.get("val_before_train", True):
                resume -= 1  # the resumed run validates its checkpoint's step again
            self._validation_log = RolloutLog(
                validation_dir(run_dir), {**manifest, "validation_of": str(run_dir)},
                resume_from=resume)
            logger.info("G2PO validation rollouts are written to %s", self._validation_log.path)
        self._validation_log.write(train_step, steps, metrics)
