"""The single-machine trainer: G2PO (or any registered estimator) in one process, on CPU or one
GPU, writing the run directory the app reads while it trains.

One training step:

1. **Rollouts** — draw ``tasks_per_step`` tasks; play ``rollouts_per_task`` episodes of each in
   lockstep with batched sampling (:mod:`g2po.trainers.rollout`).
2. **Graph + advantages** — the estimator library on the step rows
   (:func:`g2po.estimators.estimate`, under the app's `compute_advantages`): the app's code.
3. **Update** — each agent step is one sample (its prompt, its response); its advantage sits on
   every response token. The clipped surrogate plus the KL term to the initial model, from
   verl's ``core_algos`` (:mod:`g2po.trainers.loss`); AdamW; micro-batches accumulate
   gradients, mini-batches and epochs as in PPO.
4. **Validate** (every ``val_every`` steps and after the last, when ``val_tasks`` > 0) —
   held-out episodes written as the validation run beside this one, their metrics (success
   per ALFWorld task type, WebShop's score) into both (:mod:`g2po.trainers.validation`).
5. **Log** — the step rows to ``rollouts/step-NNNNNN.parquet`` and the scalars to
   ``metrics.jsonl`` (:class:`loaders.RunWriter`, atomic), then a checkpoint every
   ``checkpoint_every`` steps.

Rerunning with the same ``out`` resumes from the last checkpoint, rewinding the log to it so
every step ends up logged exactly once (:mod:`g2po.trainers.checkpoint`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from g2po.analysis.diagnostics import batch_metrics
from g2po.estimators import estimate, shared_params
from g2po.trainers.config import ConfigError, TrainConfig

__all__ = [
    "train",
    "TrainResult",
    "TINY_LR",
    "PAPER_LR",
    "RESUMABLE_KEYS",
    "resolved_lr",
    "draw_tasks",
    "estimator_kwargs",
    "step_advantages",
    "update_policy",
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


def estimator_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The estimator's parameters: ``gamma``, ``penalty`` and ``success_reward`` wherever the
    estimator takes them with G2PO's meaning (:func:`g2po.estimators.shared_params`), then
    ``estimator_params`` (which the estimator checks)."""
    shared = {"gamma": config.gamma, "penalty": config.invalid_penalty,
              "success_reward": config.success_reward}
    return {**shared_params(config.estimator, shared), **config.estimator_params}


def step_advantages(steps: pd.DataFrame,
                    config: TrainConfig) -> tuple[pd.DataFrame, dict[str, float]]:
    """``steps`` with the estimator's columns (``adv`` and its parts), row order kept, and the
    batch's G2PO diagnostics (:func:`g2po.analysis.diagnostics.batch_metrics`, as the verl backend
    logs them)."""
    columns, ix = estimate(steps, config.estimator, state_key=config.state_key,
                           **estimator_kwargs(config))
    return steps.assign(**columns), batch_metrics(ix, columns)


def _chunks(indices: Sequence[int], size: int) -> list[list[int]]:
    return [list(indices[i:i + size]) for i in range(0, len(indices), size)]


@torch.no_grad()
def _log_probs(model, prompt_ids, response_ids, order, micro: int, pad_id: int,
               temperature: float, device) -> dict[int, torch.Tensor]:
    """Per sample, (R_i,) float32 log-probs of its response under ``model`` (no gradient)."""
    from g2po.trainers.policy import pack, response_log_probs

    out: dict[int, torch.Tensor] = {}
    for chunk in _chunks(order, micro):
        batch = pack([prompt_ids[i] for i in chunk], [response_ids[i] for i in chunk],
                     pad_id).to(device)
        lp = response_log_probs(model, batch, temperature).cpu()
        for row, i in enumerate(chunk):
            out[i] = lp[row, :len(response_ids[i])]
    return out


def _stack(rows: list[torch.Tensor], width: int, device) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out.to(device)


def update_policy(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    prompt_ids: Sequence[Sequence[int]],
    response_ids: Sequence[Sequence[int]],
    advantages: np.ndarray,
    config: TrainConfig,
    actor_config,
    *,
    pad_id: int,
    ref_model: torch.nn.Module | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """One training step's update on its samples (agent steps).

    Parameters
    ----------
    prompt_ids, response_ids : per sample, its token ids (n samples).
    advantages : (n,) float, each sample's advantage, put on every token of its response.
    actor_config : verl ``ActorConfig`` (:func:`g2po.trainers.loss.actor_config`).
    ref_model : the frozen initial model for the KL term (None when ``kl_coef`` is 0).

    Returns
    -------
    metrics : ``actor/*`` scalars (losses summed over micro-batches, i.e. per mini-batch, then
        averaged over mini-batches; ``actor/grad_norm`` before clipping).
    logprob_mean : (n,) float, each sample's mean log-prob under the sampling policy.
    """
    from g2po.trainers.loss import actor_loss, set_batch_info
    from g2po.trainers.policy import pack, response_log_probs

    n = len(prompt_ids)
    device = next(model.parameters()).device
    lengths = np.array([len(p) + len(r) for p, r in zip(prompt_ids, response_ids)])
    by_length = [int(i) for i in np.argsort(lengths, kind="stable")]
    micro = config.micro_batch_size
    mini = config.mini_batch_size or n
    on_policy = config.ppo_epochs == 1 and mini >= n
    temperature = config.temperature

    # Old log-probs: on-policy (one pass, one optimizer step) they equal the current ones
    # before the step, so the first forward supplies them; otherwise a no-grad pass first.
    old = None if on_policy else _log_probs(model, prompt_ids, response_ids, by_length,
                                            micro, pad_id, temperature, device)
    ref = None
    if actor_config.use_kl_loss:
        if ref_model is None:
            raise ValueError("update_policy: kl_coef > 0 needs the reference model")
        ref = _log_probs(ref_model, prompt_ids, response_ids, by_length, micro, pad_id,
                         temperature, device)

    sums: dict[str, float] = {}
    weights: dict[str, float] = {}
    logprob_mean = np.zeros(n)
    grad_norms, skipped, n_updates = [], 0, 0
    model.train()
    for _ in range(config.ppo_epochs):
        order = torch.randperm(n).tolist() if mini < n else list(range(n))
        for mb in _chunks(order, mini):
            mb = sorted(mb, key=lambda i: lengths[i])  # micro-batches of similar length
            tokens = sum(len(response_ids[i]) for i in mb)
            set_batch_info(actor_config, batch_num_tokens=tokens, global_batch_size=len(mb))
            optimizer.zero_grad(set_to_none=True)
            step_sums: dict[str, float] = {}
            for chunk in _chunks(mb, micro):
                batch = pack([prompt_ids[i] for i in chunk], [response_ids[i] for i in chunk],
                             pad_id).to(device)
                width = batch.responses.shape[1]
                log_prob = response_log_probs(model, batch, temperature)
                if old is None:
                    old_lp = log_prob.detach()
                    for row, i in enumerate(chunk):
                        k = len(response_ids[i])
                        logprob_mean[i] = float(old_lp[row, :k].mean()) if k else 0.0
                else:
                    old_lp = _stack([old[i] for i in chunk], width, device)
                ref_lp = _stack([ref[i] for i in chunk], width, device) if ref else None
                adv = torch.as_tensor(advantages[chunk], dtype=torch.float32, device=device)
                adv = adv[:, None].expand(-1, width) * batch.response_mask
                loss, metrics = actor_loss(log_prob, old_lp, adv, batch.response_mask,
                                           actor_config, ref_log_prob=ref_lp)
                loss.backward()
                share = int(batch.response_mask.sum()) / max(tokens, 1)
                for key, value in metrics.items():
                    if key in ("actor/pg_loss", "actor/kl_loss"):  # already global-normalised
                        step_sums[key] = step_sums.get(key, 0.0) + value
                    else:  # verl's per-micro-batch means: weight by tokens
                        step_sums[key] = step_sums.get(key, 0.0) + value * share
            params = [p for p in model.parameters() if p.grad is not None]
            max_norm = config.grad_clip if config.grad_clip > 0 else math.inf
            norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
            grad_norms.append(norm)
            if math.isfinite(norm):
                optimizer.step()
                n_updates += 1
            else:
                skipped += 1
                optimizer.zero_grad(set_to_none=True)
            for key, value in step_sums.items():
                sums[key] = sums.get(key, 0.0) + value
                weights[key] = weights.get(key, 0.0) + 1
    if old is not None:
        for i in range(n):
            logprob_mean[i] = float(old[i].mean()) if len(old[i]) else 0.0
    metrics = {k: sums[k] / weights[k] for k in sums}
    metrics["actor/grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
    metrics["actor/optimizer_steps"] = n_updates
    metrics["actor/skipped_steps"] = skipped
    metrics["actor/lr"] = optimizer.param_groups[0]["lr"]
    return metrics, logprob_mean


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
    """A resumed run must be the same run: only ``RESUMABLE_KEYS`` may change."""
    current = config.to_dict()
    changed = [k for k, v in stored.items()
               if k in current and k not in RESUMABLE_KEYS and current[k] != v]
    if changed:
        diffs = ", ".join(f"{k}: {stored[k]!r} -> {current[k]!r}" for k in sorted(changed))
        raise ConfigError(
            f"{run_dir} holds a run with another configuration ({diffs}); resume it with the "
            f"same settings (only {', '.join(RESUMABLE_KEYS)} may change) or choose a new --out")


def train(config: TrainConfig, out: str | Path, *,
          log: Callable[[str], None] = print) -> TrainResult:
    """Train with ``config``, writing the run directory ``out``; resume it if it exists.

    Returns a :class:`TrainResult`. Raises :class:`ConfigError` when ``out`` holds a run made
    with different settings, :class:`g2po.trainers.policy.ModelError` for a model that cannot
    be loaded, :class:`g2po.envs.EnvError` for an environment that cannot be played.
    """
    from tqdm.auto import tqdm
    from transformers.utils import logging as hf_logging

    from g2po.envs import env_family
    from g2po.rollouts import step_metrics
    from g2po.trainers.checkpoint import (
        checkpoint_folder,
        latest_checkpoint,
        load_trainer_state,
        restore_rng,
        rewind_run,
        rng_state,
        save_checkpoint,
    )
    from g2po.trainers.loss import actor_config as make_actor_config
    from g2po.trainers.models import model_path
    from g2po.trainers.policy import HFPolicy, load_model, resolve_device, resolve_dtype
    from g2po.trainers.rollout import collect_step
    from loaders import RunWriter, open_run
    from loaders.rundir import MANIFEST

    # -- set-up ---------------------------------------------------------------------------
    hf_logging.disable_progress_bar()  # weight loading/saving bars would garble our own
    config = config.replace(lr=resolved_lr(config))
    run_dir = Path(out)
    if config.threads:
        torch.set_num_threads(config.threads)
    stored = open_run(run_dir).manifest if (run_dir / MANIFEST).is_file() else None
    if stored is None and run_dir.is_dir() and any(run_dir.iterdir()):
        raise ConfigError(f"{run_dir} exists and is not a run directory (no {MANIFEST}); "
                          "choose a new or empty --out")
    if stored is not None:
        _check_resume(stored.get("config") or {}, config, run_dir)
    estimator_kwargs(config)  # an unknown estimator fails here, before any model is built
    family = env_family(config.env)
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    base_path = Path(stored["model_path"]) if stored and stored.get("model_path") \
        and Path(stored["model_path"]).is_dir() else model_path(config.model, env=config.env)
    pool = family.tasks(config.task_pool, config.task_seed)
    task_rng = np.random.default_rng([config.seed, 1])
    torch.manual_seed(config.seed)

    checkpoints = checkpoint_folder(run_dir, config.checkpoint_dir)
    checkpoint = latest_checkpoint(checkpoints) if stored is not None else None
    start = checkpoint.train_step if checkpoint else 0
    if stored is not None:
        removed = rewind_run(run_dir, start, checkpoints)
        where = f"checkpoint of step {start}" if checkpoint else "the start (no checkpoint)"
        log(f"resuming {run_dir} from {where}"
            + (f"; steps {removed[0]}-{removed[-1]} will be trained again" if removed else ""))
    model, tokenizer = load_model(checkpoint.path if checkpoint else base_path,
                                  device=device, dtype=dtype)
    ref_model = None
    if config.kl_coef > 0:
        if checkpoint:
            ref_model, _ = load_model(base_path, device=device, dtype=dtype)
        else:
            ref_model = copy.deepcopy(model)
        ref_model.eval().requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    if checkpoint:
        state = load_trainer_state(checkpoint)
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"], task_rng)
    policy = HFPolicy(model, tokenizer, max_new_tokens=config.max_new_tokens,
                      max_prompt_tokens=config.max_prompt_tokens,
                      temperature=config.temperature, top_p=config.top_p,
                      chat_template=config.chat_template,
                      generation_batch_size=config.generation_batch_size, name=config.model)
    actor_cfg = make_actor_config(
        clip_ratio_low=config.clip_ratio_low, clip_ratio_high=config.clip_ratio_high,
        clip_ratio_c=config.clip_ratio_c, loss_agg_mode=config.loss_agg_mode,
        policy_loss=config.policy_loss, kl_coef=config.kl_coef, kl_type=config.kl_type,
        rollout_n=config.rollouts_per_task, micro_batch_size=config.micro_batch_size)
    manifest = {"config": config.to_dict(), "backend": "local", "estimator": config.estimator,
                "env": config.env, "model": config.model, "model_path": str(base_path),
                "state_key": config.state_key, "success_reward": config.success_reward,
                "trainer": "g2po.trainers.local"}
    writer = RunWriter(run_dir, manifest, resume=stored is not None)
    result = TrainResult(run_dir, config, resumed_from=start if stored is not None else None)
    validation = None
    if config.val_tasks:
        from g2po.trainers.validation import Validation

        validation = Validation(config, run_dir, manifest,
                                resume_from=start if stored is not None else None)
        if validation.due(0):
            _, val_metrics = validation.run(policy, 0)
            result.validations[0] = val_metrics
            log(f"validation before training: {_val_line(val_metrics)}")

    # -- the loop -------------------------------------------------------------------------
    bar = tqdm(total=config.total_steps, initial=start, disable=not config.progress,
               desc=f"{config.estimator} {config.env}", unit="step", dynamic_ncols=True)
    try:
        for step in range(start + 1, config.total_steps + 1):
            times: dict[str, float] = {}
            t0 = time.perf_counter()
            tasks = draw_tasks(task_rng, pool, config.tasks_per_step)
            rollouts = collect_step(policy, family, tasks, group_size=config.rollouts_per_task,
                                    max_steps=config.max_steps,
                                    history_length=config.history_length,
                                    success_reward=config.success_reward, train_step=step,
                                    env_name=config.env)
            t1 = time.perf_counter()
            steps, adv_metrics = step_advantages(rollouts.steps, config)
            t2 = time.perf_counter()
            advantages = steps["adv"].to_numpy(dtype=np.float64)
            metrics, logprob_mean = update_policy(
                model, optimizer, rollouts.prompt_ids, rollouts.response_ids, advantages,
                config, actor_cfg, pad_id=policy.pad_id, ref_model=ref_model)
            t3 = time.perf_counter()
            times.update(rollout_s=t1 - t0, generate_s=rollouts.generate_s,
                         env_s=rollouts.env_s, advantages_s=t2 - t1, update_s=t3 - t2)
            logged = rollouts.steps.assign(logprob_mean=logprob_mean)
            metrics.update(step_metrics(rollouts.steps, rollouts.stats, rollouts.seconds))
            metrics.update(adv_metrics)
            metrics.update(_update_metrics(steps, advantages, rollouts.prompts_truncated))
            metrics.update({f"time/{k}": v for k, v in times.items()})
            if validation is not None and validation.due(step):
                _, val_metrics = validation.run(policy, step)
                result.validations[step] = val_metrics
                metrics.update(val_metrics)
                bar.write(f"validation after step {step}: {_val_line(val_metrics)}")
            t3 = time.perf_counter()  # the validation's time is its own (time/validate_s)
            writer.write_step(step, logged, metrics)
            t4 = time.perf_counter()
            times["log_s"] = t4 - t3
            if step % config.checkpoint_every == 0 or step == config.total_steps:
                save_checkpoint(checkpoints, step, model, tokenizer, optimizer,
                                rng_state(task_rng), keep=config.keep_checkpoints,
                                extra={"estimator": config.estimator})
            times["checkpoint_s"] = time.perf_counter() - t4
            times["step_s"] = time.perf_counter() - t0
            result.steps.append(step)
            result.times.append(times)
            rewards = steps.groupby(["group_id", "traj_id"])["episode_reward"].first()
            success = float(rewards.ge(config.success_reward).mean())
            bar.set_postfix_str(
                f"reward {rewards.mean():.2f} success {success:.0%} "
                f"valid {steps['is_action_valid'].mean():.0%} "
                f"roll {times['rollout_s']:.1f}s adv {times['advantages_s'] * 1000:.0f}ms "
                f"upd {times['update_s']:.1f}s", refresh=False)
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
