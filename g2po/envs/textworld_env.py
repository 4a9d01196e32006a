"""TextWorld, the bundled offline environment: locally generated games with fixed seeds.

TextWorld (``pip install textworld``, the ``envs`` extra) is the text engine under ALFWorld's
text mode. Its challenges generate a game in about a second, offline:

- ``textworld:coin_collector-level5``: walk a chain of rooms to a coin (levels 1-300);
- ``textworld:treasure_hunter-level10``: find and take the right object; a wrong one loses
  (levels 1-30);
- ``textworld:cooking-recipe2-take2-go6-open-cut-train``: the First TextWorld Problem's
  cooking games (recipe, take, go 1|6|9|12, open, cook, cut, drop, split train|valid|test);
- ``textworld:simple-dense-brief``: ``tw-simple`` (rewards dense|balanced|sparse, goal
  detailed|brief|none).

A spec is ``textworld:CHALLENGE`` followed by ``-`` separated settings, each either
``NAMEVALUE`` (``level5``, ``recipe2``), a flag (``open``, ``cut``) or a choice value
(``train``, ``dense``); they are the challenge's own ``tw-make`` options. The task ids of a spec
are ``SPEC-sSEED`` (``coin_collector-level5-s3``): the game the challenge generates with that
seed. Games are generated once and cached under ``$G2PO_CACHE/textworld`` (default
``~/.cache/g2po/textworld``), keyed by challenge, settings and seed.

State key (anchor)
------------------
TextWorld's feedback line is transient ("You can't go that way.", "You pick up the coin."): two
rollouts in the same world state often read different feedback, and the same feedback occurs in
different states. The state key is therefore the **room description plus the inventory** (the
output of ``look`` and ``inventory``, which the engine reports without spending a move): it
changes exactly when the player moves, takes, drops, opens, cuts … something, and rollouts that
reach the same world state by different paths merge. The observation the policy sees is still
the feedback.

Threads
-------
TextWorld parses its game logic and text grammars with module-level tatsu parsers that keep
their state in the parser object, so two threads loading a game at once corrupt each other
(``IndexError: pop from empty list`` inside tatsu, in a fresh process 4 of 4 concurrent
``reset()`` calls fail). Trainers run many episodes in threads (verl's agent loop), so every
call that parses (generating a game, starting the engine, resetting, which loads the game's
JSON) holds one process-wide lock; steps run concurrently.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from g2po.cache import user_cache_dir
from g2po.envs.base import (
    EnvError,
    MissingEnvironmentError,
    StepResult,
    TextEnv,
    admissible_or_none,
    make_games,
    register_env,
)

__all__ = [
    "TextWorldEnv",
    "TextWorldFamily",
    "TextWorldGame",
    "parse_spec",
    "game_file",
    "textworld_anchor",
    "clean_feedback",
]

#: Held by every TextWorld call that parses (generation, start, reset): see "Threads" above.
_PARSE_LOCK = threading.RLock()

_INSTALL = (
    "the TextWorld environment needs the `textworld` package: "
    "pip install -e '.[envs]' (or pip install textworld==1.7.0)"
)


def _textworld():
    try:
        import textworld
        import textworld.challenges
    except ImportError as err:  # pragma: no cover - the envs extra is installed in CI
        raise MissingEnvironmentError(_INSTALL) from err
    return textworld


# -- specs ---------------------------------------------------------------------------------
class _ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits otherwise
        raise _ArgError(message)


@dataclass(frozen=True)
class TextWorldGame:
    """A challenge with its settings: ``name`` the canonical spec details (no seed)."""

    challenge: str
    settings: tuple[tuple[str, Any], ...]
    name: str

    def settings_dict(self) -> dict[str, Any]:
        return dict(self.settings)


def _challenge_parser(challenge: str) -> _Parser:
    tw = _textworld()
    challenges = tw.challenges.CHALLENGES
    if challenge not in challenges:
        known = ", ".join(sorted(c.removeprefix("tw-") for c in challenges))
        raise EnvError(f"unknown TextWorld challenge {challenge.removeprefix('tw-')!r}; "
                       f"known: {known}")
    parser = _Parser(prog=challenge, add_help=False)
    challenges[challenge][2](parser)
    return parser


def parse_spec(details: str) -> TextWorldGame:
    """Parse ``"cooking-recipe2-go6-open-train"`` into the challenge and its settings; an
    empty spec (a bare ``--env textworld``) is the default game, ``coin_collector-level5``, in
    every command.

    Raises :class:`EnvError` naming the token that does not fit and the settings the challenge
    accepts.
    """
    tokens = [t for t in details.strip().split("-") if t] or ["coin_collector", "level5"]
    challenge = tokens[0] if tokens[0].startswith("tw-") else f"tw-{tokens[0]}"
    parser = _challenge_parser(challenge)
    actions = [a for a in parser._actions if a.option_strings]
    by_dest = {a.dest: a for a in actions}
    argv: list[str] = []
    used: list[tuple[int, str]] = []
    order = {a.dest: i for i, a in enumerate(actions)}
    for token in tokens[1:]:
        m = re.fullmatch(r"([a-z_]+?)(\d+)", token)
        if m and m.group(1) in by_dest and by_dest[m.group(1)].nargs != 0:
            dest = m.group(1)
            argv += [f"--{dest.replace('_', '-')}", m.group(2)]
        elif token in by_dest and by_dest[token].nargs == 0:
            dest = token
            argv.append(f"--{dest.replace('_', '-')}")
        else:
            owners = [a.dest for a in actions if a.choices and token in a.choices]
            if len(owners) != 1:
                raise EnvError(
                    f"TextWorld spec {details!r}: setting {token!r} is not one of "
                    f"{challenge.removeprefix('tw-')}'s settings: {_describe(actions)}"
                )
            dest = owners[0]
            argv += [f"--{dest.replace('_', '-')}", token]
        used.append((order[dest], token))
    try:
        settings = vars(parser.parse_args(argv))
    except _ArgError as err:
        raise EnvError(f"TextWorld spec {details!r}: {err} (settings: {_describe(actions)})") \
            from None
    name = "-".join([challenge.removeprefix("tw-")] + [t for _, t in sorted(used)])
    return TextWorldGame(challenge, tuple(sorted(settings.items())), name)


def _describe(actions: Sequence[argparse.Action]) -> str:
    parts = []
    for a in actions:
        if a.nargs == 0:
            parts.append(a.dest)
        elif a.choices:
            parts.append("|".join(map(str, a.choices)))
        else:
            parts.append(f"{a.dest}N")
    return ", ".join(parts)


@contextlib.contextmanager
def _quiet_jericho():
    """Jericho warns that it does not know generated games; TextWorld tracks the score itself."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is not fully supported")
        yield


# -- games on disk ---------------------------------------------------------------------------
def game_file(game: TextWorldGame, seed: int, *, cache: Path | None = None) -> Path:
    """The compiled ``.z8`` of ``game`` for ``seed``; generated (about a second) if not cached.

    Generation goes to a temporary folder and is moved into place, so concurrent collectors
    never read half a game.
    """
    root = (cache or user_cache_dir()) / "textworld" / game.name
    target = root / f"seed{seed}.z8"
    if target.is_file() and target.with_suffix(".json").is_file():
        return target
    tw = _textworld()
    root.mkdir(parents=True, exist_ok=True)
    with _PARSE_LOCK, tempfile.TemporaryDirectory(dir=root, prefix=".gen-") as tmp:
        options = tw.GameOptions()
        options.seeds = int(seed)
        options.path = str(Path(tmp) / "game.z8")
        options.file_ext = ".z8"
        options.force_recompile = True
        make = tw.challenges.CHALLENGES[game.challenge][1]
        try:
            with _quiet_jericho():
                made = make(settings=game.settings_dict(), options=options)
                compiled = Path(tw.generator.compile_game(made, options))
        except Exception as err:
            raise EnvError(
                f"TextWorld could not generate {game.name} with seed {seed}: "
                f"{type(err).__name__}: {err}"
            ) from err
        os.replace(compiled.with_suffix(".json"), target.with_suffix(".json"))
        os.replace(compiled, target)
    return target


# -- text ------------------------------------------------------------------------------------
_END_PROMPT = re.compile(r"\s*Would you like to RESTART.*$", re.DOTALL)
_BLANKS = re.compile(r"\n{3,}")


def clean_feedback(text: str) -> str:
    """The engine's feedback without the restart question, the command prompt and status line
    (``>   -= Room =-0/5``), indentation, or runs of blank lines."""
    text = _END_PROMPT.sub("", text or "")
    lines = (line.strip() for line in text.splitlines())
    text = "\n".join(line for line in lines if not line.startswith(">"))
    return _BLANKS.sub("\n\n", text).strip()


def textworld_anchor(description: str, inventory: str) -> str:
    """The state key: room description and inventory, whitespace-normalised (see module doc).

    >>> textworld_anchor("-= Attic =-\\nA dusty attic.  ", "You are carrying nothing.")
    '-= Attic =-\\nA dusty attic.\\n\\nYou are carrying nothing.'
    """
    return clean_feedback(description) + "\n\n" + clean_feedback(inventory)


# -- the environment ---------------------------------------------------------------------------
class TextWorldEnv(TextEnv):
    """One TextWorld game; every reset starts the same initial state (games are deterministic).

    ``info`` of each result holds ``description``, ``inventory``, ``score``, ``max_score``,
    ``moves``, ``policy_commands`` (the engine's walkthrough from the current state, used by
    the scripted policy; it is never shown in the prompt) and ``milestone_achieved``.

    Milestones: a step whose action raised the game's score achieved one (MiGPO's
    ``milestone_achieved`` step column). TextWorld scores a game's sub-goals as they are met:
    a cooking game's every ingredient taken, cooked or cut, the meal prepared and eaten; each
    reward point of ``tw-simple``; the coin or the treasure of the one-goal challenges (whose
    only milestone is the winning step).
    """

    env_name = "textworld"
    role = "You are an expert agent playing a text-based adventure game."
    step_reports = MappingProxyType({"milestone_achieved": False})

    def __init__(self, task_id: str, path: str | Path, *, wrappers: Sequence[Any] = (),
                 extras: Sequence[str] = ()) -> None:
        super().__init__(task_id)
        self.path = Path(path)
        self._wrappers = list(wrappers)
        self._extras = list(extras)
        self._env = None
        self._score = 0.0

    def _infos(self):
        tw = _textworld()
        return tw.EnvInfos(
            feedback=True, description=True, inventory=True, admissible_commands=True,
            won=True, lost=True, score=True, max_score=True, moves=True, objective=True,
            policy_commands=True, extras=list(self._extras),
        )

    def _start(self):
        if self._env is None:
            tw = _textworld()
            with _PARSE_LOCK, _quiet_jericho():
                self._env = tw.start(str(self.path), request_infos=self._infos(),
                                     wrappers=self._wrappers)
        return self._env

    def _reset(self) -> StepResult:
        with _PARSE_LOCK:  # reset loads the game's JSON (its logic is parsed again)
            state = self._start().reset()
        self._score = float(state.get("score") or 0)
        self.task = clean_feedback(state.get("objective") or "")
        observation = self.initial_observation(state)
        return self._result(state, observation, reward=0.0, done=False)

    def _step(self, action: str) -> StepResult:
        state, _, done = self._start().step(action)
        score = float(state.get("score") or 0)
        reward, self._score = score - self._score, score
        return self._result(state, clean_feedback(state.get("feedback") or ""), reward=reward,
                            done=bool(done))

    def initial_observation(self, state: Any) -> str:
        """The first observation: the room the game starts in (the objective is the task)."""
        return clean_feedback(state.get("description") or state.get("feedback") or "")

    def _result(self, state: Any, observation: str, *, reward: float, done: bool) -> StepResult:
        won = bool(state.get("won"))
        info = {
            "description": state.get("description") or "",
            "inventory": state.get("inventory") or "",
            "score": float(state.get("score") or 0),
            "max_score": float(state.get("max_score") or 0),
            "moves": int(state.get("moves") or 0),
            "lost": bool(state.get("lost")),
            "policy_commands": list(state.get("policy_commands") or []),
            "milestone_achieved": reward > 0,  # the score rose: a sub-goal was met
        }
        return StepResult(
            observation=observation,
            admissible_actions=admissible_or_none(state.get("admissible_commands") or []),
            reward=reward, done=done or won, won=won, info=info,
        )

    def state_key(self, result: StepResult) -> str:
        if "unchanged_key" in result.info:
            return result.info["unchanged_key"]
        return textworld_anchor(result.info.get("description", ""),
                                result.info.get("inventory", ""))

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


@dataclass
class TextWorldFamily:
    """The games of one challenge and settings; task ``i`` of ``tasks(n, seed)`` is seed+i."""

    spec: str
    game: TextWorldGame
    cache: Path | None = None
    _files: dict[str, Path] = field(default_factory=dict)

    def tasks(self, n: int, seed: int = 0) -> list[str]:
        ids = [f"{self.game.name}-s{seed + i}" for i in range(n)]
        make_games(ids, self._file, self.spec)  # now, so that collecting never waits on it
        return ids

    def _file(self, task_id: str) -> Path:
        if task_id not in self._files:
            name, sep, seed = task_id.rpartition("-s")
            if not sep or not seed.isdigit():
                raise EnvError(f"TextWorld task id {task_id!r} must end in -sSEED")
            game = self.game if name == self.game.name else parse_spec(name)
            self._files[task_id] = game_file(game, int(seed), cache=self.cache)
        return self._files[task_id]

    def make(self, task_id: str) -> TextWorldEnv:
        return TextWorldEnv(task_id, self._file(task_id))


@register_env("textworld", "TextWorld games generated offline, e.g. "
              "textworld:coin_collector-level5, textworld:treasure_hunter-level10, "
              "textworld:cooking-recipe2-take2-go6-open-train")
def _family(details: str, *, cache: str | Path | None = None) -> TextWorldFamily:
    game = parse_spec(details)
    return TextWorldFamily(spec=f"textworld:{game.name}", game=game,
                           cache=Path(cache) if cache else None)

