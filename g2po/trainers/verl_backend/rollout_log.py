"""The trainer's rollouts in the project's run-directory format, one training step at a time.

The app opens the directory while the run trains (``loaders.open_run``): ``run.json`` says which
estimator and parameters trained it, ``rollouts/step-NNNNNN.parquet`` holds each training step's
agent steps, ``metrics.jsonl`` verl's metrics and the G2PO diagnostics of that step. The
writing itself is :class:`loaders.RunWriter`'s (atomic, streaming-friendly).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from g2po.evaluation import PANEL_KEY, ValidationPanel
from g2po.outcomes import OutcomeRule
from g2po.trainers.verl_backend.settings import estimator_settings, library_estimator
from loaders import RunWriter

__all__ = ["run_manifest", "validation_panel", "scalar_metrics", "RolloutLog"]


def run_manifest(config: DictConfig) -> dict[str, Any]:
    """``run.json`` of a verl run: backend, estimator, the exact keyword arguments it is called
    with (``estimator_params``, ``state_key``), G2PO's parameters (``params``) and the outcome
    rule (``outcome``) whole, which the loaders read back (:func:`loaders.log.manifest_rule`,
    :func:`loaders.log.manifest_params`), the validation panel (``validation_panel``: the
    tasks of ``data.val_files``), environment, model, success reward and the whole resolved
    configuration."""
    try:
        full = OmegaConf.to_container(config, resolve=True)
    except Exception:  # an interpolation only the workers can resolve: keep it as written
        full = OmegaConf.to_container(config, resolve=False)
    adv_estimator = str(config.algorithm.adv_estimator)
    estimator = library_estimator(adv_estimator)
    success = float(OmegaConf.select(config, "g2po_env.success_reward", default=10.0))
    manifest: dict[str, Any] = {
        "backend": "verl",
        "estimator": estimator or adv_estimator,
        "verl_adv_estimator": adv_estimator,
        "env": str(OmegaConf.select(config, "g2po_env.name", default="")),
        "model": str(OmegaConf.select(config, "actor_rollout_ref.model.path", default="")),
        "success_reward": success,
        "outcome": OutcomeRule(success_reward=success).as_dict(),
        "rollouts_per_task": int(OmegaConf.select(config, "actor_rollout_ref.rollout.n",
                                                  default=1)),
        "config": full,
    }
    if estimator is not None:
        settings = estimator_settings(estimator, config.algorithm, success)
        manifest.update(estimator_params=settings.kwargs(), state_key=settings.state_key,
                        params=settings.params.as_dict(), outcome=settings.rule.as_dict())
    panel = validation_panel(config)
    if panel is not None:
        manifest[PANEL_KEY] = panel.as_dict()
    return manifest


def validation_panel(config: DictConfig) -> ValidationPanel | None:
    """The tasks verl validates on: the rows of ``data.val_files`` (one parquet file of
    :func:`g2po.trainers.verl_backend.data.task_rows`; ``auto`` writes it), in file order (the
    G2PO configuration keeps ``data.validation_shuffle`` false), each played
    ``rollout.val_kwargs.n`` times; None when the file is not such a task list."""
    path = Path(str(OmegaConf.select(config, "data.val_files", default="") or ""))
    if path.suffix != ".parquet" or not path.is_file():
        return None
    rows = pd.read_parquet(path, columns=["extra_info"])
    info = [x if isinstance(x, dict) else {} for x in rows["extra_info"]]
    tasks = tuple(str(x.get("task_id", "")) for x in info)
    if not tasks or not all(tasks):
        return None
    n = int(OmegaConf.select(config, "actor_rollout_ref.rollout.val_kwargs.n", default=1))
    return ValidationPanel(str(info[0].get("env", "")), tasks, n)


def scalar_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The finite scalar entries of verl's metrics dict, as floats (tensors, numpy and plain
    numbers; lists, strings and NaN are left out)."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if hasattr(value, "numel") and value.numel() == 1:
            value = value.item()
        elif isinstance(value, np.ndarray) and value.size == 1:
            value = value.item()
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, int | float | np.number) and math.isfinite(float(value)):
            out[str(key)] = float(value)
    return out


class RolloutLog:
    """Writes each training step's agent steps and metrics into ``run_dir``.

    ``resume_from`` (the checkpoint's training step) continues a run whose ``run.json`` exists:
    what it logged after that step is forgotten first, since those steps are trained again.
    """

    def __init__(self, run_dir: str | Path, manifest: dict[str, Any], *,
                 resume_from: int | None = None):
        self.resume = resume_from is not None
        if self.resume and (Path(run_dir) / "run.json").is_file():
            from g2po.trainers.checkpoint import rewind_run

            rewind_run(run_dir, int(resume_from))
        self.writer = RunWriter(run_dir, manifest, resume=self.resume)

    @property
    def path(self) -> Path:
        return self.writer.path

    def write(self, train_step: int, steps: pd.DataFrame, metrics: Mapping[str, Any]) -> Path:
        """Store one training step; returns the step file's path."""
        return self.writer.write_step(int(train_step), steps, scalar_metrics(metrics),
                                      overwrite=self.resume)
