"""verl's CPU platform: registered but never auto-detected; its patches pinned to verl 0.9.1."""

from __future__ import annotations

import subprocess
import sys

import pytest

import g2po.trainers.verl_backend.cpu as cpu


def test_registered_but_only_chosen_explicitly():
    from verl.plugin.platform import PlatformRegistry

    assert PlatformRegistry.get("cpu") is cpu.PlatformCPU
    platform = cpu.PlatformCPU()
    assert not platform.is_platform_available(use_smi_check=True)
    assert (platform.device_name, platform.vendor_name) == ("cpu", "cpu")
    assert platform.communication_backend_name() == "gloo"
    assert platform.ray_resource_name() == "GPU" and not platform.is_ipc_supported()
    assert platform.current_device() == "cpu"  # an int would be read as an accelerator index


def test_device_module_answers_what_verl_asks_of_torch_cuda():
    import torch

    module = cpu.PlatformCPU().device_module
    assert module.is_available() and module.device_count() == 1
    current = module.memory_allocated()  # resident memory now; the peak is at least that
    assert module.max_memory_allocated() >= current > 0
    free, total = module.mem_get_info()
    assert 0 < free <= total
    state = module.get_rng_state()
    first = torch.rand(1)
    module.set_rng_state(state)
    assert torch.equal(torch.rand(1), first)
    for name in ("empty_cache", "synchronize", "set_device", "ipc_collect", "current_stream"):
        getattr(module, name)


def test_patches_refuse_another_verl_release(monkeypatch):
    monkeypatch.setattr(cpu, "_PATCHED", False)
    monkeypatch.setattr(cpu, "version", lambda name: "0.10.0")
    with pytest.raises(RuntimeError, match="written for verl 0.9.1, and this is verl 0.10.0"):
        cpu.apply_patches()


_CHILD = """
import torch
import verl.utils.distributed as distributed
import verl.workers.engine.fsdp.transformer_impl as fsdp_impl
from verl.utils.device import get_device_id, get_device_name, get_nccl_backend
import g2po.trainers.verl_backend.cpu
print(get_device_name(), get_device_id(), get_nccl_backend())
print(distributed.initialize_global_process_group_ray.__defaults__)
print(fsdp_impl.CPUOffloadPolicy(pin_memory=True).pin_memory)
"""


def test_in_a_cpu_process_verl_runs_on_the_cpu_platform_patched():
    """A process with VERL_PLATFORM=cpu (as every Ray worker of --device cpu): verl's device
    helpers name the CPU, one gloo group, FSDP2 offload without pinning."""
    import os

    env = {**os.environ, "VERL_PLATFORM": "cpu", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    assert done.stdout.splitlines() == ["cpu cpu gloo", "(None, 'cpu:gloo')", "False"]
