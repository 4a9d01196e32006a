"""The ``hf`` rollout: registered in verl's rollout registries, sampling with the log-probs the
actor recomputes."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from g2po.trainers.verl_backend.hf_rollout import (
    NAME,
    HFReplica,
    HFServerAdapter,
    sample,
)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=64)
    config._attn_implementation = "eager"
    return LlamaForCausalLM(config).eval()


def test_registered_in_verls_rollout_registries():
    from verl.workers.rollout.base import get_rollout_class
    from verl.workers.rollout.replica import get_rollout_replica_class

    assert get_rollout_class(NAME, "async") is HFServerAdapter
    assert get_rollout_replica_class(NAME) is HFReplica


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_log_probs_are_the_actors_under_the_temperature(model, temperature):
    """verl's actor recomputes log softmax(logits / T) of the sampled tokens in one forward
    pass; the KV-cached sampling must report the same numbers."""
    prompt = [1, 5, 7, 9]
    gen = torch.Generator().manual_seed(3)
    tokens, logprobs, reason = sample(model, prompt, max_tokens=12, temperature=temperature,
                                      generator=gen)
    assert reason == "length" and len(tokens) == len(logprobs) == 12
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + tokens])).logits[0].float()
    actor = torch.log_softmax(logits[len(prompt) - 1:-1] / temperature, dim=-1)
    want = actor[torch.arange(len(tokens)), torch.tensor(tokens)]
    assert torch.allclose(torch.tensor(logprobs), want, atol=1e-5)


def test_greedy_top_k_one_and_end_of_sequence(model):
    prompt = [2, 3, 4]
    greedy, _, _ = sample(model, prompt, max_tokens=6, temperature=0.0)
    top1, _, _ = sample(model, prompt, max_tokens=6, temperature=1.0, top_k=1,
                        generator=torch.Generator().manual_seed(0))
    assert greedy == top1
    stop, _, reason = sample(model, prompt, max_tokens=6, temperature=0.0,
                             eos_token_ids=[greedy[1]])
    assert stop == greedy[:2] and reason == "completed"


def test_server_generates_within_the_budget_and_loads_synced_weights(config):
    """The server as verl's replica builds it (from the run's configs): token-in-token-out with
    log-probs, the response budget of verl's vLLM server, and the actor's weights loaded."""
    import asyncio

    from g2po.trainers.verl_backend.hf_rollout import HFServer

    server = HFServer(config.actor_rollout_ref.rollout, config.actor_rollout_ref.model, 0)
    out = asyncio.run(server.generate([5, 6, 7], {"temperature": 1.0, "logprobs": True},
                                      request_id="r"))
    assert 1 <= len(out.token_ids) <= config.data.max_response_length
    assert len(out.log_probs) == len(out.token_ids) and out.stop_reason in ("completed", "length")
    state = {k: torch.zeros_like(v) for k, v in server.model.state_dict().items()}
    assert asyncio.run(server.load_weights(state, 7)) == len(state)
    assert all(v.abs().sum() == 0 for v in server.model.state_dict().values())
    assert server.global_steps == 7
    with pytest.raises(KeyError, match="no parameter"):
        asyncio.run(server.load_weights({"lm_head.extra": torch.zeros(1)}, 8))
