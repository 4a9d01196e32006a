"""verl on CPU: a CPU platform for verl's platform registry, and the two patches it needs.

verl 0.9.1 has no CPU platform: without an accelerator it falls back to ``nvidia``, turns
``trainer.device=cpu`` back into ``cuda`` and builds a ``cpu:gloo,cuda:nccl`` process group.
Its platform registry is open, though (``PlatformRegistry.register``, selected with
``VERL_PLATFORM``), so this module registers ``cpu``: device and vendor ``cpu``, the ``gloo``
backend, one logical Ray ``GPU`` per worker (Ray has no other way to give every FSDP worker
its own slot), no CUDA IPC, a ``torch.cuda``-shaped device module and the device id
``"cpu"`` (an integer is read by torch as an accelerator index).

The platform is only ever chosen explicitly (``VERL_PLATFORM=cpu``, which ``g2po train
--device cpu`` sets for the driver and every Ray worker); registering it changes nothing for
GPU runs. The patches of verl's internals are applied only when it is chosen, only on the verl
version they were written for (:data:`PATCHED_VERL`), and each is listed in docs/verl.md with
the upstream change that would remove it:

1. ``initialize_global_process_group_ray`` builds ``f"cpu:gloo,{device}:{backend}"``, which on
   CPU reads ``cpu:gloo,cpu:gloo`` (torch refuses a duplicate device type): its default
   backend becomes ``cpu:gloo``.
2. The FSDP2 engine wraps forward-only models (the reference policy) in a hard-coded
   ``CPUOffloadPolicy(pin_memory=True)``; pinning needs an accelerator: on CPU the policy does
   not pin.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import types
from importlib.metadata import version
from typing import Any

import psutil
import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

__all__ = ["PLATFORM", "PATCHED_VERL", "PlatformCPU", "cpu_device_module", "selected",
           "apply_patches", "use_cpu_platform", "peak_rss_bytes"]

logger = logging.getLogger(__name__)

#: The name ``VERL_PLATFORM`` selects.
PLATFORM = "cpu"
#: The verl release the patches below were written against (and checked on).
PATCHED_VERL = "0.9.1"


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    """The peak resident memory of this process (Linux reports ``ru_maxrss`` in KiB and
    updates it lazily, so never below the current figure)."""
    return max(int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, _rss())


def cpu_device_module() -> types.ModuleType:
    """``torch.cpu`` completed with the ``torch.cuda`` functions verl calls on its device module.

    Memory figures are the process's resident memory (there is no separate device memory);
    the RNG state is torch's CPU generator; cache and IPC calls have nothing to do.
    """
    module = types.ModuleType("g2po_verl_cpu_device")
    for name in dir(torch.cpu):
        if not name.startswith("__"):
            setattr(module, name, getattr(torch.cpu, name))
    noop = lambda *args, **kwargs: None  # noqa: E731
    vm = psutil.virtual_memory
    module.__dict__.update(
        current_device=lambda: PLATFORM,
        device_count=lambda: 1,
        is_available=lambda: True,
        set_device=noop,
        empty_cache=noop,
        ipc_collect=noop,
        reset_peak_memory_stats=noop,
        set_per_process_memory_fraction=noop,
        manual_seed=torch.manual_seed,
        manual_seed_all=torch.manual_seed,
        get_rng_state=lambda *args, **kwargs: torch.get_rng_state(),
        set_rng_state=lambda state, *args, **kwargs: torch.set_rng_state(state),
        mem_get_info=lambda *args, **kwargs: (int(vm().available), int(vm().total)),
        memory_allocated=lambda *args, **kwargs: _rss(),
        memory_reserved=lambda *args, **kwargs: _rss(),
        max_memory_allocated=lambda *args, **kwargs: peak_rss_bytes(),
        max_memory_reserved=lambda *args, **kwargs: peak_rss_bytes(),
        get_device_name=lambda *args, **kwargs: "cpu",
    )
    return module


_DEVICE_MODULE: types.ModuleType | None = None


@PlatformRegistry.register(platform=PLATFORM)
class PlatformCPU(PlatformBase):
    """verl's platform interface on the CPU (torch's CPU build, gloo collectives)."""

    @property
    def device_name(self) -> str:
        return PLATFORM

    @property
    def vendor_name(self) -> str:
        return PLATFORM

    @property
    def device_module(self) -> types.ModuleType:
        global _DEVICE_MODULE
        if _DEVICE_MODULE is None:
            _DEVICE_MODULE = cpu_device_module()
        return _DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return False  # never auto-detected: chosen with VERL_PLATFORM=cpu only

    def current_device(self) -> str:  # type: ignore[override]
        return PLATFORM  # torch reads an int as an accelerator index

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # what Ray sets for a logical GPU; nothing reads it

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # one logical GPU per worker: Ray's slot, no device behind it

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def rollout_env_vars(self) -> dict[str, str]:
        return {}

    def cudart(self) -> Any:
        return None


def selected() -> bool:
    """Whether this process runs verl on the CPU platform (``VERL_PLATFORM=cpu``)."""
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM


def _unpinned_offload_policy():
    from torch.distributed.fsdp import CPUOffloadPolicy

    class UnpinnedCPUOffloadPolicy(CPUOffloadPolicy):
        """FSDP2's CPU offload without pinned memory (pinning needs an accelerator)."""

        def __init__(self, pin_memory: bool = False):
            super().__init__(pin_memory=False)

    return UnpinnedCPUOffloadPolicy


_PATCHED = False


def apply_patches() -> None:
    """Apply the CPU patches of verl's internals (see the module docstring); idempotent.

    Raises RuntimeError on another verl release than :data:`PATCHED_VERL`: the patched code
    may have moved, and a silent half-patch would fail somewhere far from here.
    """
    global _PATCHED
    if _PATCHED:
        return
    found = version("verl")
    if found != PATCHED_VERL:
        raise RuntimeError(
            f"verl's CPU mode (VERL_PLATFORM=cpu, g2po train --device cpu) is written for verl "
            f"{PATCHED_VERL}, and this is verl {found}: install verl=={PATCHED_VERL} or run on a "
            "GPU (omit --device cpu); see docs/verl.md, 'verl on CPU'")
    import verl.utils.distributed as distributed
    import verl.workers.engine.fsdp.transformer_impl as fsdp_impl

    # 1. one gloo group for the one device type (the function object is shared by every
    #    module that imported it, so changing its default reaches them all).
    distributed.initialize_global_process_group_ray.__defaults__ = (None, f"{PLATFORM}:gloo")
    # 2. the reference model's CPU offload without pinned memory.
    fsdp_impl.CPUOffloadPolicy = _unpinned_offload_policy()
    _PATCHED = True
    logger.info("verl %s CPU mode: patched the process-group backend and FSDP2's offload "
                "pinning", found)


def use_cpu_platform() -> None:
    """Make this process run verl on the CPU platform (the launcher; workers get
    ``VERL_PLATFORM=cpu`` from their runtime environment and import this module)."""
    from verl.plugin.platform import platform_manager

    os.environ["VERL_PLATFORM"] = PLATFORM
    apply_patches()
    current = platform_manager._current_platform
    if current is not None and not isinstance(current, PlatformCPU):
        platform_manager.set_platform(PlatformCPU())


if selected():
    apply_patches()
