"""Composing the run's configuration: verl's ``ppo_trainer.yaml``, G2PO's ``g2po.yaml``, an
optional user file, then command-line overrides (hydra strings, passed through untouched).

A user file is either

- a plain nested YAML of settings (no ``defaults`` list): it is merged after G2PO's defaults and
  before the command-line overrides, or
- a full hydra primary config (it has a ``defaults`` list): it is composed as it is, so it
  lists ``ppo_trainer`` and ``g2po`` itself and sets ``hydra.searchpath`` to
  ``[pkg://g2po.trainers.verl_backend.config, pkg://verl.trainer.config]``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml
from omegaconf import DictConfig

from g2po.trainers.verl_backend.settings import VerlConfigError

__all__ = ["CONFIG_DIR", "PRIMARY", "compose_config"]

#: The packaged configuration folder (``g2po_trainer.yaml``, ``g2po.yaml``).
CONFIG_DIR = Path(__file__).resolve().parent / "config"
#: The primary config the packaged folder composes.
PRIMARY = "g2po_trainer"

_WRAPPER = """\
# Written by g2po.trainers.verl_backend.compose: G2PO's defaults, then {stem}.yaml.
hydra:
  searchpath:
    - file://{user_dir}
    - pkg://g2po.trainers.verl_backend.config
    - pkg://verl.trainer.config
defaults:
  - ppo_trainer
  - g2po
  - {stem}
  - _self_
"""


def _compose(config_dir: Path, name: str, overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name=name, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:
        message = " ".join(str(err).split())
        raise VerlConfigError([f"composing the verl configuration failed: {message}"]) from None


def _user_file_kind(path: Path) -> str:
    """``primary`` (it has a hydra ``defaults`` list) or ``settings``."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise VerlConfigError([f"{path}: cannot read the configuration file: {err}"]) from None
    if data is None:
        return "settings"
    if not isinstance(data, dict):
        raise VerlConfigError([f"{path}: a configuration file holds a mapping of settings"])
    return "primary" if "defaults" in data else "settings"


def compose_config(overrides: Sequence[str] = (), config_path: str | Path | None = None
                   ) -> DictConfig:
    """The composed configuration (not yet validated: see
    :func:`g2po.trainers.verl_backend.settings.config_problems`).

    ``overrides`` are hydra override strings (``algorithm.g2po.w=0.8``, ``+new.key=1``);
    ``config_path`` an optional YAML file (see the module docstring). Raises
    :class:`VerlConfigError` when hydra cannot compose (unknown key, bad syntax, missing file).

    >>> cfg = compose_config(["algorithm.g2po.w=0.8"])
    >>> cfg.algorithm.adv_estimator, cfg.algorithm.g2po.w
    ('g2po', 0.8)
    """
    overrides = [str(o) for o in overrides]
    if config_path is None:
        return _compose(CONFIG_DIR, PRIMARY, overrides)
    path = Path(config_path).expanduser().resolve()
    if not path.is_file() or path.suffix not in (".yaml", ".yml"):
        raise VerlConfigError([f"{config_path}: no such YAML configuration file"])
    if _user_file_kind(path) == "primary":
        return _compose(path.parent, path.stem, overrides)
    with tempfile.TemporaryDirectory(prefix="g2po-verl-config-") as tmp:
        name = "g2po_user_primary"
        if path.stem in (name, PRIMARY, "g2po", "ppo_trainer"):
            raise VerlConfigError([f"{path}: rename the file; {path.stem}.yaml is a name the "
                                   "packaged configuration uses"])
        (Path(tmp) / f"{name}.yaml").write_text(
            _WRAPPER.format(user_dir=path.parent, stem=path.stem), encoding="utf-8")
        return _compose(Path(tmp), name, overrides)
