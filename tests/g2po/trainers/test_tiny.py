import importlib.util
import json
import re
from pathlib import Path

import pytest
import torch

from g2po.agent_format import format_response
from g2po.errors import G2POError
from g2po.trainers.tiny import TAGS, TinyRecipe, parse_tiny, random_play_corpus, tiny_model
from tests.g2po.trainers.fixtures import ENV, TINY, tiny_path  # noqa: F401


def test_parse_tiny():
    assert parse_tiny("tiny") == TinyRecipe()
    r = parse_tiny("tiny:hidden_size=48, warmup_lr=0.01")
    assert r.hidden_size == 48 and r.warmup_lr == 0.01
    with pytest.raises(G2POError, match="key one of vocab_size"):
        parse_tiny("tiny:width=3")
    with pytest.raises(G2POError, match="layers takes a number"):
        parse_tiny("tiny:layers=two")


def test_corpus_prompts_are_the_collectors():
    recipe = parse_tiny(TINY)
    pairs = random_play_corpus(ENV, recipe)
    assert len(pairs) >= recipe.corpus_episodes
    prompt, response = pairs[0]
    assert "Your admissible actions of the current situation are:" in prompt
    assert response.startswith("<think></think>") and response.endswith("</action>")


def test_built_model_is_a_normal_hf_folder(tiny_path):  # noqa: F811
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    recipe = parse_tiny(TINY)
    assert model.config.hidden_size == recipe.hidden_size
    assert model.config.vocab_size == len(tok) <= recipe.vocab_size
    text = format_response("go west")
    ids = tok(text)["input_ids"]
    for tag in TAGS:
        assert tok.convert_tokens_to_ids(tag) in ids  # each tag is one token
    assert tok.decode(ids) == text
    assert tok.pad_token == "<|pad|>" and tok.eos_token == "<|eos|>"
    info = json.loads((tiny_path / "g2po_tiny.json").read_text())
    assert info["warmup_loss_last"] < info["warmup_loss_first"]  # the warm-up learnt
    assert 0.0 <= info["valid_action_rate"] <= 1.0


@pytest.mark.slow  # builds tiny models (tens of seconds each)
def test_cached_and_rebuilt_only_when_the_recipe_changes(tmp_path):
    name = TINY.replace("warmup_steps=40", "warmup_steps=3")
    first = tiny_model(ENV, name, cache=tmp_path, verbose=False)
    stamp = (first / "g2po_tiny.json").stat().st_mtime_ns
    assert tiny_model(ENV, name, cache=tmp_path, verbose=False) == first
    assert (first / "g2po_tiny.json").stat().st_mtime_ns == stamp
    other = tiny_model(ENV, name.replace("seed=0", "") + ",seed=1", cache=tmp_path,
                       verbose=False)
    assert other != first
    assert not list(tmp_path.glob(".build-*"))  # no half-built folder left


@pytest.mark.slow  # builds tiny models (tens of seconds each)
def test_seeded_build_is_reproducible(tmp_path):
    name = TINY.replace("warmup_steps=40", "warmup_steps=2")
    a = tiny_model(ENV, name, cache=tmp_path / "a", verbose=False)
    b = tiny_model(ENV, name, cache=tmp_path / "b", verbose=False)
    from safetensors.torch import load_file

    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_free_form_environments_are_refused():
    from g2po.trainers.tiny import _CorpusAgent

    class Turn:
        prompt = "write code"
        admissible_actions = None

    with pytest.raises(G2POError, match="needs an environment with admissible actions"):
        _CorpusAgent("appworld:dev", 0).act([Turn()])


def test_shipped_models_are_the_recipes_and_first_use_copies_them(tmp_path):
    """Each shipped folder is named by the key of the recipe and environment it records, loads
    as a normal model folder and is what first use puts in the cache (no build)."""
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from g2po.trainers.tiny import INFO_FILE, RECIPE_VERSION, SHIPPED, _folder_name

    folders = sorted(SHIPPED.glob("tiny-*"))
    assert folders
    for folder in folders:
        info = json.loads((folder / INFO_FILE).read_text())
        recipe = TinyRecipe(**info["recipe"])
        assert info["version"] == RECIPE_VERSION
        assert folder.name == _folder_name(info["env"], recipe)
        got = tiny_model(info["env"], recipe, cache=tmp_path, verbose=False)
        assert got == tmp_path / folder.name
        assert json.loads((got / INFO_FILE).read_text()) == info  # copied, not rebuilt
        shipped, copied = load_file(folder / "model.safetensors"), load_file(
            got / "model.safetensors")
        assert all(torch.equal(shipped[k], copied[k]) for k in shipped)
        model = AutoModelForCausalLM.from_pretrained(got)
        assert model.config.hidden_size == recipe.hidden_size
        tok = AutoTokenizer.from_pretrained(got)
        assert all(len(tok(tag)["input_ids"]) == 1 for tag in TAGS)
    assert not list(tmp_path.glob(".build-*"))


ROOT = Path(__file__).resolve().parents[3]


def _documented_tiny_commands() -> list[tuple[str, str, str]]:
    """(where, env, model) of every command in the README, docs/, examples/ and the study
    script that uses a tiny model (continued lines joined; no --env means the default)."""
    from g2po.trainers.config import TrainConfig

    found = []
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "examples").rglob("*.sh"))]
    for path in files:
        text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
        for line in text.splitlines():
            model = re.search(r"--model[ =](tiny(?::[\w=,.]+)?)", line)
            if model and re.search(r"g2po (train|rollouts)", line):
                env = re.search(r"--env[ =]([\w:.-]+)", line)
                found.append((path.name, env.group(1) if env else TrainConfig.env,
                              model.group(1)))
    spec = importlib.util.spec_from_file_location("study", ROOT / "scripts" / "study.py")
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    found.append(("scripts/study.py", study.SETTINGS["env"], study.SETTINGS["model"]))
    return found


def test_every_documented_tiny_model_ships():
    """Each environment the README, the docs, the examples and the study train the tiny model on
    has its model shipped, so a first run starts with a copy, not minutes of building."""
    from g2po.trainers.config import resolve_env
    from g2po.trainers.tiny import INFO_FILE, SHIPPED, _folder_name

    commands = _documented_tiny_commands()
    envs = {env for _, env, _ in commands}
    assert {"textworld", "textworld:coin_collector-level2"} <= envs  # the scan finds them
    missing = [(where, env, model) for where, env, model in commands
               if not (SHIPPED / _folder_name(resolve_env(env), parse_tiny(model))
                       / INFO_FILE).is_file()]
    assert not missing, f"no shipped tiny model for: {missing}"


def test_a_build_shows_its_progress(tmp_path, capsys):
    """A model that must be built shows a progress bar for each stage (corpus games, warm-up)."""
    name = TINY.replace("warmup_steps=40", "warmup_steps=3").replace("corpus_episodes=4",
                                                                       "corpus_episodes=1")
    tiny_model(ENV, name, cache=tmp_path, verbose=True)
    err = capsys.readouterr().err
    assert "building the tiny model for " + ENV in err
    assert re.search(r"tiny model: corpus games: 100%.*1/1", err)
    assert re.search(r"tiny model: format warm-up: 100%.*3/3", err)
    assert "loss=" in err
