"""``actor_rollout_ref.rollout.name=hf``: a transformers generation server for verl's agent loops.

verl 0.9.1 wires only vLLM, SGLang and TensorRT-LLM into its rollout registries
(``_ROLLOUT_REGISTRY`` for the adapter inside the FSDP worker, ``RolloutReplicaRegistry`` for
the server replicas); only vLLM runs without a GPU, and only with its CPU build (~2 GiB,
``--rollout vllm``, :mod:`.vllm_cpu`). This module registers a fourth, the light default of the
CPU mode, through those same open registries, so verl's own client, load balancer, naive
checkpoint engine and agent loop workers drive it unchanged:

- :class:`HFServer`, one Ray actor per replica: the model (transformers, eager attention,
  float32 on the CPU) answering verl's token-in-token-out ``generate`` with the sampled tokens
  and their log-probs under the sampling temperature (what the actor recomputes);
- :class:`HFReplica`, the replica verl's ``LLMServerManager`` starts beside the FSDP workers;
- :class:`HFServerAdapter`, the rollout object inside the FSDP worker: after each update it
  receives the actor's full weights from verl (``update_weights``) and loads them into the
  server, so every rollout samples from the current policy.

Requests are served one at a time (a lock around ``model.generate``): the server is for small
models on CPU (tests, debugging); GPUs use vLLM or SGLang.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import Any

import ray
import torch
from verl.workers.config import HFModelConfig, RolloutConfig
from verl.workers.rollout.base import _ROLLOUT_REGISTRY, BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

__all__ = ["NAME", "HFServer", "HFReplica", "HFServerAdapter", "sample", "server_name"]

logger = logging.getLogger(__name__)

#: ``actor_rollout_ref.rollout.name`` of this rollout.
NAME = "hf"


def server_name(replica_rank: int) -> str:
    """The Ray actor name of replica ``replica_rank``'s server (the adapter looks it up)."""
    return f"{NAME}_server_{replica_rank}"


@torch.no_grad()
def sample(model: torch.nn.Module, prompt_ids: list[int], *, max_tokens: int,
           temperature: float, top_p: float = 1.0, top_k: int = -1,
           eos_token_ids: Iterable[int] = (), generator: torch.Generator | None = None
           ) -> tuple[list[int], list[float], str]:
    """Sample up to ``max_tokens`` tokens after ``prompt_ids``.

    Returns the tokens (through the first end-of-sequence token), the log-probability of each
    under softmax(logits / temperature) before top-p/top-k filtering (as verl's actor computes
    it; temperature 0 is greedy and scores at temperature 1), and the stop reason
    (``completed`` at end-of-sequence, ``length`` otherwise). A KV cache keeps each new token
    one forward pass of one position.
    """
    eos = {int(t) for t in eos_token_ids}
    greedy = temperature <= 0
    scale = 1.0 if greedy else float(temperature)
    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
    past = None
    tokens: list[int] = []
    logprobs: list[float] = []
    for _ in range(max_tokens):
        out = model(input_ids=ids, past_key_values=past, use_cache=True)
        past = out.past_key_values
        logp = torch.log_softmax(out.logits[0, -1].float() / scale, dim=-1)
        if greedy:
            token = int(torch.argmax(logp))
        else:
            weights = logp.exp()
            if top_k is not None and 0 < top_k < weights.numel():
                kth = torch.topk(weights, top_k).values[-1]
                weights = torch.where(weights < kth, 0.0, weights)
            if top_p is not None and top_p < 1.0:
                order = torch.argsort(weights, descending=True)
                cumulative = torch.cumsum(weights[order], 0)
                drop = order[(cumulative - weights[order]) > top_p]
                weights[drop] = 0.0
            token = int(torch.multinomial(weights / weights.sum(), 1, generator=generator))
        tokens.append(token)
        logprobs.append(float(logp[token]))
        if token in eos:
            return tokens, logprobs, "completed"
        ids = torch.tensor([[token]], dtype=torch.long, device=device)
    return tokens, logprobs, "length"


class HFServer:
    """One replica's generation server (a Ray actor), serving verl's ``generate`` calls."""

    def __init__(self, config: RolloutConfig, model_config: HFModelConfig, replica_rank: int):
        from transformers import AutoModelForCausalLM
        from verl.utils.config import omega_conf_to_dataclass

        config = omega_conf_to_dataclass(config)
        model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
        self.config = config
        self.replica_rank = replica_rank
        path = model_config.local_path or model_config.path
        self.model = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.float32, attn_implementation="eager",
            trust_remote_code=bool(model_config.trust_remote_code)).eval()
        eos = getattr(model_config.generation_config, "eos_token_id", None)
        if eos is None and model_config.tokenizer is not None:
            eos = model_config.tokenizer.eos_token_id
        self.eos_token_ids = [eos] if isinstance(eos, int) else list(eos or [])
        self.generator = torch.Generator().manual_seed(int(config.seed) + replica_rank)
        self.global_steps: int | None = None
        self._lock = asyncio.Lock()  # torch threads: Ray's OMP_NUM_THREADS for the actor

    def _max_tokens(self, prompt_ids: list[int], sampling_params: dict[str, Any]) -> int:
        """The response budget, as verl's vLLM server computes it."""
        room = int(self.config.max_model_len or
                   self.config.prompt_length + self.config.response_length) - len(prompt_ids)
        if room < 1:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens leaves no room to generate "
                             f"(max_model_len {self.config.max_model_len})")
        wanted = sampling_params.get("max_tokens", sampling_params.get("max_new_tokens"))
        if wanted is None:
            wanted = min(self.config.response_length, self.config.prompt_length +
                         self.config.response_length - len(prompt_ids))
        return max(1, min(int(wanted), room))

    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any],
                       request_id: str, image_data: Any = None, video_data: Any = None,
                       **kwargs: Any) -> TokenOutput:
        if image_data is not None or video_data is not None:
            raise ValueError("the hf rollout serves text models only")
        params = dict(sampling_params)
        max_tokens = self._max_tokens(list(prompt_ids), params)
        async with self._lock:
            tokens, logprobs, reason = await asyncio.to_thread(
                sample, self.model, list(prompt_ids), max_tokens=max_tokens,
                temperature=float(params.get("temperature", 1.0)),
                top_p=float(params.get("top_p", 1.0) or 1.0),
                top_k=int(params.get("top_k", -1) or -1),
                eos_token_ids=self.eos_token_ids, generator=self.generator)
        return TokenOutput(token_ids=tokens,
                           log_probs=logprobs if params.get("logprobs") else None,
                           stop_reason=reason,
                           num_preempted=0,
                           extra_fields={"global_steps": self.global_steps})

    async def load_weights(self, state: dict[str, torch.Tensor], global_steps: int | None
                           ) -> int:
        """Load the actor's weights (full tensors, HF names); returns how many were loaded."""
        own = self.model.state_dict()
        unknown = sorted(set(state) - set(own))
        if unknown:
            raise KeyError(f"the hf rollout model has no parameter(s) {unknown[:5]} "
                           f"({len(unknown)} in all): the actor and rollout models differ")
        with torch.no_grad():
            for name, tensor in state.items():
                own[name].copy_(tensor.to(own[name].dtype))
        self.global_steps = global_steps
        return len(state)

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    async def abort_all_requests(self, reject_request: bool = False) -> dict[str, Any]:
        return {"aborted_count": 0, "request_ids": []}

    async def _nothing(self, *args: Any, **kwargs: Any) -> None:
        """Memory and profiling controls: the CPU server keeps its model and has no cache."""
        return None

    wake_up = sleep = clear_kv_cache = release_kv_cache = resume_kv_cache = _nothing
    resume_generation = start_profile = stop_profile = wait_for_requests_to_drain = _nothing


class HFReplica(RolloutReplica):
    """A replica of :class:`HFServer`: one server, on the node of its first FSDP worker."""

    def rollout_worker_use_gpu(self) -> bool:
        return False

    async def launch_servers(self) -> None:
        node_id = None
        if self.workers:
            node_id = await self.workers[0].__ray_call__.remote(
                lambda worker: ray.get_runtime_context().get_node_id())
        options: dict[str, Any] = {"name": server_name(self.replica_rank),
                                   "max_concurrency": self.max_concurrency, "num_cpus": 1}
        if node_id is not None:
            options["scheduling_strategy"] = (
                ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=node_id,
                                                                              soft=False))
        server = ray.remote(HFServer).options(**options).remote(
            config=self.config, model_config=self.model_config, replica_rank=self.replica_rank)
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"{NAME}://replica-{self.replica_rank}"


class HFServerAdapter(BaseRollout):
    """The rollout inside an FSDP worker: hands the synced weights to the replica's server."""

    def __init__(self, config: RolloutConfig, model_config: HFModelConfig, device_mesh,
                 replica_rank: int = -1):
        super().__init__(config, model_config, device_mesh)
        world = (self.config.tensor_model_parallel_size * self.config.data_parallel_size *
                 self.config.pipeline_model_parallel_size)
        rank = int(os.environ.get("RANK", 0))
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % world
        self.server = None

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    @torch.no_grad()
    async def update_weights(self, weights, global_steps: int | None = None,
                             wire_format: str = "named_tensors", **kwargs: Any) -> None:
        if wire_format != "named_tensors":
            raise NotImplementedError(f"the hf rollout takes full tensors, not {wire_format!r} "
                                      "(actor_rollout_ref.rollout.checkpoint_engine.backend="
                                      "naive)")
        # Every rank walks the generator (gathering a sharded tensor is collective); the
        # replica's first rank sends.
        state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in weights}
        if self.rollout_rank != 0:
            return
        if self.server is None:
            self.server = ray.get_actor(server_name(self.replica_rank))
        await self.server.load_weights.remote(state, global_steps)


def register() -> None:
    """Add ``hf`` to verl's rollout registries (idempotent)."""
    _ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.HFServerAdapter"
    RolloutReplicaRegistry.register(NAME, lambda: HFReplica)


register()
