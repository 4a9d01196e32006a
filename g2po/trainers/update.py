"""The local trainer's update: one training step's samples (agent steps) through verl's clipped
surrogate and KL loss, with micro-batches, mini-batches and epochs as in PPO.

Each agent step is one sample (its prompt, its response); its advantage sits on every response
token. The loss terms come from verl's ``core_algos`` (:mod:`g2po.trainers.loss`); micro-batches
accumulate gradients exactly (each normalised by the mini-batch's token count, as verl does
across ranks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from g2po.trainers.config import TrainConfig

__all__ = ["update_policy"]


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


@dataclass
class _Samples:
    """One training step's samples and what the update reads of them, per sample ``i``."""

    prompt_ids: Sequence[Sequence[int]]
    response_ids: Sequence[Sequence[int]]
    advantages: np.ndarray
    old: dict[int, torch.Tensor] | None
    """Log-probs under the sampling policy (None on-policy: the first forward gives them)."""
    ref: dict[int, torch.Tensor] | None
    """Log-probs under the reference model (None without the KL term)."""
    logprob_mean: np.ndarray
    pad_id: int
    temperature: float
    device: torch.device


def _accumulate(model: torch.nn.Module, samples: _Samples, mb: list[int], micro: int,
                actor_config) -> dict[str, float]:
    """Forward and backward the mini-batch ``mb`` in micro-batches (gradients accumulate);
    returns its ``actor/*`` scalars (losses summed over micro-batches: per mini-batch)."""
    from g2po.trainers.loss import actor_loss, set_batch_info
    from g2po.trainers.policy import pack, response_log_probs

    response_ids, device = samples.response_ids, samples.device
    tokens = sum(len(response_ids[i]) for i in mb)
    set_batch_info(actor_config, batch_num_tokens=tokens, global_batch_size=len(mb))
    sums: dict[str, float] = {}
    for chunk in _chunks(mb, micro):
        batch = pack([samples.prompt_ids[i] for i in chunk], [response_ids[i] for i in chunk],
                     samples.pad_id).to(device)
        width = batch.responses.shape[1]
        log_prob = response_log_probs(model, batch, samples.temperature)
        if samples.old is None:
            old_lp = log_prob.detach()
            for row, i in enumerate(chunk):
                k = len(response_ids[i])
                samples.logprob_mean[i] = float(old_lp[row, :k].mean()) if k else 0.0
        else:
            old_lp = _stack([samples.old[i] for i in chunk], width, device)
        ref = samples.ref
        ref_lp = _stack([ref[i] for i in chunk], width, device) if ref else None
        adv = torch.as_tensor(samples.advantages[chunk], dtype=torch.float32, device=device)
        adv = adv[:, None].expand(-1, width) * batch.response_mask
        loss, metrics = actor_loss(log_prob, old_lp, adv, batch.response_mask, actor_config,
                                   ref_log_prob=ref_lp)
        loss.backward()
        share = int(batch.response_mask.sum()) / max(tokens, 1)
        for key, value in metrics.items():
            if key in ("actor/pg_loss", "actor/kl_loss"):  # already global-normalised
                sums[key] = sums.get(key, 0.0) + value
            else:  # verl's per-micro-batch means: weight by tokens
                sums[key] = sums.get(key, 0.0) + value * share
    return sums


def _optimizer_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    grad_clip: float) -> float:
    """Clip the gradient norm (``grad_clip`` 0: not at all) and step, unless the norm is not
    finite (the gradients are dropped). Returns the norm before clipping."""
    params = [p for p in model.parameters() if p.grad is not None]
    norm = float(torch.nn.utils.clip_grad_norm_(params, grad_clip if grad_clip > 0 else
                                                math.inf))
    if math.isfinite(norm):
        optimizer.step()
    else:
        optimizer.zero_grad(set_to_none=True)
    return norm


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
    samples = _Samples(prompt_ids, response_ids, advantages, old, ref, np.zeros(n), pad_id,
                       temperature, device)

    sums: dict[str, float] = {}
    grad_norms: list[float] = []
    model.train()
    for _ in range(config.ppo_epochs):
        order = torch.randperm(n).tolist() if mini < n else list(range(n))
        for mb in _chunks(order, mini):
            mb = sorted(mb, key=lambda i: lengths[i])  # micro-batches of similar length
            optimizer.zero_grad(set_to_none=True)
            step_sums = _accumulate(model, samples, mb, micro, actor_config)
            grad_norms.append(_optimizer_step(model, optimizer, config.grad_clip))
            for key, value in step_sums.items():
                sums[key] = sums.get(key, 0.0) + value
    if old is not None:
        for i in range(n):
            samples.logprob_mean[i] = float(old[i].mean()) if len(old[i]) else 0.0
    metrics = {k: v / len(grad_norms) for k, v in sums.items()}
    n_updates = int(np.isfinite(grad_norms).sum())
    metrics["actor/grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
    metrics["actor/optimizer_steps"] = n_updates
    metrics["actor/skipped_steps"] = len(grad_norms) - n_updates
    metrics["actor/lr"] = optimizer.param_groups[0]["lr"]
    return metrics, samples.logprob_mean
