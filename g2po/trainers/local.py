"""The single-machine trainer: G2PO (or any registered estimator) in one process, on CPU or one
GPU, writing the run directory the app reads while it trains.

One training step:

1. **Rollouts** — draw ``tasks_per_step`` tasks; play ``rollouts_per_task`` episodes of each in
   lockstep with batched sampling (:mod:`g2po.trainers.rollout`).
2. **Graph + advantages** — the estimator library on the step rows
   (:func:`g2po.estimators.estimate`, under the app's `compute_advantages`) with the run's
   :class:`~g2po.params.G2POParams` and :class:`~g2po.outcomes.OutcomeRule`
   (:meth:`TrainConfig.estimator_kwargs`): the app's code and values.
3. **Update** — each agent step is one sample (its prompt, its response); its advantage sits on
   every response token (:func:`g2po.trainers.update.update_policy`).
4. **Validate** (every ``val_every`` steps and after the last, when ``val_tasks`` > 0) — the
   run's fixed panel of held-out tasks, written as the validation run beside this one, their
   metrics (success per ALFWorld task type, WebShop's score) into both
   (:mod:`g2po.trainers.validation`).
5. **Log** — the step rows, with the ``advantage`` each step was trained with, to
   ``rollouts/step-NNNNNN.parquet`` and the scalars to ``metrics.jsonl``
   (:class:`loaders.RunWriter`, atomic), then a checkpoint every ``checkpoint_every`` steps.

``run.json`` records the estimator, the exact keyword arguments it was called with, G2PO's
parameters and the outcome rule whole (:func:`run_manifest`), so the run reopens with them.
Rerunning with the same ``out`` resumes from the last checkpoint, rewinding the log to it so
every step ends up logged exactly once (:mod:`g2po.trainers.checkpoint`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from g2po.analysis.diagnostics import batch_metrics
from g2po.estimators import estimate
from g2po.trainers.config import ConfigError, TrainConfig, load_config

__all__ = [
    "train",
    "TrainResult",
    "TINY_LR",
    "PAPER_LR",
    "RESUMABLE_KEYS",
    "resolved_lr",
    "draw_tasks",
    "step_advantages",
    "run_manifest",
    "format_times",
]

PAPER_LR = 1e-6
TINY_LR = 1e-3
#: Settings a resumed run may change; any other difference means a different run.
RESUMABLE_KEYS = ("total_steps", "checkpoint_every", "keep_checkpoints", "progress", "device",
                  "generation_batch_size", "micro_batch_size", "threads")
#: Per-step time split, in the order printed.
TIME_KEYS = ("rollout_s", "generate_s", "env_s", "advantages_s", "update_s", "log_s",
             "checkpoint_s", "step_s")


@dataclass
class TrainResult:
    """What a call to :func:`train` did."""

    run_dir: Path
    config: TrainConfig
    steps: list[int] = field(default_factory=list)
    """Training steps run by this call (not those before a resume)."""
    resumed_from: int | None = None
    """The checkpoint's training step when the run resumed, else None."""
    times: list[dict[str, float]] = field(default_factory=list)
    """Per step: the time split in seconds (keys of ``TIME_KEYS``)."""
    validations: dict[int, dict[str, float]] = field(default_factory=dict)
    """Training step validated after (0: before training) -> its metrics
    (:func:`g2po.evaluation.evaluation_metrics`)."""


def resolved_lr(config: TrainConfig) -> float:
    """The learning rate a run uses: the configured one, or the model's default."""
    if config.lr is not None:
        return config.lr
    return TINY_LR if config.model.startswith("tiny") else PAPER_LR


def draw_tasks(rng: np.random.Generator, pool: Sequence[str], k: int) -> list[str]:
    """``k`` distinct tasks of ``pool`` (one group each), in draw order."""
    picks = rng.choice(len(pool), size=k, replace=False)
    return [pool[int(i)] for i in picks]


def step_advantages(steps: pd.DataFrame,
                    config: TrainConfig) -> tuple[pd.DataFrame, dict[str, float]]:
    """``steps`` with the estimator's columns (``adv`` and its parts), row order kept, and the
    batch's G2PO diagnostics (:func:`g2po.analysis.diagnostics.batch_metrics`, as the verl backend
    logs them)."""
    columns, ix = estimate(steps, config.estimator, state_key=config.params.state_key,
                           **config.estimator_kwargs())
    return steps.assign(**columns), batch_metrics(ix, columns)


def run_manifest(config: TrainConfig, model_path: Path,
                 panel: dict[str, Any] | None = None) -> dict[str, Any]:
    """``run.json`` of a local run: the resolved configuration; the estimator and the exact
    keyword arguments it is called with (``estimator_params``, ``state_key``); G2PO's
    parameters (``params``) and the outcome rule (``outcome``) whole, which the loaders read
    back (:func:`loaders.log.manifest_rule`, :func:`loaders.log.manifest_params`); the
    validation panel when the run validates."""
    from g2po.evaluation import PANEL_KEY

    manifest = {"config": config.to_dict(), "backend": "local", "estimator": config.estimator,
                "estimator_params": config.estimator_kwargs(),
                "state_key": config.params.state_key, "params": config.params.as_dict(),
                "outcome": config.outcome.as_dict(),
                "success_reward": config.outcome.success_reward, "env": config.env,
                "model": config.model, "model_path": str(model_path),
                "trainer": "g2po.trainers.local"}
    if panel is not None:
        manifest[PANEL_KEY] = panel
    return manifest


def format_times(times: dict[str, float]) -> str:
    """One line: the step's seconds and its split (graph + advantages as a share too)."""
    step = max(times.get("step_s", 0.0), 1e-9)
    adv = times.get("advantages_s", 0.0)
    return (f"step {step:.2f}s = rollout {times.get('rollout_s', 0):.2f}s "
            f"(generate {times.get('generate_s', 0):.2f}s, env {times.get('env_s', 0):.2f}s)"
            f" + graph+advantages {adv * 1000:.1f}ms ({adv / step:.2%})"
            f" + update {times.get('update_s', 0):.2f}s + log {times.get('log_s', 0):.2f}s"
            f" + checkpoint {times.get('checkpoint_s', 0):.2f}s")


def _check_resume(stored: dict[str, Any], config: TrainConfig, run_dir: Path) -> None:
    """A resumed run must be the same run: only ``RESUMABLE_KEYS`` may change. The stored
    configuration is read as today's (a run stored with ``gamma`` compares its
    ``params.gamma``)."""
    try:
        before = load_config(base=stored).to_dict()
    except ConfigError as err:
        raise ConfigError(f"{run_dir}: its stored configuration no longer loads: {err}") \
            from None
    current = config.to_dict()
    changed = [k for k, v in before.items()
               if k in stored or k in ("params", "outcome")
               if k not in RESUMABLE_KEYS and current[k] != v]
    if changed:
        diffs = ", ".join(f"{k}: {before[k]!r} -> {current[k]!r}" for k in sorted(changed))
        raise ConfigError(
            f"{run_dir} holds a run with another configuration ({diffs}); resume it with the "
            f"same settings (only {', '.join(RESUMABLE_KEYS)} may change) or choose a new --out")


# -- the run's parts ------------------------------------------------------------------------------
@dataclass
class _Start:
    """Where a call to :func:`train` starts: a new run, or a resumed one at its checkpoint."""

    run_dir: Path
    stored: dict[str, Any] | None
    checkpoints: Path
    checkpoint: Any
    start: int
    base_path: Path
    panel: Any = None
    """The validation panel (:class:`g2po.evaluation.ValidationPanel`), when the run validates."""
    val_family: Any = None


@dataclass
class _Run:
    """What the training loop works with, built once by :func:`_build`."""

    config: TrainConfig
    model: torch.nn.Module
    tokenizer: Any
    ref_model: torch.nn.Module | None
    optimizer: torch.optim.Optimizer
    policy: Any
    actor_cfg: Any
    family: Any
    pool: list[str]
    task_rng: np.random.Generator
    checkpoints: Path
    writer: Any
    validation: Any


def _start(config: TrainConfig, run_dir: Path, log: Callable[[str], None]) -> _Start:
    """Check ``run_dir`` (new, or a run of this configuration validating on the panel it
    recorded) and find the checkpoint a resumed run starts from, rewinding its log to it."""
    from g2po.evaluation import PANEL_KEY
    from g2po.trainers.checkpoint import checkpoint_folder, latest_checkpoint, rewind_run
    from g2po.trainers.models import model_path
    from g2po.trainers.validation import validation_panel
    from loaders import open_run
    from loaders.rundir import MANIFEST

    stored = open_run(run_dir).manifest if (run_dir / MANIFEST).is_file() else None
    if stored is None and run_dir.is_dir() and any(run_dir.iterdir()):
        raise ConfigError(f"{run_dir} exists and is not a run directory (no {MANIFEST}); "
                          "choose a new or empty --out")
    if stored is not None:
        _check_resume(stored.get("config") or {}, config, run_dir)
    panel, val_family = validation_panel(config) if config.val_tasks else (None, None)
    if panel is not None and stored is not None:
        try:
            panel.check_same(stored.get(PANEL_KEY), str(run_dir))
        except ValueError as err:
            raise ConfigError(str(err)) from None
    base_path = Path(stored["model_path"]) if stored and stored.get("model_path") \
        and Path(stored["model_path"]).is_dir() else model_path(config.model, env=config.env)
    checkpoints = checkpoint_folder(run_dir, config.checkpoint_dir)
    checkpoint = latest_checkpoint(checkpoints) if stored is not None else None
    start = checkpoint.train_step if checkpoint else 0
    if stored is not None:
        removed = rewind_run(run_dir, start, checkpoints)
        where = f"checkpoint of step {start}" if checkpoint else "the start (no checkpoint)"
        log(f"resuming {run_dir} from {where}"
            + (f"; steps {removed[0]}-{removed[-1]} will be trained again" if removed else ""))
    return _Start(run_dir, stored, checkpoints, checkpoint, start, base_path, panel, val_family)


def _models(config: TrainConfig, begin: _Start):
    """The policy model (from the checkpoint when resuming), its tokenizer, the frozen
    reference model for the KL term (None when ``kl_coef`` is 0) and the optimizer."""
    from g2po.trainers.checkpoint import load_trainer_state
    from g2po.trainers.policy import load_model, resolve_device, resolve_dtype

    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    model, tokenizer = load_model(begin.checkpoint.path if begin.checkpoint else begin.base_path,
                                  device=device, dtype=dtype)
    ref_model = None
    if config.kl_coef > 0:
        if begin.checkpoint:
            ref_model, _ = load_model(begin.base_path, device=device, dtype=dtype)
        else:
            ref_model = copy.deepcopy(model)
        ref_model.eval().requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    state = load_trainer_state(begin.checkpoint) if begin.checkpoint else None
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
    return model, tokenizer, ref_model, optimizer, state


def _build(config: TrainConfig, begin: _Start) -> _Run:
    """Everything the loop needs: environment and task pool, models, the policy, verl's actor
    configuration, the run's writer and its validation."""
    from g2po.envs import env_family
    from g2po.rollouts import check_reports
    from g2po.trainers.checkpoint import restore_rng
    from g2po.trainers.loss import actor_config
    from g2po.trainers.policy import HFPolicy
    from g2po.trainers.validation import Validation
    from loaders import RunWriter

    family = env_family(config.env)
    pool = family.tasks(config.task_pool, config.task_seed)
    check_reports(config.estimator, family, pool[0])
    task_rng = np.random.default_rng([config.seed, 1])
    torch.manual_seed(config.seed)
    model, tokenizer, ref_model, optimizer, state = _models(config, begin)
    if state is not None:
        restore_rng(state["rng"], task_rng)
    policy = HFPolicy(model, tokenizer, max_new_tokens=config.max_new_tokens,
                      max_prompt_tokens=config.max_prompt_tokens,
                      temperature=config.temperature, top_p=config.top_p,
                      chat_template=config.chat_template,
                      generation_batch_size=config.generation_batch_size, name=config.model)
    actor_cfg = actor_config(
        clip_ratio_low=config.clip_ratio_low, clip_ratio_high=config.clip_ratio_high,
        clip_ratio_c=config.clip_ratio_c, loss_agg_mode=config.loss_agg_mode,
        policy_loss=config.policy_loss, kl_coef=config.kl_coef, kl_type=config.kl_type,
        rollout_n=config.rollouts_per_task, micro_batch_size=config.micro_batch_size)
    panel = begin.panel
    manifest = run_manifest(config, begin.base_path, panel.as_dict() if panel else None)
    resumed = begin.stored is not None
    writer = RunWriter(begin.run_dir, manifest, resume=resumed)
    validation = Validation(config, begin.run_dir, manifest, panel, begin.val_family,
                            resume_from=begin.start if resumed else None) if panel else None
    return _Run(config, model, tokenizer, ref_model, optimizer, policy, actor_cfg, family, pool,
                task_rng, begin.checkpoints, writer, validation)


# -- one step -------------------------------------------------------------------------------------
def _train_step(run: _Run, step: int, result: TrainResult,
                say: Callable[[str], None]) -> tuple[pd.DataFrame, dict[str, float]]:
    """Rollouts, advantages, update, validation when due, the step's rows (with the
    ``advantage`` each was trained with) and metrics written, checkpoint when due. Returns the
    step rows with the estimator's columns and the time split."""
    from g2po.rollouts import step_metrics
    from g2po.trainers.checkpoint import rng_state, save_checkpoint
    from g2po.trainers.rollout import collect_step
    from g2po.trainers.update import update_policy

    config = run.config
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    tasks = draw_tasks(run.task_rng, run.pool, config.tasks_per_step)
    rollouts = collect_step(run.policy, run.family, tasks, group_size=config.rollouts_per_task,
                            max_steps=config.max_steps, history_length=config.history_length,
                            success_reward=config.outcome.success_reward, train_step=step,
                            env_name=config.env)
    t1 = time.perf_counter()
    steps, adv_metrics = step_advantages(rollouts.steps, config)
    t2 = time.perf_counter()
    advantages = steps["adv"].to_numpy(dtype=np.float64)
    metrics, logprob_mean = update_policy(
        run.model, run.optimizer, rollouts.prompt_ids, rollouts.response_ids, advantages,
        config, run.actor_cfg, pad_id=run.policy.pad_id, ref_model=run.ref_model)
    t3 = time.perf_counter()
    times.update(rollout_s=t1 - t0, generate_s=rollouts.generate_s, env_s=rollouts.env_s,
                 advantages_s=t2 - t1, update_s=t3 - t2)
    logged = rollouts.steps.assign(logprob_mean=logprob_mean, advantage=advantages)
    metrics.update(step_metrics(rollouts.steps, rollouts.stats, rollouts.seconds))
    metrics.update(adv_metrics)
    metrics.update(_update_metrics(steps, advantages, rollouts.prompts_truncated))
    metrics.update({f"time/{k}": v for k, v in times.items()})
    if run.validation is not None and run.validation.due(step):
        _, val_metrics = run.validation.run(run.policy, step)
        result.validations[step] = val_metrics
        metrics.update(val_metrics)
        say(f"validation after step {step}: {_val_line(val_metrics)}")
    t3 = time.perf_counter()  # the validation's time is its own (time/validate_s)
    run.writer.write_step(step, logged, metrics)
    t4 = time.perf_counter()
    times["log_s"] = t4 - t3
    if step % config.checkpoint_every == 0 or step == config.total_steps:
        save_checkpoint(run.checkpoints, step, run.model, run.tokenizer, run.optimizer,
                        rng_state(run.task_rng), keep=config.keep_checkpoints,
                        extra={"estimator": config.estimator})
    times["checkpoint_s"] = time.perf_counter() - t4
    times["step_s"] = time.perf_counter() - t0
    return steps, times


def _progress(config: TrainConfig, steps: pd.DataFrame, times: dict[str, float]) -> str:
    """The progress bar's text after a step: reward, success (by the run's rule), valid
    actions and the time split."""
    rewards = steps.groupby(["group_id", "traj_id"])["episode_reward"].first()
    success = float(config.outcome.success(rewards.to_numpy()).mean())
    return (f"reward {rewards.mean():.2f} success {success:.0%} "
            f"valid {steps['is_action_valid'].mean():.0%} "
            f"roll {times['rollout_s']:.1f}s adv {times['advantages_s'] * 1000:.0f}ms "
            f"upd {times['update_s']:.1f}s")


def train(config: TrainConfig, out: str | Path, *,
          log: Callable[[str], None] = print) -> TrainResult:
    """Train with ``config``, writing the run directory ``out``; resume it if it exists.

    Returns a :class:`TrainResult`. Raises :class:`ConfigError` when ``out`` holds a run made
    with different settings (or validated on another panel),
    :class:`g2po.trainers.policy.ModelError` for a model that cannot be loaded,
    :class:`g2po.envs.EnvError` for an environment that cannot be played.
    """
    from tqdm.auto import tqdm
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # weight loading/saving bars would garble our own
    config = config.replace(lr=resolved_lr(config))
    if config.threads:
        torch.set_num_threads(config.threads)
    begin = _start(config, Path(out), log)
    run = _build(config, begin)
    resumed = begin.stored is not None
    result = TrainResult(begin.run_dir, config, resumed_from=begin.start if resumed else None)
    if run.validation is not None and run.validation.due(0):
        _, val_metrics = run.validation.run(run.policy, 0)
        result.validations[0] = val_metrics
        log(f"validation before training: {_val_line(val_metrics)}")

    bar = tqdm(total=config.total_steps, initial=begin.start, disable=not config.progress,
               desc=f"{config.estimator} {config.env}", unit="step", dynamic_ncols=True)
    try:
        for step in range(begin.start + 1, config.total_steps + 1):
            steps, times = _train_step(run, step, result, bar.write)
            result.steps.append(step)
            result.times.append(times)
            bar.set_postfix_str(_progress(config, steps, times), refresh=False)
            bar.update(1)
    finally:
        bar.close()
    if result.times:
        mean = {k: float(np.mean([t.get(k, 0.0) for t in result.times])) for k in TIME_KEYS}
        log(f"{len(result.times)} step(s), mean per step: {format_times(mean)}")
    return result


def _val_line(metrics: dict[str, float]) -> str:
    """One line of a validation's metrics: success (overall, per task type), score."""
    from g2po.evaluation import VAL_PREFIX

    shown = {k.removeprefix(VAL_PREFIX + "/"): v for k, v in metrics.items()
             if k.split("/")[0] == VAL_PREFIX and k.split("/")[1] != "episodes"}
    return ", ".join(f"{k} {v:.0%}" if not k.startswith("score") else f"{k} {v:.3f}"
                     for k, v in shown.items())


def _update_metrics(steps: pd.DataFrame, advantages: np.ndarray,
                    truncated: int) -> dict[str, float]:
    """Scalars of the samples (the collector's, the run summary's and the estimator's aside)."""
    out = {
        "adv/zero_share": float(np.mean(np.abs(advantages) < 1e-12)),
        "response/length_mean": float(steps["response_tokens"].mean()),
        "prompt/length_mean": float(steps["prompt_tokens"].mean()),
        "rollout/prompt_truncated": int(truncated),
        "rollout/n_samples": int(len(steps)),
    }
    return out
