"""Which model a ``--model``/``--policy`` name means: ``tiny`` (the local recipe of
:mod:`g2po.trainers.tiny`) or a local Hugging Face folder, loaded as an :class:`HFPolicy`.

Importing it registers the collector's ``model`` policy (``g2po rollouts --policy tiny|PATH``).
It sits above both the policy and the tiny recipe, which builds its model with the policy's
token layout.
"""

from __future__ import annotations

from pathlib import Path

import torch

from g2po.rollouts import register_policy
from g2po.trainers.policy import HFPolicy, ModelError, load_model, resolve_device, resolve_dtype
from g2po.trainers.tiny import tiny_model

__all__ = ["load_policy", "model_path"]


def load_policy(model: str = "tiny", *, env: str | None = None, device: str = "auto",
                dtype: str = "auto", **generation) -> HFPolicy:
    """The policy ``model`` names: ``tiny`` (built for ``env`` on first use, see
    :func:`g2po.trainers.tiny.tiny_model`) or a local Hugging Face model folder.
    ``generation`` are :class:`HFPolicy` options (max_new_tokens, temperature, …)."""
    dev = resolve_device(device)
    path = model_path(model, env=env)
    net, tokenizer = load_model(path, device=dev, dtype=resolve_dtype(dtype, dev))
    return HFPolicy(net, tokenizer, name=model, **generation)


def model_path(model: str, *, env: str | None = None) -> Path:
    """The folder ``model`` names (building the tiny model if needed)."""
    if model == "tiny" or model.startswith("tiny:"):
        if env is None:
            raise ModelError("the tiny model is built for an environment: pass env=SPEC")
        return tiny_model(env, model)
    return Path(model).expanduser()


def _register() -> None:
    """Make ``g2po rollouts --policy tiny|PATH`` use this policy (the collector's registry)."""

    @register_policy("model")
    def model_policy(spec: str, *, env: str | None = None, seed: int | None = None,
                     device: str = "auto", dtype: str = "auto", **generation) -> HFPolicy:
        if seed is not None:
            torch.manual_seed(int(seed))
        if env is None and (spec == "tiny" or spec.startswith("tiny:")):
            raise ModelError("the tiny model is built for one environment: pass its spec, "
                             "e.g. --policy-arg env=textworld:coin_collector-level5")
        return load_policy(spec, env=env, device=device, dtype=dtype, **generation)


_register()
