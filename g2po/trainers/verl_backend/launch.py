"""Starting a G2PO run on verl: compose, check, prepare the task lists, hand over to verl.

:func:`run` is what ``g2po train --backend verl`` calls. Everything before the hand-over runs
on any machine (``print_config=True`` stops there). verl's GPU path needs GPUs and a rollout
engine (vLLM, SGLang or TensorRT-LLM), checked up front so a machine without them gets a clear
message instead of a Ray traceback; ``trainer.device=cpu`` (``--device cpu``) runs the same
trainer on CPU (:mod:`g2po.trainers.verl_backend.devices`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from omegaconf import DictConfig, OmegaConf, open_dict

import g2po.trainers.verl_backend.devices as devices
from g2po.trainers.verl_backend.compose import compose_config
from g2po.trainers.verl_backend.settings import (
    VerlConfigError,
    VerlRuntimeError,
    config_problems,
    env_settings,
    library_estimator,
)

__all__ = ["run", "checked_config", "prepare", "resume_checkpoint", "runtime_problems",
           "ROLLOUT_ENGINES"]

#: ``actor_rollout_ref.rollout.name`` -> the Python package its servers need.
ROLLOUT_ENGINES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}


def checked_config(overrides: Sequence[str] = (), config_path: str | Path | None = None
                   ) -> DictConfig:
    """The composed configuration, validated; raises :class:`VerlConfigError` listing every
    problem."""
    config = compose_config(overrides, config_path)
    problems = config_problems(config)
    if problems:
        raise VerlConfigError(problems)
    return config


def resume_checkpoint(config: DictConfig) -> str | None:
    """The checkpoint verl's trainer will resume from (``trainer.resume_mode``), or None."""
    mode = str(config.trainer.resume_mode)
    if mode == "disable":
        return None
    if mode == "resume_path":
        return str(config.trainer.resume_from_path)
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    return find_latest_ckpt_path(str(config.trainer.default_local_dir))


def _check_run_dir(config: DictConfig, run_dir: Path) -> None:
    """A run directory that holds a run is only continued by a run resuming from a checkpoint."""
    from loaders.rundir import MANIFEST

    if not config.g2po_log.enable or not (run_dir / MANIFEST).is_file():
        return
    if resume_checkpoint(config) is None:
        raise VerlConfigError([
            f"g2po_log.run_dir {run_dir} already holds a run, and verl would start at step 0 "
            f"(no checkpoint in trainer.default_local_dir={config.trainer.default_local_dir}, "
            f"resume_mode={config.trainer.resume_mode}): choose another --out / "
            "g2po_log.run_dir, or remove that directory"])


def _check_panel(config: DictConfig, run_dir: Path) -> None:
    """A resumed run validates on the panel it recorded (its validations stay comparable)."""
    from g2po.evaluation import PANEL_KEY
    from g2po.trainers.verl_backend.rollout_log import validation_panel
    from loaders.rundir import MANIFEST

    panel = validation_panel(config)
    if panel is None or not (run_dir / MANIFEST).is_file():
        return
    from loaders import open_run

    try:
        panel.check_same(open_run(run_dir).manifest.get(PANEL_KEY), str(run_dir))
    except ValueError as err:
        raise VerlConfigError([str(err)]) from None


def _estimator_success_reward(config: DictConfig) -> None:
    """A library estimator that takes ``success_reward`` gets the environment's, unless its
    section sets one (``g2po.yaml`` does so for g2po; ``--estimator value_iteration`` would
    otherwise use the library default)."""
    from g2po.estimators import estimator_params

    name = library_estimator(str(config.algorithm.adv_estimator))
    if name is None or "success_reward" not in estimator_params(name):
        return
    section = config.algorithm.get(name)
    if section is None:
        config.algorithm[name] = {}
        section = config.algorithm[name]
    if section.get("success_reward") is None:
        section.success_reward = "${g2po_env.success_reward}"


def _check_reports(config: DictConfig) -> None:
    """A library estimator that needs a step column the environment does not report is
    refused here, not at the first training step (:func:`g2po.rollouts.check_reports`)."""
    from g2po.envs import env_family
    from g2po.estimators import get_spec
    from g2po.rollouts import check_reports

    name = library_estimator(str(config.algorithm.adv_estimator))
    if name is None or not any(c.required for c in get_spec(name).columns):
        return
    settings = env_settings(config)
    family = env_family(settings.name, **settings.env_kwargs)
    check_reports(name, family, family.tasks(1, settings.seed)[0])


def prepare(config: DictConfig) -> DictConfig:
    """Make the run's paths absolute (Ray workers start elsewhere), refuse to overwrite a run
    that would not resume, give the estimator the environment's success reward, and write the
    task lists when ``data.train_files`` / ``data.val_files`` are ``auto``. Changes ``config``
    in place."""
    with open_dict(config):
        _estimator_success_reward(config)
        _check_reports(config)
        run_dir = Path(str(config.g2po_log.run_dir)).expanduser().resolve()
        config.g2po_log.run_dir = str(run_dir)
        config.trainer.default_local_dir = str(
            Path(str(config.trainer.default_local_dir)).expanduser().resolve())
        _check_run_dir(config, run_dir)
        if "auto" in (str(config.data.train_files), str(config.data.val_files)):
            from g2po.trainers.verl_backend.data import write_task_files

            data_dir = config.g2po_env.get("data_dir") or run_dir / "tasks"
            train, val = write_task_files(env_settings(config), Path(str(data_dir)).expanduser())
            if str(config.data.train_files) == "auto":
                config.data.train_files = str(train)
            if str(config.data.val_files) == "auto":
                config.data.val_files = str(val)
        _check_panel(config, run_dir)
    return config


def runtime_problems(config: DictConfig) -> list[str]:
    """What this machine lacks to start verl's trainer on a local Ray cluster (empty when it
    can; a run joining an existing Ray cluster is checked by that cluster)."""
    address = os.environ.get("RAY_ADDRESS") or OmegaConf.select(
        config, "ray_kwargs.ray_init.address", default=None)
    if devices.is_cpu(config):
        problems = devices.cpu_problems(config)
        if devices.rollout_name(config) == "vllm":
            from g2po.trainers.verl_backend.vllm_cpu import vllm_problems

            problems += vllm_problems(str(config.actor_rollout_ref.model.path))
        return problems
    if address:
        return []
    problems = []
    import torch

    want = int(config.trainer.n_gpus_per_node)
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if have == 0:
        problems.append(
            "no CUDA GPU is visible: verl's GPU path needs one for its FSDP workers and "
            "rollout servers. Run on a GPU machine, or train on this one with verl's CPU mode "
            "(--device cpu, small models) or `g2po train --backend local`")
    elif have < want:
        problems.append(f"trainer.n_gpus_per_node={want} but this machine shows {have} GPU(s)")
    engine = str(config.actor_rollout_ref.rollout.name)
    package = ROLLOUT_ENGINES.get(engine)
    if package is None:
        problems.append(f"actor_rollout_ref.rollout.name={engine!r} is not one of "
                        f"{', '.join(ROLLOUT_ENGINES)}")
    elif importlib.util.find_spec(package) is None:
        problems.append(f"actor_rollout_ref.rollout.name={engine} needs the `{package}` package "
                        f"(pip install {package}, matching your CUDA and torch)")
    return problems


def run(overrides: Sequence[str] | None = None, config_path: str | Path | None = None, *,
        print_config: bool = False, out: TextIO | None = None) -> int:
    """Train with G2PO on verl; returns 0 when training finished.

    Parameters
    ----------
    overrides : hydra override strings, passed through (``g2po_env.name=alfworld:train``,
        ``algorithm.g2po.w=0.8``, ``trainer.n_gpus_per_node=8``, …).
    config_path : an optional YAML file (settings, or a full hydra primary config).
    print_config : compose, validate and print the configuration as YAML, then stop (no GPU,
        no files written).

    Raises
    ------
    VerlConfigError
        The configuration does not compose or cannot train G2PO (every problem listed).
    VerlRuntimeError
        This machine cannot start verl's trainer (no GPU, no rollout engine).
    """
    config = checked_config(overrides or (), config_path)
    cpu = devices.is_cpu(config)
    if cpu and not print_config:
        problems = devices.cpu_problems(config)
        if not problems:
            devices.apply_cpu_mode(config)  # before verl resolves its platform below
    if print_config:
        try:
            text = OmegaConf.to_yaml(config, resolve=True)
        except Exception:  # interpolations only the workers can resolve
            text = OmegaConf.to_yaml(config)
        (out or sys.stdout).write(text)
        return 0
    problems = runtime_problems(config)
    if problems:
        raise VerlRuntimeError("cannot start verl's trainer here:\n" +
                               "\n".join(f"  - {p}" for p in problems))
    prepare(config)

    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    import g2po.trainers.verl_backend.plugin  # noqa: F401  (registrations in this process too)

    if cpu:
        from g2po.trainers.verl_backend.cpu import use_cpu_platform

        use_cpu_platform()
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))
    if not cpu:
        run_ppo(config, task_runner_class=TaskRunnerV1)
        return 0
    from g2po.trainers.verl_backend.scratch import cleaned_up

    # What verl's and vLLM's processes leave in /dev/shm and /tmp goes when the run ends, also
    # when it fails or is terminated: Ray stops first, so nothing of this run still holds it.
    with cleaned_up(), _terminated_as_exit():
        try:
            run_ppo(config, task_runner_class=TaskRunnerV1)
        finally:
            import ray

            if ray.is_initialized():
                ray.shutdown()
    return 0


@contextlib.contextmanager
def _terminated_as_exit():
    """SIGTERM raises SystemExit in the block (Python's default ends the process without
    running ``finally`` clauses)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
