"""verl's vLLM rollout on CPU: the weight-keeping plugin on vLLM's real packing code, the
version and head-size checks (the whole path trains in tests/g2po/cli/test_train.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from g2po.trainers.verl_backend import vllm_cpu

if importlib.util.find_spec("vllm") is None:  # not imported here: it takes seconds
    pytest.skip("the CPU vLLM environment (make setup) has vLLM", allow_module_level=True)

# float32: oneDNN packs it on any x86 CPU (bfloat16 only with AVX-512 BF16; elsewhere vLLM
# falls back to torch's linear and keeps the weight, so there is nothing to show).
_CHILD = """
import torch
import vllm.model_executor.layers.utils as layer_utils
from g2po.trainers.verl_backend.vllm_cpu import register

def linear(seed):
    torch.manual_seed(seed)
    layer = torch.nn.Module()
    layer.weight = torch.nn.Parameter(torch.randn(64, 64),
                                      requires_grad=False)
    layer.weight.weight_loader = lambda param, loaded: param.data.copy_(loaded)
    return layer

x = torch.randn(3, 64)
# vLLM's own packing: the weight is replaced by an empty parameter without its loader.
plain = linear(0)
layer_utils.dispatch_cpu_unquantized_gemm(plain, remove_weight=True)
print(tuple(plain.weight.shape), hasattr(plain.weight, "weight_loader"))
register()
kept = linear(1)
layer_utils.dispatch_cpu_unquantized_gemm(kept, remove_weight=True)  # as linear.py calls it
print(tuple(kept.weight.shape), hasattr(kept.weight, "weight_loader"))
# verl's reload: load through the loader, then pack again; the output follows the new weight.
if hasattr(kept.weight, "weight_loader"):
    new = torch.randn(64, 64)
    kept.weight.weight_loader(kept.weight, new)
    layer_utils.dispatch_cpu_unquantized_gemm(kept, remove_weight=True)
    out = kept.cpu_linear(x, kept.weight, None).float()
    print(float((out - x @ new.T).abs().max()) < 1e-3)
else:
    print("no reload")
"""


def _child(**env: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore", **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-3:]


def test_plugin_keeps_packed_linear_weights_reloadable_in_verls_cpu_mode():
    """vLLM's CPU packing drops the weight (what broke verl's weight sync); with the plugin,
    in verl's CPU mode, the weight and its loader stay and a reload reaches the kernel."""
    assert _child(VERL_PLATFORM="cpu") == ["(0,) False", "(64, 64) True", "True"]


def test_plugin_does_nothing_outside_verls_cpu_mode():
    assert _child(VERL_PLATFORM="") == ["(0,) False", "(0,) False", "no reload"]


def test_plugin_is_a_vllm_general_plugin():
    found = {e.value for e in entry_points(group="vllm.general_plugins")}
    assert "g2po.trainers.verl_backend.vllm_cpu:register" in found


def test_head_sizes_are_vllms_own():
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    assert tuple(CPUAttentionBackend.get_supported_head_sizes()) == vllm_cpu.CPU_HEAD_SIZES


def test_installed_vllm_is_the_cpu_build_the_plugin_is_pinned_to(tmp_path):
    assert vllm_cpu.vllm_problems(tmp_path) == []


def test_a_model_vllm_cannot_attend_is_refused_with_the_fix(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps(
        {"hidden_size": 64, "num_attention_heads": 4}))
    [problem] = vllm_cpu.vllm_problems(tmp_path)
    assert "heads of size 16" in problem and "tiny:heads=2" in problem
    assert vllm_cpu.head_size(tmp_path) == 16
    monkeypatch.setattr(vllm_cpu, "_installed_vllm", lambda: "0.33.0")
    assert any("vLLM 0.33.0 is installed" in p for p in vllm_cpu.vllm_problems(tmp_path))
    monkeypatch.setattr(vllm_cpu, "_installed_vllm", lambda: None)
    assert "make setup" in vllm_cpu.vllm_problems(tmp_path)[0]
