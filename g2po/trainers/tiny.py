"""The tiny model recipe: a small Llama-style causal LM built on this machine, no download.

``--model tiny`` gives a model that trains with G2PO on two CPU cores in seconds per step. It is
made in three steps, all local and seeded:

1. **Corpus.** A uniformly random agent plays the environment (tasks apart from any training
   pool: seeds from ``corpus_seed``); every step's prompt, in the trainer's exact format, and a
   response ``<think></think><action>A</action>`` naming a random admissible action A, are
   kept.
2. **Tokenizer.** A byte-level BPE (``tokenizers``) is trained on that corpus, with the tags
   ``<think>``, ``</think>``, ``<action>``, ``</action>`` as whole tokens; saved as a normal
   ``PreTrainedTokenizerFast`` folder.
3. **Model.** A randomly initialised ``LlamaForCausalLM`` (2 layers, width 64 by default), then
   a short *format warm-up*: behaviour cloning of the random agent's responses. Without it a
   random network never writes a tagged, admissible action, every rollout is invalid, every
   reward 0 and every advantage 0, so RL has nothing to learn from. After it the model is
   what a base LLM is to the paper: it knows the format and picks admissible actions roughly
   uniformly, but knows nothing of the task. ``warmup_steps=0`` keeps the raw random model.

The result is cached under ``$G2PO_CACHE/models`` (default ``~/.cache/g2po/models``) keyed by
the environment and the recipe, built in a temporary folder and moved into place. Recipe
settings are overridden in the model name: ``tiny:hidden_size=128,layers=4,warmup_steps=0``.

Building takes minutes (the corpus games, then the warm-up: 1,000 optimizer steps over ~350-token
prompts, 4 minutes on a quiet 2-core machine, 15-30 on a loaded one; a progress bar on stderr
shows each stage), so the model of every environment the README, the docs and the study train
the tiny model on ships with g2po in :data:`SHIPPED` (848 kB each, the recipe's own output,
named by the same key; a test scans the documents for them): ``tiny`` for ``textworld``
(``textworld:coin_collector-level5``) and for ``textworld:coin_collector-level102`` (the README's
first run and the study), ``tiny:heads=2`` for ``textworld:coin_collector-level2`` (head size
32, which vLLM's CPU attention takes). First use copies one into the cache in well under a
second; any other environment or recipe is built. ``python -m g2po.trainers.tiny ENV [MODEL]``
rebuilds one into :data:`SHIPPED`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from g2po.agent_format import format_response
from g2po.cache import user_cache_dir
from g2po.errors import G2POError

__all__ = [
    "TinyRecipe",
    "RECIPE_VERSION",
    "TAGS",
    "parse_tiny",
    "tiny_model",
    "build_tiny_model",
    "random_play_corpus",
    "train_tokenizer",
    "format_warmup",
    "models_cache",
    "SHIPPED",
    "ship",
]

#: Bump when the recipe changes what it builds, so cached models are rebuilt.
RECIPE_VERSION = 1
#: The response format's tags, single tokens of the tiny tokenizer.
TAGS = ("<think>", "</think>", "<action>", "</action>")
PAD, EOS = "<|pad|>", "<|eos|>"
INFO_FILE = "g2po_tiny.json"
#: Tiny models shipped with g2po, one folder each, named as in the cache.
SHIPPED = Path(__file__).resolve().parent / "tiny_models"


@dataclass(frozen=True)
class TinyRecipe:
    """How the tiny model is built (see the module docstring)."""

    vocab_size: int = 1024
    """BPE vocabulary size, special and tag tokens included."""
    hidden_size: int = 64
    """Model width."""
    layers: int = 2
    """Transformer blocks."""
    heads: int = 4
    """Attention heads."""
    intermediate_size: int = 256
    """MLP width."""
    max_positions: int = 2048
    """Longest sequence (prompt + response) the model takes."""
    corpus_tasks: int = 12
    """Tasks the random agent plays for the corpus."""
    corpus_episodes: int = 4
    """Random episodes per corpus task."""
    corpus_max_steps: int = 15
    """Steps per corpus episode."""
    corpus_seed: int = 100_000
    """First task seed of the corpus (far from training task pools)."""
    history_length: int = 2
    """History steps in the corpus prompts (match the trainer's ``history_length``)."""
    warmup_steps: int = 1000
    """Format warm-up optimizer steps; 0 keeps the random initialisation. (300 steps learn
    the tags but name an admissible action only ~75 % of the time; 1000 steps ~97 %.)"""
    warmup_batch: int = 16
    """Samples per warm-up step."""
    warmup_lr: float = 3e-3
    """Warm-up learning rate (AdamW)."""
    seed: int = 0
    """Seed of the corpus agent, the initial weights and the warm-up."""


def parse_tiny(model: str) -> TinyRecipe:
    """The recipe a model name gives: ``tiny`` or ``tiny:key=value,key=value``.

    >>> parse_tiny("tiny:hidden_size=32,warmup_steps=0").hidden_size
    32
    """
    name, _, settings = model.partition(":")
    if name != "tiny":
        raise G2POError(f"{model!r} is not a tiny model name (tiny or tiny:key=value,…)")
    fields = {f.name: f for f in dataclasses.fields(TinyRecipe)}
    changes: dict[str, object] = {}
    for item in filter(None, (s.strip() for s in settings.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            raise G2POError(f"tiny model setting {item!r}: expected key=value with key one of "
                            f"{', '.join(fields)}")
        kind = float if fields[key].type == "float" else int
        try:
            changes[key] = kind(value)
        except ValueError:
            raise G2POError(f"tiny model setting {item!r}: {key} takes a number") from None
    return dataclasses.replace(TinyRecipe(), **changes)


def models_cache() -> Path:
    """``$G2PO_CACHE/models`` or ``~/.cache/g2po/models``."""
    return user_cache_dir() / "models"


def _key(env: str, recipe: TinyRecipe) -> str:
    text = json.dumps({"env": env, "version": RECIPE_VERSION, **dataclasses.asdict(recipe)},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _folder_name(env: str, recipe: TinyRecipe) -> str:
    slug = env.replace(":", "-").replace("/", "-")
    return f"tiny-{slug}-{_key(env, recipe)}"


def tiny_model(env: str, recipe: TinyRecipe | str | None = None, *,
               cache: Path | None = None, verbose: bool = True) -> Path:
    """The folder of the tiny model for ``env``: from the cache, else copied from the models
    shipped with g2po (:data:`SHIPPED`), else built (minutes on CPU, see the module docstring).

    ``recipe`` is a :class:`TinyRecipe` or a model name (``tiny:layers=4``).
    """
    if recipe is None or isinstance(recipe, str):
        recipe = parse_tiny(recipe or "tiny")
    root = cache or models_cache()
    target = root / _folder_name(env, recipe)
    if (target / INFO_FILE).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    shipped = SHIPPED / target.name
    with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
        if (shipped / INFO_FILE).is_file():
            shutil.copytree(shipped, Path(tmp) / "model")
        else:
            build_tiny_model(env, Path(tmp) / "model", recipe, verbose=verbose)
        try:
            os.replace(Path(tmp) / "model", target)
        except OSError:  # another process built it meanwhile
            if not (target / INFO_FILE).is_file():
                raise
    return target


def ship(env: str, recipe: TinyRecipe | str | None = None) -> Path:
    """Build the tiny model for ``env`` into :data:`SHIPPED` (replacing one of the same key)."""
    if recipe is None or isinstance(recipe, str):
        recipe = parse_tiny(recipe or "tiny")
    target = SHIPPED / _folder_name(env, recipe)
    with tempfile.TemporaryDirectory(prefix="g2po-tiny-") as tmp:
        build_tiny_model(env, Path(tmp) / "model", recipe)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(Path(tmp) / "model", target)
    return target


class _CorpusAgent:
    """Uniform over the admissible actions, answering in the paper's format with an empty
    thought; keeps every (prompt, response) it gives (a policy for the collector)."""

    def __init__(self, env: str, seed: int) -> None:
        self.env = env
        self.rng = random.Random(seed)
        self.pairs: list[tuple[str, str]] = []

    def act(self, turns) -> list[str]:
        out = []
        for turn in turns:
            if not turn.admissible_actions:
                raise G2POError(f"the tiny model recipe needs an environment with admissible "
                                f"actions; {self.env} gives none (free-form actions)")
            response = format_response(self.rng.choice(turn.admissible_actions))
            self.pairs.append((turn.prompt, response))
            out.append(response)
        return out


def _bar(total: int, desc: str, unit: str, verbose: bool):
    """A tqdm progress bar on stderr for a build stage (silent unless ``verbose``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not verbose, file=sys.stderr,
                dynamic_ncols=True)


def random_play_corpus(env: str, recipe: TinyRecipe, *,
                       verbose: bool = False) -> list[tuple[str, str]]:
    """(prompt, response) pairs of a uniformly random agent playing ``env``'s corpus tasks,
    collected by the project's collector, so prompts are exactly the trainer's. The games are
    prepared first (TextWorld generates each, about a second), one tick of the bar each."""
    from g2po.envs import env_family
    from g2po.rollouts import collect_groups

    family = env_family(env)
    tasks = family.tasks(recipe.corpus_tasks, recipe.corpus_seed)
    with _bar(len(tasks), "tiny model: corpus games", "game", verbose) as bar:
        for task in tasks:
            family.make(task).close()
            bar.update()
    agent = _CorpusAgent(env, recipe.seed)
    collect_groups(family, tasks, agent,
                   group_size=recipe.corpus_episodes, max_steps=recipe.corpus_max_steps,
                   history_length=recipe.history_length)
    return agent.pairs


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts``, with pad/eos tokens
    and the format's tags as single tokens; pads on the left (for batched generation)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=max(vocab_size - len(TAGS), 300), special_tokens=[PAD, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.add_tokens([AddedToken(t, normalized=False) for t in TAGS])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS,
                                   padding_side="left")


def _new_model(tokenizer, recipe: TinyRecipe):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size, num_hidden_layers=recipe.layers,
        num_attention_heads=recipe.heads, num_key_value_heads=recipe.heads,
        max_position_embeddings=recipe.max_positions, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(recipe.seed)
    return LlamaForCausalLM(config)


def format_warmup(model, tokenizer, pairs: list[tuple[str, str]], recipe: TinyRecipe,
                  *, verbose: bool = False) -> list[float]:
    """Behaviour-clone ``pairs`` (loss on response tokens only); returns the loss per step."""
    import torch

    from g2po.trainers.policy import pack, response_log_probs

    if recipe.warmup_steps == 0:
        return []
    prompts = tokenizer([p for p, _ in pairs])["input_ids"]
    responses = tokenizer([r for _, r in pairs])["input_ids"]
    responses = [r + [tokenizer.eos_token_id] for r in responses]
    gen = torch.Generator().manual_seed(recipe.seed)
    optim = torch.optim.AdamW(model.parameters(), lr=recipe.warmup_lr, weight_decay=0.0)
    model.train()
    losses = []
    bar = _bar(recipe.warmup_steps, "tiny model: format warm-up", "step", verbose)
    for _ in range(recipe.warmup_steps):
        pick = torch.randint(len(pairs), (recipe.warmup_batch,), generator=gen).tolist()
        batch = pack([prompts[i] for i in pick], [responses[i] for i in pick],
                     tokenizer.pad_token_id)
        log_probs = response_log_probs(model, batch)
        loss = -(log_probs.sum() / batch.response_mask.sum())
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(float(loss.detach()))
        bar.update()
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    bar.close()
    return losses


def _valid_rate(model, tokenizer, pairs: list[tuple[str, str]], n: int = 64) -> float:
    """Share of sampled responses naming an admissible action (checked on corpus prompts)."""
    import re

    from g2po.agent_format import parse_action
    from g2po.trainers.policy import HFPolicy

    policy = HFPolicy(model, tokenizer, max_new_tokens=32)
    sample = pairs[:: max(1, len(pairs) // n)][:n]
    texts = policy.generate([p for p, _ in sample]).texts
    ok = 0
    for (prompt, _), text in zip(sample, texts):
        listed = re.search(r"admissible actions of the current situation are: \[(.*)\]\.",
                           prompt)
        admissible = re.findall(r"'([^']*)'", listed.group(1)) if listed else None
        ok += parse_action(text, admissible)[1]
    return ok / max(len(sample), 1)


def build_tiny_model(env: str, out: Path, recipe: TinyRecipe, *, verbose: bool = True) -> Path:
    """Build the tiny model for ``env`` into the folder ``out`` (see the module docstring)."""
    import torch

    start = time.perf_counter()
    if verbose:
        print(f"building the tiny model for {env} (once; cached; no shipped model for it) …",
              file=sys.stderr, flush=True)
    pairs = random_play_corpus(env, recipe, verbose=verbose)
    if not pairs:
        raise G2POError(f"the random agent produced no steps on {env}; cannot build a corpus")
    tokenizer = train_tokenizer([p + "\n" + r for p, r in pairs], recipe.vocab_size)
    with torch.random.fork_rng():
        model = _new_model(tokenizer, recipe)
        losses = format_warmup(model, tokenizer, pairs, recipe, verbose=verbose)
        torch.manual_seed(recipe.seed)
        valid = _valid_rate(model, tokenizer, pairs)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    info = {"recipe": dataclasses.asdict(recipe), "version": RECIPE_VERSION, "env": env,
            "corpus_pairs": len(pairs), "parameters": sum(p.numel() for p in model.parameters()),
            "warmup_loss_first": losses[0] if losses else None,
            "warmup_loss_last": losses[-1] if losses else None,
            "valid_action_rate": valid, "build_seconds": round(time.perf_counter() - start, 1)}
    (out / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    if verbose:
        print(f"tiny model: {info['parameters']:,} parameters, valid actions "
              f"{valid:.0%} after warm-up, {info['build_seconds']} s", flush=True)
    return out


def remove_tiny_models(cache: Path | None = None) -> int:
    """Delete every cached tiny model; returns how many."""
    root = cache or models_cache()
    gone = 0
    for path in root.glob("tiny-*"):
        shutil.rmtree(path, ignore_errors=True)
        gone += 1
    return gone


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit("usage: python -m g2po.trainers.tiny ENV [MODEL]  (rebuilds a shipped tiny model)")
    print(ship(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None))
