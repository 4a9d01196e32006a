"""The local trainer's validation: held-out episodes of the current policy, written as a run.

Every ``val_every`` training steps and after the last one (and before training with
``val_before_train``), the policy plays ``val_rollouts`` episodes of each of the ``val_tasks``
validation tasks at ``val_temperature``. Their rows go to the validation run beside the
training run (:func:`g2po.evaluation.validation_dir`: ``runs/x`` -> ``runs/x-val``), one
"training step" per validation (the step validated after; 0 before training), in the run
format the app opens; the metrics (:func:`g2po.evaluation.evaluation_metrics`: success overall
and per ALFWorld task type, WebShop's score) go into both runs' ``metrics.jsonl``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from g2po.evaluation import evaluation_metrics, validation_dir
from g2po.outcomes import OutcomeRule
from g2po.trainers.config import TrainConfig

__all__ = ["Validation"]


class Validation:
    """Validation of one training run (see the module docstring), for ``config.val_tasks > 0``.

    ``resume_from`` is the training step a resumed run restarts after: validations logged after
    it are forgotten, as the training run's own steps are.
    """

    def __init__(self, config: TrainConfig, run_dir: str | Path, manifest: dict[str, Any], *,
                 resume_from: int | None = None):
        from g2po.envs import env_family
        from loaders import RunWriter
        from loaders.rundir import MANIFEST, rewind_run

        self.config = config
        self.spec = config.val_env or config.env
        self.family = env_family(self.spec)
        self.tasks = self.family.tasks(config.val_tasks, config.val_seed)
        self.path = validation_dir(run_dir)
        self.rule = OutcomeRule(success_reward=config.success_reward)
        resume = resume_from is not None and (self.path / MANIFEST).is_file()
        if resume:
            rewind_run(self.path, int(resume_from))
        self.writer = RunWriter(self.path, {
            **manifest, "env": self.family.spec, "validation_of": str(Path(run_dir)),
            "tasks": list(self.tasks)}, resume=resume)

    def due(self, train_step: int) -> bool:
        """Whether training step ``train_step`` (0: before training) is followed by one."""
        c = self.config
        if train_step == 0:  # a resumed run has it already
            return c.val_before_train and 0 not in self.writer.completed_steps()
        return train_step % c.val_every == 0 or train_step == c.total_steps

    def run(self, policy, train_step: int) -> tuple[pd.DataFrame, dict[str, float]]:
        """Play the validation episodes with ``policy`` (an
        :class:`~g2po.trainers.policy.HFPolicy`, sampled at ``val_temperature`` here), write
        them as step ``train_step`` of the validation run, return the rows and the metrics
        (with ``time/validate_s``)."""
        import torch

        from g2po.rollouts import collect_groups

        c = self.config
        start = time.perf_counter()
        temperature, policy.temperature = policy.temperature, c.val_temperature
        # Its own random stream: validating (or not) leaves training's sampling as it was, and
        # the same run validates the same step the same way.
        try:
            with torch.random.fork_rng():
                torch.manual_seed(c.seed * 1_000_003 + train_step)
                steps, stats = collect_groups(
                    self.family, self.tasks, policy, group_size=c.val_rollouts,
                    max_steps=c.max_steps, history_length=c.history_length,
                    success_reward=c.success_reward, train_step=train_step,
                    env_name=self.spec)
        finally:
            policy.temperature = temperature
        if steps.empty:
            problems = stats["reset_errors"] + stats["env_errors"]
            raise RuntimeError(f"validation after training step {train_step}: no episode could "
                               "start; " + "; ".join(problems[:5]))
        metrics = evaluation_metrics(steps, self.rule, env=self.spec)
        metrics["time/validate_s"] = time.perf_counter() - start
        logged = {**metrics, "env/errors": len(stats["env_errors"]),
                  "env/reset_errors": len(stats["reset_errors"])}
        self.writer.write_step(train_step, steps, logged)
        return steps, metrics
