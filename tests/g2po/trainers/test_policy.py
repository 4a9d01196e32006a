import pytest
import torch

from g2po.rollouts import make_policy
from g2po.trainers.models import load_policy
from g2po.trainers.policy import (
    HFPolicy,
    ModelError,
    left_pad,
    load_model,
    pack,
    response_log_probs,
)
from tests.g2po.trainers.fixtures import ENV, TINY, tiny_path  # noqa: F401

CPU = torch.device("cpu")


def test_pack_layout():
    b = pack([[5, 6, 7], [8]], [[1], [2, 3]], pad_id=0)
    assert b.input_ids.tolist() == [[5, 6, 7, 1, 0], [0, 0, 8, 2, 3]]
    assert b.attention_mask.tolist() == [[1, 1, 1, 1, 0], [0, 0, 1, 1, 1]]
    assert b.position_ids.tolist() == [[0, 1, 2, 3, 3], [0, 0, 0, 1, 2]]
    assert b.responses.tolist() == [[1, 0], [2, 3]]
    assert b.response_mask.tolist() == [[True, False], [True, True]]
    ids, mask = left_pad([[1, 2], []], pad_id=9)
    assert ids.tolist() == [[1, 2], [9, 9]] and mask.tolist() == [[1, 1], [0, 0]]
    with pytest.raises(ValueError, match="as many"):
        pack([[1]], [[1], [2]], 0)


def test_log_probs_are_those_of_the_sampler(tiny_path):  # noqa: F811
    """Left padding and position ids must not change what the model computes: the update's
    log-probs equal the sampling distribution's at every sampled token."""
    from transformers import GenerationConfig

    model, tok = load_model(tiny_path, device=CPU, dtype=torch.float32)
    prompts = [tok("Your current observation is: a long corridor with doors")["input_ids"],
               tok("look")["input_ids"]]
    ids, mask = left_pad(prompts, tok.pad_token_id)
    torch.manual_seed(0)
    out = model.generate(input_ids=ids, attention_mask=mask, generation_config=GenerationConfig(
        do_sample=True, top_k=0, max_new_tokens=8, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, output_logits=True, return_dict_in_generate=True))
    sampled = out.sequences[:, ids.shape[1]:]
    expected = torch.stack([torch.log_softmax(s.float(), -1) for s in out.logits], 1)
    expected = expected.gather(-1, sampled.unsqueeze(-1)).squeeze(-1)
    policy = HFPolicy(model, tok)
    responses = [policy._cut(r) for r in sampled.tolist()]
    got = response_log_probs(model, pack(prompts, responses, tok.pad_token_id))
    for i, r in enumerate(responses):
        assert torch.allclose(got[i, :len(r)], expected[i, :len(r)], atol=1e-4)
        assert (got[i, len(r):] == 0).all()
    # a temperature divides the logits, as verl does
    hot = response_log_probs(model, pack(prompts, responses, tok.pad_token_id), 2.0)
    assert not torch.allclose(hot, got)


def test_generate_and_act(tiny_path):  # noqa: F811
    torch.manual_seed(1)
    policy = load_policy(str(tiny_path), device="cpu", max_new_tokens=12, max_prompt_tokens=20)
    long_prompt = "Your admissible actions of the current situation are: ['look']. " * 5
    gen = policy.generate(["Your task is to: take the coin.", long_prompt])
    assert gen.prompt_truncated == [False, True]
    assert len(gen.prompt_ids[1]) == 20
    assert all(1 <= len(r) <= 12 for r in gen.response_ids)
    eos = policy.tokenizer.eos_token_id
    for text, ids in zip(gen.texts, gen.response_ids):
        assert eos not in ids[:-1]  # cut at the first end of sequence
        assert "<|eos|>" not in text
    answers = policy.act(["look around"])
    assert set(answers[0]) == {"text", "prompt_tokens", "response_tokens"}


def test_same_seed_same_samples(tiny_path):  # noqa: F811
    policy = load_policy(str(tiny_path), device="cpu", max_new_tokens=10)
    torch.manual_seed(5)
    a = policy.generate(["go west"] * 3).response_ids
    torch.manual_seed(5)
    assert policy.generate(["go west"] * 3).response_ids == a


def test_chat_template_is_used_when_present(tiny_path):  # noqa: F811
    model, tok = load_model(tiny_path, device=CPU, dtype=torch.float32)
    tok.chat_template = "{% for m in messages %}[user] {{ m['content'] }}{% endfor %}" \
                        "{% if add_generation_prompt %} [agent]{% endif %}"
    assert HFPolicy(model, tok).render("hi") == "[user] hi [agent]"
    assert HFPolicy(model, tok, chat_template="none").render("hi") == "hi"


def test_model_must_be_a_local_folder(tmp_path):
    with pytest.raises(ModelError, match="not a local Hugging Face model folder.*never "
                                         "downloaded"):
        load_model("Qwen/Qwen2.5-1.5B-Instruct", device=CPU, dtype=torch.float32)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="no usable tokenizer|cannot load"):
        load_model(tmp_path, device=CPU, dtype=torch.float32)


def test_collector_makes_the_model_policy(tiny_path):  # noqa: F811
    policy = make_policy(str(tiny_path), seed=3, max_new_tokens=8)
    assert isinstance(policy, HFPolicy)
    with pytest.raises(ModelError, match="pass its spec"):
        make_policy("tiny")
    assert isinstance(make_policy(TINY, env=ENV), HFPolicy)
