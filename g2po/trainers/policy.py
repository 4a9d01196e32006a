"""A Hugging Face causal LM as the agent's policy: batched sampling, and the log-probs the loss
needs, both in verl's token layout.

Layout (as verl's): prompts are **left**-padded to a common length P and responses
**right**-padded to a common length R, so every response starts at column P. Position ids
count real tokens only (``cumsum(attention_mask) - 1``), so a left-padded prompt sees the same
positions as an unpadded one, during sampling and during the update alike.

The policy follows the collector's protocol: :meth:`HFPolicy.act` maps a batch of prompts to
response texts; :meth:`HFPolicy.generate` also returns the token ids the trainer needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from g2po.errors import G2POError

__all__ = [
    "Generation",
    "TokenBatch",
    "HFPolicy",
    "ModelError",
    "load_model",
    "pack",
    "left_pad",
    "response_log_probs",
    "resolve_device",
    "resolve_dtype",
]


class ModelError(G2POError, ValueError):
    """A model that cannot be loaded or used (not a local folder, no tokenizer, no pad id)."""


@dataclass
class Generation:
    """One batch of sampled responses, in the order of the prompts.

    ``prompt_ids`` are the tokens the model saw (chat template applied, truncated to the last
    ``max_prompt_tokens``); ``response_ids`` the sampled tokens, up to and including the end
    of sequence token when the model emitted one; ``texts`` the decoded responses without it.
    """

    texts: list[str]
    prompt_ids: list[list[int]]
    response_ids: list[list[int]]
    prompt_truncated: list[bool]


@dataclass
class TokenBatch:
    """Samples packed in verl's layout (see the module docstring).

    input_ids, attention_mask, position_ids : (B, P + R) int64.
    responses : (B, R) int64, the response tokens (pad after the end).
    response_mask : (B, R) bool, True on real response tokens.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    responses: torch.Tensor
    response_mask: torch.Tensor

    def to(self, device: torch.device) -> TokenBatch:
        return TokenBatch(*(t.to(device) for t in (self.input_ids, self.attention_mask,
                                                   self.position_ids, self.responses,
                                                   self.response_mask)))


def pack(prompt_ids: Sequence[Sequence[int]], response_ids: Sequence[Sequence[int]],
         pad_id: int) -> TokenBatch:
    """Pack B (prompt, response) token lists: prompts left-padded, responses right-padded.

    >>> b = pack([[5, 6], [7]], [[8], [9, 10]], pad_id=0)
    >>> b.input_ids.tolist()
    [[5, 6, 8, 0], [0, 7, 9, 10]]
    >>> b.position_ids.tolist()
    [[0, 1, 2, 2], [0, 0, 1, 2]]
    """
    n = len(prompt_ids)
    if n != len(response_ids) or n == 0:
        raise ValueError(f"pack: {n} prompts and {len(response_ids)} responses; need as many, "
                         "at least one")
    prompts, prompt_mask = left_pad(prompt_ids, pad_id)
    r_len = max(max(len(r) for r in response_ids), 1)
    responses = torch.full((n, r_len), pad_id, dtype=torch.long)
    response_mask = torch.zeros((n, r_len), dtype=torch.long)
    for i, r in enumerate(response_ids):
        responses[i, :len(r)] = torch.as_tensor(list(r), dtype=torch.long)
        response_mask[i, :len(r)] = 1
    ids = torch.cat([prompts, responses], dim=1)
    mask = torch.cat([prompt_mask, response_mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return TokenBatch(ids, mask, positions, responses, response_mask.bool())


def left_pad(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, P) int64 token ids left-padded with ``pad_id`` and their (B, P) attention mask."""
    p_len = max(max(len(x) for x in ids), 1)
    out = torch.full((len(ids), p_len), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), p_len), dtype=torch.long)
    for i, x in enumerate(ids):
        if len(x):
            out[i, p_len - len(x):] = torch.as_tensor(list(x), dtype=torch.long)
            mask[i, p_len - len(x):] = 1
    return out, mask


def response_log_probs(model: torch.nn.Module, batch: TokenBatch,
                       temperature: float = 1.0) -> torch.Tensor:
    """(B, R) float32: log pi(token | prefix) of each response token (0 under the pad).

    Only the last R + 1 positions' logits are computed (``logits_to_keep``), so the cost of the
    vocabulary projection does not grow with the prompt. Logits are divided by the sampling
    ``temperature``, as verl does, so the log-probs are those of the sampling distribution.
    """
    r_len = batch.responses.shape[1]
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                position_ids=batch.position_ids, logits_to_keep=r_len + 1, use_cache=False)
    logits = out.logits[:, :r_len].float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = logits.gather(-1, batch.responses.unsqueeze(-1)).squeeze(-1)
    log_probs = picked - torch.logsumexp(logits, dim=-1)
    return log_probs * batch.response_mask


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` -> cuda when available, else cpu; otherwise ``torch.device(name)``."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(f"device {name!r} asked for, but this torch has no CUDA device; "
                         "use --device cpu")
    return device


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """``auto`` -> float32 on CPU, bfloat16 on GPU."""
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16,
            "float16": torch.float16}[name]


def load_model(path: str | Path, *, device: torch.device, dtype: torch.dtype):
    """A local Hugging Face causal LM and its tokenizer; never downloads anything.

    Raises :class:`ModelError` when ``path`` is not a model folder (``config.json``), has no
    tokenizer, or the tokenizer has neither a pad nor an end-of-sequence token.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        raise ModelError(
            f"model {str(path)!r}: not a local Hugging Face model folder (no config.json). "
            "--model takes 'tiny' or the path of a folder saved with save_pretrained; hub "
            "names are never downloaded (download the model first, e.g. with "
            "`huggingface-cli download NAME --local-dir DIR`)"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as err:
        raise ModelError(f"model {str(path)!r}: no usable tokenizer: {err}") from None
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ModelError(f"model {str(path)!r}: the tokenizer has no pad and no eos token")
        tokenizer.pad_token = tokenizer.eos_token
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
    except (OSError, ValueError) as err:
        raise ModelError(f"model {str(path)!r}: cannot load the weights: {err}") from None
    return model.to(device), tokenizer


class HFPolicy:
    """A causal LM and its tokenizer that sample responses to batches of prompts.

    Sampling draws from the full distribution at ``temperature`` (``top_p`` 1 by default, no
    top-k, no repetition penalty, whatever the model's own generation config says), so the
    log-probs of :func:`response_log_probs` are exactly those of the sampler.
    """

    def __init__(self, model, tokenizer, *, max_new_tokens: int = 48,
                 max_prompt_tokens: int = 1024, temperature: float = 1.0, top_p: float = 1.0,
                 chat_template: str = "auto", generation_batch_size: int = 0,
                 name: str = "") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.templated = chat_template == "auto" and bool(getattr(tokenizer, "chat_template",
                                                                   None))
        self.generation_batch_size = generation_batch_size
        self.name = name
        self.pad_id = int(tokenizer.pad_token_id)
        eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        config_eos = getattr(model.generation_config, "eos_token_id", None)
        if config_eos is not None:
            self.eos_ids |= set(config_eos if isinstance(config_eos, list) else [config_eos])

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def render(self, prompt: str) -> str:
        """The text the model reads: the prompt in the chat template as a user turn, if any."""
        if self.templated:
            return self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], add_generation_prompt=True,
                tokenize=False)
        return prompt

    def encode(self, prompts: Sequence[str]) -> tuple[list[list[int]], list[bool]]:
        """Token ids of each rendered prompt (its last ``max_prompt_tokens``) and whether it was
        cut."""
        texts = [self.render(p) for p in prompts]
        ids = self.tokenizer(texts, add_special_tokens=not self.templated)["input_ids"]
        cut = [len(x) > self.max_prompt_tokens for x in ids]
        return [list(x[-self.max_prompt_tokens:]) for x in ids], cut

    @torch.no_grad()
    def generate(self, prompts: Sequence[str]) -> Generation:
        """Sample one response per prompt (in chunks of ``generation_batch_size``)."""
        from transformers import GenerationConfig

        prompt_ids, cut = self.encode(prompts)
        config = GenerationConfig(
            do_sample=True, temperature=self.temperature, top_p=self.top_p, top_k=0,
            repetition_penalty=1.0, max_new_tokens=self.max_new_tokens,
            pad_token_id=self.pad_id, eos_token_id=sorted(self.eos_ids),
        )
        size = self.generation_batch_size or len(prompt_ids)
        responses: list[list[int]] = []
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(prompt_ids), size):
                chunk = prompt_ids[start:start + size]
                ids, mask = left_pad(chunk, self.pad_id)
                out = self.model.generate(input_ids=ids.to(self.device),
                                          attention_mask=mask.to(self.device),
                                          generation_config=config)
                responses.extend(self._cut(row) for row in out[:, ids.shape[1]:].tolist())
        finally:
            self.model.train(was_training)
        texts = [self.tokenizer.decode([t for t in r if t not in self.eos_ids],
                                       skip_special_tokens=False) for r in responses]
        return Generation(texts, prompt_ids, responses, cut)

    def _cut(self, row: list[int]) -> list[int]:
        """The sampled tokens up to and including the first end-of-sequence token."""
        for i, token in enumerate(row):
            if token in self.eos_ids:
                return row[:i + 1]
        return row

    def act(self, turns: Sequence[Any]) -> list[dict[str, Any]]:
        """The collector's policy protocol (:class:`g2po.rollouts.Policy`): one response per
        turn (a :class:`g2po.rollouts.Turn` or a prompt string), with its token counts."""
        prompts = [t if isinstance(t, str) else t.prompt for t in turns]
        gen = self.generate(prompts)
        return [{"text": text, "prompt_tokens": len(p), "response_tokens": len(r)}
                for text, p, r in zip(gen.texts, gen.prompt_ids, gen.response_ids)]
