"""G2PO training on verl 0.9.1 (Ray, vLLM/SGLang, FSDP): the distributed backend.

``run(overrides, config_path)`` composes verl's ``ppo_trainer.yaml`` with G2PO's settings
(``config/g2po.yaml``) and starts verl's v1 trainer in the ``g2po`` mode, with the ``g2po_env``
agent loop playing a ``g2po.envs`` environment and the advantage estimators of the same library
the app uses. ``trainer.device=cpu`` (``--device cpu``) runs the same trainer on CPU (the
``cpu`` platform, the ``hf`` rollout or verl's vLLM rollout on vLLM's CPU platform). See
``docs/verl.md``.

Importing this package is cheap (no verl, no torch); :mod:`.plugin` imports the verl parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig

from g2po.trainers.verl_backend.settings import VerlConfigError, VerlRuntimeError

__all__ = ["run", "compose_config", "checked_config", "overrides_from_flags",
           "VerlConfigError", "VerlRuntimeError"]


def run(overrides: Sequence[str] | None = None, config_path: str | Path | None = None, *,
        print_config: bool = False, out: TextIO | None = None) -> int:
    """Train with G2PO on verl; see :func:`g2po.trainers.verl_backend.launch.run`."""
    from g2po.trainers.verl_backend.launch import run as _run

    return _run(overrides, config_path, print_config=print_config, out=out)


def compose_config(overrides: Sequence[str] = (), config_path: str | Path | None = None
                   ) -> DictConfig:
    """See :func:`g2po.trainers.verl_backend.compose.compose_config`."""
    from g2po.trainers.verl_backend.compose import compose_config as _compose

    return _compose(overrides, config_path)


def checked_config(overrides: Sequence[str] = (), config_path: str | Path | None = None
                   ) -> DictConfig:
    """See :func:`g2po.trainers.verl_backend.launch.checked_config`."""
    from g2po.trainers.verl_backend.launch import checked_config as _checked

    return _checked(overrides, config_path)


def overrides_from_flags(flags: Mapping[str, Any]) -> list[str]:
    """See :func:`g2po.trainers.verl_backend.flags.overrides_from_flags`."""
    from g2po.trainers.verl_backend.flags import overrides_from_flags as _flags

    return _flags(flags)
