"""ALFWorld (text mode) through the ``alfworld`` package's TextWorld games.

Install: ``pip install -e '.[alfworld]'`` (the ``alfworld`` package), then download its games
with ``alfworld-download`` (into ``~/.cache/alfworld``, or ``$ALFWORLD_DATA``). The adapter reads
the same files ALFWorld's own ``AlfredTWEnv`` does: every ``game.tw-pddl`` under
``$ALFWORLD_DATA/json_2.1.1/<split>`` whose ``traj_data.json`` names one of the six task types
and that ALFWorld marked solvable, and plays it with TextWorld's PDDL engine and ALFWorld's
``AlfredDemangler`` / ``AlfredInfos`` wrappers (and its hand-coded expert for the scripted
policy's walkthrough).

Specs: ``alfworld:train`` (default), ``alfworld:valid_seen`` (in-distribution evaluation),
``alfworld:valid_unseen`` (out-of-distribution); append ``-TASKTYPE`` to keep one task type,
e.g. ``alfworld:train-pick_and_place_simple``. Task ids are the game folders relative to the
split, e.g. ``pick_and_place_simple-Pencil-None-Drawer-306/trial_T20190908_121952_610012``.

State key: as in the paper, the current observation without history ("You arrive at drawer 1.
The drawer 1 is closed."), whitespace-normalised. One exception: ALFWorld answers an action
that changes nothing with "Nothing happens."; that reply is the same in every state, so the key
stays that of the state the agent is still in instead of merging unrelated states.

The authors' settings (the paper presets use them): ``anchor="observation_admissible"``
(:class:`PaperAnchor`: the observation plus the admissible actions, with their rules for
"Nothing happens." and heat/cool/clean) and ``validity="format"`` (every action is sent to the
game, an inadmissible one answered "Nothing happens."; a step is invalid when its response lacks
the ``<think>``/``<action>`` tags, :func:`g2po.agent_format.parse_action_format`). Both are
keyword arguments of the family (``g2po_env.env_kwargs`` in the verl trainer).

Generated games (no download)
-----------------------------
``alfworld:generated`` plays games made here from the ``alfworld`` package's own domain,
grammar, floor plans and goal templates (:mod:`g2po.envs.alfworld_games`), with the same
engine, wrappers and expert as the downloaded games. Settings follow ``generated``, ``-``
separated, in any order: a split (``train`` default, ``valid_seen``, ``valid_unseen``: ALFRED's
held-out floor plans) and a task type (default: all six, cycled), e.g.
``alfworld:generated-valid_unseen-pick_heat_then_place_in_recep``. Task ``i`` of
``tasks(n, seed)`` is game ``seed + i`` of task type ``i mod k``; its id is
``SPLIT/TASKTYPE-sSEED``. Each game is played by ALFWorld's hand-coded expert before it is
used; if the expert does not win within :data:`EXPERT_STEP_LIMIT` steps the next draw for that
seed is taken. Games are cached under ``$G2PO_CACHE/alfworld`` (default
``~/.cache/g2po/alfworld``). A reset takes 0.5-9 s (Fast Downward grounds the problem).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from g2po.agent_format import format_response
from g2po.cache import user_cache_dir
from g2po.envs.alfworld_games import GENERATED_SPLITS, GENERATOR_VERSION, TASK_TYPES, make_game
from g2po.envs.base import (
    EnvError,
    MissingEnvironmentError,
    StepResult,
    make_games,
    register_env,
)
from g2po.envs.textworld_env import _PARSE_LOCK, TextWorldEnv, clean_feedback
from g2po.state_keys import AlfworldAnchor

__all__ = [
    "ALFWorldEnv",
    "ALFWorldFamily",
    "GeneratedFamily",
    "TASK_TYPES",
    "SPLITS",
    "EXPERT_STEP_LIMIT",
    "alfworld_data",
    "find_games",
    "generated_game",
    "expert_walkthrough",
    "split_initial_observation",
    "alfworld_anchor",
    "ANCHORS",
    "PaperAnchor",
]

log = logging.getLogger("g2po.envs.alfworld")

SPLITS = ("train", "valid_seen", "valid_unseen")
#: A generated game is kept only if ALFWorld's hand-coded expert wins it within this many steps
#: (the collector's default step budget, so a rollout that follows the expert can win).
EXPERT_STEP_LIMIT = 30
#: Draws tried for one seed before generation gives up (the expert wins most first draws).
MAX_ATTEMPTS = 20

_INSTALL = (
    "ALFWorld needs the `alfworld` package: pip install -e '.[alfworld]' (or pip install "
    "alfworld)"
)
_DOWNLOAD = (
    "ALFWorld's games are not downloaded: run `alfworld-download` (it stores them in "
    "~/.cache/alfworld; set ALFWORLD_DATA to use another folder)"
)
_NOTHING = "nothing happens."
#: ALFWorld state keys: ``observation`` (the observation alone, the default) or
#: ``observation_admissible`` (the authors' key, :class:`PaperAnchor`).
ANCHORS = ("observation", "observation_admissible")


def alfworld_data() -> Path:
    """ALFWorld's data folder: ``$ALFWORLD_DATA`` or ``~/.cache/alfworld`` (as ALFWorld does)."""
    return Path(os.environ.get("ALFWORLD_DATA") or Path.home() / ".cache" / "alfworld")


def find_games(data: Path, split: str = "train",
               task_types: tuple[str, ...] = TASK_TYPES) -> list[str]:
    """Task ids (game folders relative to the split) of the solvable games, sorted.

    Follows ALFWorld's own selection: a folder with ``traj_data.json`` of an allowed task type
    and a ``game.tw-pddl`` marked solvable; "movable" and "Sliced" trials are skipped.
    Raises :class:`MissingEnvironmentError` when the split folder is absent.
    """
    root = data / "json_2.1.1" / split
    if not root.is_dir():
        raise MissingEnvironmentError(f"{_DOWNLOAD} (looked for {root})")
    games = []
    for traj in sorted(root.rglob("traj_data.json")):
        folder = traj.parent
        rel = folder.relative_to(root).as_posix()
        if "movable" in rel or "Sliced" in rel:
            continue
        game = folder / "game.tw-pddl"
        if not game.is_file():
            continue
        try:
            task_type = json.loads(traj.read_text())["task_type"]
            solvable = json.loads(game.read_text()).get("solvable", False)
        except (OSError, ValueError, KeyError) as err:
            raise EnvError(f"{traj}: not a readable ALFWorld trial ({err})") from err
        if task_type in task_types and solvable:
            games.append(rel)
    if not games:
        raise MissingEnvironmentError(
            f"{_DOWNLOAD} (no solvable games of types {', '.join(task_types)} under {root})"
        )
    return games


_WELCOME = re.compile(r"^\s*-=\s*Welcome to TextWorld, ALFRED!\s*=-\s*", re.IGNORECASE)
_TASK = re.compile(r"\s*Your task is to:\s*(.*?)\s*$", re.IGNORECASE | re.DOTALL)


def split_initial_observation(text: str) -> tuple[str, str]:
    """``(observation, task)`` from ALFWorld's first observation.

    >>> split_initial_observation("-= Welcome to TextWorld, ALFRED! =-\\n\\nYou are in the "
    ...     "middle of a room.\\n\\nYour task is to: put a mug in desk.")
    ('You are in the middle of a room.', 'put a mug in desk.')
    """
    text = _WELCOME.sub("", text or "")
    match = _TASK.search(text)
    if not match:
        return clean_feedback(text), ""
    return clean_feedback(text[: match.start()]), match.group(1).strip()


def alfworld_anchor(observation: str, previous: str | None = None) -> str:
    """The state key: the observation whitespace-normalised; "Nothing happens." keeps
    ``previous`` (the agent is still where it was).

    >>> alfworld_anchor("You arrive at  drawer 1.\\nThe drawer 1 is closed. ")
    'You arrive at drawer 1. The drawer 1 is closed.'
    >>> alfworld_anchor("Nothing happens.", previous="You arrive at drawer 1.")
    'You arrive at drawer 1.'
    """
    key = " ".join((observation or "").split())
    if previous is not None and key.lower() == _NOTHING:
        return previous
    return key


class PaperAnchor(AlfworldAnchor):
    """The authors' ALFWorld state key (their env manager's ``anchor``), one per episode: the
    rules of :class:`g2po.state_keys.AlfworldAnchor` (each state its observation and admissible
    actions; "Nothing happens." adds none; after "You heat/cool/clean/turn on …" the key joins
    that observation and the next). One difference from the original: their first key is the
    raw first observation and a "Nothing happens." on the first step keys on the whole first
    prompt, two keys for one state; here both are the first state's key (the ``alfworld``
    state key read from a log follows the original).

    >>> a = PaperAnchor("You are in a room.", ["go to microwave 1"])
    >>> a.key.splitlines()
    ['You are in a room.', 'Admissible actions:', " 'go to microwave 1'"]
    >>> a.step("Nothing happens.", ["go to microwave 1"]) == a.key
    True
    >>> _ = a.step("You heat the mug 1 using the microwave 1.", ["look"])
    >>> a.step("You arrive at shelf 1.", ["look"]).startswith("You heat the mug 1")
    True
    """

    __slots__ = ()

    def __init__(self, observation: str, admissible: list[str]) -> None:
        first = self.entry(observation, admissible)
        super().__init__(first, first)


class ALFWorldEnv(TextWorldEnv):
    """One ALFWorld game (``game.tw-pddl``) played with ALFWorld's TextWorld wrappers."""

    env_name = "alfworld"
    role = "You are an expert agent operating in the ALFRED Embodied Environment."
    #: No milestones: the PDDL engine scores the whole goal only (1 when it holds), and the
    #: text game reports no sub-goal of it.
    step_reports = MappingProxyType({})

    def __init__(self, task_id: str, path: str | Path, *, expert: bool = True,
                 validity: str = "admissible", anchor: str = "observation") -> None:
        _check_options(validity, anchor)
        self.validity, self.anchor = validity, anchor
        self._paper_anchor: PaperAnchor | None = None
        try:
            from alfworld.agents.environment.alfred_tw_env import (
                AlfredDemangler,
                AlfredExpert,
                AlfredInfos,
            )
        except ImportError as err:
            raise MissingEnvironmentError(_INSTALL) from err
        wrappers: list[Any] = [AlfredDemangler(shuffle=False), AlfredInfos]
        extras = ["gamefile"]
        if expert:
            wrappers.append(AlfredExpert(expert_type="handcoded"))
            extras.append("expert_plan")
        super().__init__(task_id, path, wrappers=wrappers, extras=extras)

    def _infos(self):
        import textworld

        return textworld.EnvInfos(feedback=True, admissible_commands=True, won=True,
                                  extras=list(self._extras))

    def _reset(self) -> StepResult:
        with _PARSE_LOCK:  # reset grounds the PDDL problem again (see textworld_env, Threads)
            state = self._start().reset()
        observation, self.task = split_initial_observation(state.get("feedback") or "")
        result = self._result(state, observation, reward=0.0, done=False)
        if self.anchor == "observation_admissible":
            self._paper_anchor = PaperAnchor(observation, result.admissible_actions or [])
            result.info["anchor"] = self._paper_anchor.key
        return result

    def _step(self, action: str) -> StepResult:
        state, _, done = self._start().step(action)
        result = self._result(state, clean_feedback(state.get("feedback") or ""),
                              reward=0.0, done=bool(done))
        result.reward = 1.0 if result.won else 0.0
        assert self._last is not None
        result.info["previous_key"] = self._last.state_key
        if self._paper_anchor is not None:
            result.info["anchor"] = self._paper_anchor.step(
                result.observation, result.admissible_actions or [])
        return result

    def _result(self, state: Any, observation: str, *, reward: float, done: bool) -> StepResult:
        won = bool(state.get("won"))
        plan = state.get("extra.expert_plan") or []
        return StepResult(
            observation=observation,
            admissible_actions=[a for a in dict.fromkeys(state.get("admissible_commands") or [])
                                if a != "help"],
            reward=reward, done=done or won, won=won,
            info={"policy_commands": list(plan), "gamefile": state.get("extra.gamefile"),
                  "feedback": state.get("feedback") or ""},
        )

    def state_key(self, result: StepResult) -> str:
        if "unchanged_key" in result.info:
            return result.info["unchanged_key"]
        if "anchor" in result.info:
            return result.info["anchor"]
        return alfworld_anchor(result.observation, result.info.get("previous_key"))


def _check_options(validity: str, anchor: str) -> None:
    from g2po.agent_format import VALIDITY_RULES

    if validity not in VALIDITY_RULES:
        raise EnvError(f"ALFWorld validity {validity!r} is not one of {', '.join(VALIDITY_RULES)}")
    if anchor not in ANCHORS:
        raise EnvError(f"ALFWorld anchor {anchor!r} is not one of {', '.join(ANCHORS)}")


@dataclass
class ALFWorldFamily:
    """The solvable ALFWorld games of one split; ``tasks(n, seed)`` draws ``n`` of them."""

    spec: str
    split: str = "train"
    task_types: tuple[str, ...] = TASK_TYPES
    data: Path | None = None
    expert: bool = True
    validity: str = "admissible"
    anchor: str = "observation"
    _games: list[str] | None = field(default=None, repr=False)

    def _root(self) -> Path:
        return (self.data or alfworld_data()) / "json_2.1.1" / self.split

    def games(self) -> list[str]:
        if self._games is None:
            self._games = find_games(self.data or alfworld_data(), self.split, self.task_types)
        return self._games

    def tasks(self, n: int, seed: int = 0) -> list[str]:
        games = self.games()
        order = list(range(len(games)))
        random.Random(seed).shuffle(order)
        return [games[order[i % len(games)]] for i in range(n)]

    def make(self, task_id: str) -> ALFWorldEnv:
        path = self._root() / task_id / "game.tw-pddl"
        if not path.is_file():
            raise EnvError(f"ALFWorld task {task_id!r}: no game file {path}")
        return ALFWorldEnv(task_id, path, expert=self.expert, validity=self.validity,
                           anchor=self.anchor)


# -- generated games ---------------------------------------------------------------------------
_GENERATE_LOCK = threading.Lock()


def expert_walkthrough(path: Path, limit: int = EXPERT_STEP_LIMIT) -> tuple[list[str] | None, str]:
    """Play the game at ``path`` as the scripted policy does with ``follow=1``: ALFWorld's
    hand-coded expert's next action, or a random admissible one where the expert names none
    (its own fallback when stuck is a random command, which may be "help", hidden here).
    Returns ``(actions, "")`` when that wins within ``limit`` steps, else ``(None, why)``.

    The expert breaks ties with Python's global ``random``; both it and the fallback are seeded
    from the game's folder name (the global state is restored after), so the verdict is the
    same on every run.
    """
    env = ALFWorldEnv("expert-check", path)
    saved = random.getstate()
    seed = f"g2po-expert:{Path(path).parent.name}"
    random.seed(seed)
    fallback = random.Random(seed)
    actions: list[str] = []
    try:
        result = env.reset()
        while not result.won:
            if len(actions) >= limit:
                return None, f"the expert did not win within {limit} steps"
            plan = [a for a in result.info.get("policy_commands") or []
                    if a in (result.admissible_actions or ())]
            action = plan[0] if plan else fallback.choice(result.admissible_actions or ["look"])
            result = env.step(format_response(action))
            actions.append(result.action)
    except Exception as err:  # noqa: BLE001 - the expert gives up by raising
        return None, f"the expert failed: {type(err).__name__}: {err}"
    finally:
        random.setstate(saved)
        env.close()
    return actions, ""


def generated_game(split: str, task_type: str, seed: int, *, cache: Path | None = None
                   ) -> Path:
    """The ``game.tw-pddl`` of a generated game, made and checked if not cached.

    Draws ``make_game(task_type, seed, split, attempt)`` for attempt 0, 1, … until the expert
    wins one (:func:`expert_walkthrough`); the game folder (game, ``traj_data.json`` with the
    expert's actions) is built in a temporary folder and moved into place.
    """
    root = ((cache or user_cache_dir()) / "alfworld" / f"generated-v{GENERATOR_VERSION}"
            / split / task_type)
    target = root / f"s{seed}"
    game = target / "game.tw-pddl"
    if game.is_file():
        return game
    with _GENERATE_LOCK:
        if game.is_file():
            return game
        root.mkdir(parents=True, exist_ok=True)
        failures = []
        started = time.perf_counter()
        for attempt in range(MAX_ATTEMPTS):
            files = make_game(task_type, seed, split, attempt)
            tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".s{seed}-"))
            try:
                actions, why = expert_walkthrough(files.write(tmp))
                if actions is None:
                    failures.append(f"draw {attempt}: {why}")
                    continue
                files.game["solvable"] = True
                files.traj_data["g2po"]["expert_actions"] = actions
                files.write(tmp)
                log.info("generated ALFWorld game %s/%s-s%d: draw %d, %d expert steps, %.1f s",
                         split, task_type, seed, attempt, len(actions),
                         time.perf_counter() - started)
                try:
                    os.replace(tmp, target)
                except OSError:  # another process placed it first
                    if not game.is_file():
                        raise
                return game
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    raise EnvError(f"generated ALFWorld game {split}/{task_type} seed {seed}: the expert won "
                   f"none of {MAX_ATTEMPTS} draws ({'; '.join(failures[-3:])})")


_GENERATED_ID = re.compile(r"(?P<split>[a-z_]+)/(?P<type>[a-z_]+)-s(?P<seed>\d+)")


@dataclass
class GeneratedFamily:
    """Generated games of one split; task ``i`` of ``tasks(n, seed)`` is game ``seed + i`` of
    task type ``i mod k`` (see the module docstring)."""

    spec: str
    split: str = "train"
    task_types: tuple[str, ...] = TASK_TYPES
    cache: Path | None = None
    expert: bool = True
    validity: str = "admissible"
    anchor: str = "observation"
    _files: dict[str, Path] = field(default_factory=dict, repr=False)

    def task_ids(self, n: int, seed: int = 0) -> list[str]:
        """The ids :meth:`tasks` returns, without making the games."""
        k = len(self.task_types)
        return [f"{self.split}/{self.task_types[i % k]}-s{seed + i}" for i in range(n)]

    def tasks(self, n: int, seed: int = 0) -> list[str]:
        ids = self.task_ids(n, seed)
        make_games(ids, self._file, self.spec)  # now (and checked): collecting never waits
        return ids

    def _file(self, task_id: str) -> Path:
        if task_id not in self._files:
            m = _GENERATED_ID.fullmatch(task_id)
            if not m or m["split"] not in GENERATED_SPLITS or m["type"] not in TASK_TYPES:
                raise EnvError(f"generated ALFWorld task id {task_id!r} must be "
                               "SPLIT/TASKTYPE-sSEED, e.g. train/pick_and_place_simple-s0")
            self._files[task_id] = generated_game(m["split"], m["type"], int(m["seed"]),
                                                  cache=self.cache)
        return self._files[task_id]

    def make(self, task_id: str) -> ALFWorldEnv:
        return ALFWorldEnv(task_id, self._file(task_id), expert=self.expert,
                           validity=self.validity, anchor=self.anchor)


def _generated_family(settings: str, *, cache: str | Path | None, expert: bool,
                      validity: str, anchor: str) -> GeneratedFamily:
    split, types = "train", TASK_TYPES
    seen: set[str] = set()
    for token in (t for t in settings.split("-") if t):
        kind = ("split" if token in GENERATED_SPLITS else
                "task type" if token in TASK_TYPES else None)
        if kind is None or kind in seen:
            raise EnvError(
                f"alfworld:generated setting {token!r}: expected at most one split "
                f"({', '.join(GENERATED_SPLITS)}) and one task type ({', '.join(TASK_TYPES)})"
            )
        seen.add(kind)
        if kind == "split":
            split = token
        else:
            types = (token,)
    from g2po.envs.alfworld_games import alfworld_assets

    alfworld_assets()  # the package is there, or a clear message now
    name = "-".join(["generated", *([split] if split != "train" else []),
                     *(types if len(types) == 1 else ())])
    return GeneratedFamily(spec=f"alfworld:{name}", split=split, task_types=types,
                           cache=Path(cache) if cache else None, expert=expert,
                           validity=validity, anchor=anchor)


@register_env("alfworld", "ALFWorld text games: alfworld:generated (made here), "
              "alfworld:generated-valid_unseen-pick_two_obj_and_place; downloaded "
              "(alfworld-download): alfworld:train, alfworld:valid_unseen-pick_and_place_simple")
def _family(details: str, *, data: str | Path | None = None, cache: str | Path | None = None,
            expert: bool = True, validity: str = "admissible", anchor: str = "observation"
            ) -> ALFWorldFamily | GeneratedFamily:
    _check_options(validity, anchor)
    split, _, kind = (details or "train").partition("-")
    if split == "generated":
        if data is not None:
            raise EnvError("alfworld:generated takes `cache` (where games are made), not "
                           "`data` (the download's folder)")
        return _generated_family(kind, cache=cache, expert=expert, validity=validity,
                                 anchor=anchor)
    if cache is not None:
        raise EnvError(f"alfworld:{details}: downloaded games take `data`, not `cache`")
    if split not in SPLITS:
        raise EnvError(f"ALFWorld split {split!r} is not one of {', '.join(SPLITS)} "
                       "(downloaded games), or generated")
    types = TASK_TYPES
    if kind:
        if kind not in TASK_TYPES:
            raise EnvError(f"ALFWorld task type {kind!r} is not one of {', '.join(TASK_TYPES)}")
        types = (kind,)
    try:
        import alfworld  # noqa: F401
    except ImportError as err:
        raise MissingEnvironmentError(
            f"{_INSTALL}, then download its games with `alfworld-download` (into "
            "~/.cache/alfworld, or the folder ALFWORLD_DATA names)"
        ) from err
    return ALFWorldFamily(spec=f"alfworld:{details or 'train'}", split=split, task_types=types,
                          data=Path(data) if data else None, expert=expert, validity=validity,
                          anchor=anchor)
