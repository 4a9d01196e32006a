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
