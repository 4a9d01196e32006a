"""The local trainer's validation: held-out episodes of the current policy, written as a run.

Every ``val_every`` training steps and after the last one (and before training with
``val_before_train``), the policy plays ``val_rollouts`` episodes of each task of the run's
validation panel (:class:`g2po.evaluation.ValidationPanel`: ``val_tasks`` tasks of ``val_env``
listed with ``val_seed``, the same tasks in the same order every time) at ``val_temperature``.
The panel is recorded in both runs' ``run.json`` (``validation_panel``); a resume whose settings
would list another panel is refused. The rows go to the validation run beside the training run
(:func:`g2po.evaluation.validation_dir`: ``runs/x`` -> ``runs/x-val``), one "training step" per
validation (the step validated after; 0 before training), in the run format the app opens; the
metrics (:func:`g2po.evaluation.evaluation_metrics`: success overall and per ALFWorld task type,
WebShop's score) go into both runs' ``metrics.jsonl``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from g2po.evaluation import PANEL_KEY, ValidationPanel, evaluation_metrics, validation_dir
from g2po.trainers.config import TrainConfig

__all__ = ["Validation", "validation_panel"]


def validation_panel(config: TrainConfig) -> tuple[ValidationPanel, Any]:
    """The run's validation panel and the environment family that plays it (listing the tasks
    prepares them: TextWorld generates its games)."""
    from g2po.envs import env_family

    family = env_family(config.val_env or config.env)
    tasks = family.tasks(config.val_tasks, config.val_seed)
    return ValidationPanel(family.spec, tuple(tasks), config.val_rollouts), family


class Validation:
    """Validation of one training run (see the module docstring), for ``config.val_tasks > 0``.

    ``panel`` and ``family`` come from :func:`validation_panel` (the trainer checks it against
    the panel a resumed run recorded). ``resume_from`` is the training step a resumed run
    restarts after: validations logged after it are forgotten, as the training run's own steps
    are.
    """

    def __init__(self, config: TrainConfig, run_dir: str | Path, manifest: dict[str, Any],
                 panel: ValidationPanel, family, *, resume_from: int | None = None):
        from loaders import RunWriter
        from loaders.rundir import MANIFEST, rewind_run

        self.config = config
        self.panel = panel
        self.family = family
        self.path = validation_dir(run_dir)
        resume = resume_from is not None and (self.path / MANIFEST).is_file()
        if resume:
            rewind_run(self.path, int(resume_from))
        self.writer = RunWriter(self.path, {
            **manifest, "env": panel.env, "validation_of": str(Path(run_dir)),
            "tasks": list(panel.tasks), PANEL_KEY: panel.as_dict()}, resume=resume)

    def due(self, train_step: int) -> bool:
        """Whether training step ``train_step`` (0: before training) is followed by one."""
        c = self.config
        if train_step == 0:  # a resumed run has it already
            return c.val_before_train and 0 not in self.writer.completed_steps()
        return train_step % c.val_every == 0 or train_step == c.total_steps

    def run(self, policy, train_step: int) -> tuple[pd.DataFrame, dict[str, float]]:
        """Play the panel with ``policy`` (an :class:`~g2po.trainers.policy.HFPolicy`, sampled
        at ``val_temperature`` here), write the rows as step ``train_step`` of the validation
        run, return the rows and the metrics (with ``time/validate_s``)."""
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
                    self.family, self.panel.tasks, policy, group_size=self.panel.rollouts,
                    max_steps=c.max_steps, history_length=c.history_length,
                    success_reward=c.outcome.success_reward, train_step=train_step,
                    env_name=self.panel.env)
        finally:
            policy.temperature = temperature
        if steps.empty:
            problems = stats["reset_errors"] + stats["env_errors"]
            raise RuntimeError(f"validation after training step {train_step}: no episode could "
                               "start; " + "; ".join(problems[:5]))
        metrics = evaluation_metrics(steps, c.outcome, env=self.panel.env)
        metrics["time/validate_s"] = time.perf_counter() - start
        logged = {**metrics, "env/errors": len(stats["env_errors"]),
                  "env/reset_errors": len(stats["reset_errors"])}
        self.writer.write_step(train_step, steps, logged)
        return steps, metrics
