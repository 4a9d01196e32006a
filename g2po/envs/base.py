"""The interface every multi-turn text environment follows, and the registry that names them.

An environment object plays **one task** (a seeded task instance): ``reset()`` puts it in the
task's initial state, ``step(text)`` takes the model's raw response, projects it to an action
with :func:`g2po.agent_format.parse_action`, and plays it. The N rollouts of a G2PO group are N
environment objects made for the same task id, so they start from the same initial state.

Invalid actions (no ``<action>`` tag, or an action that is not admissible) are *not* sent to the
underlying game: the world stays as it is, the step counts, the result says
``is_action_valid=False`` and keeps the previous state key, so the state graph shows a self-loop,
which is what the invalid-action penalty of the paper acts on. An environment whose
``validity`` is ``format`` (ALFWorld's paper setting) plays every action instead and flags the
responses whose format is wrong (:func:`g2po.agent_format.parse_action_format`).

Each environment defines its state key (the "anchor observation" the state graph merges on) in
:meth:`TextEnv.state_key`; the key of every result is filled in by :meth:`TextEnv.reset` and
:meth:`TextEnv.step`.

Environment families (TextWorld challenges, ALFWorld, WebShop, AppWorld) are registered under a
prefix (:func:`register_env`, here, which the adapters import) and addressed by a spec string
``"prefix:details"``, e.g. ``"textworld:coin_collector-level5"``; :mod:`g2po.envs.catalog`,
above the adapters, imports the bundled ones and looks specs up.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from g2po.agent_format import extract_action, parse_action, parse_action_format
from g2po.errors import G2POError

__all__ = [
    "StepResult",
    "TextEnv",
    "EnvFamily",
    "EnvError",
    "MissingEnvironmentError",
    "UnknownEnvError",
    "INVALID_ACTION_FEEDBACK",
    "register_env",
    "registered",
    "make_games",
]

#: What the agent reads after an invalid action (the game itself is not called).
INVALID_ACTION_FEEDBACK = (
    "Invalid action: {action!r} is not one of the admissible actions. Nothing happens."
)
#: Same, for a response without an <action>…</action> tag.
NO_ACTION_FEEDBACK = (
    "Invalid response: no <action>…</action> tag was found, so no action was taken. "
    "Nothing happens."
)


class EnvError(G2POError):
    """An environment could not be set up or played (bad spec, unknown task, a game that fails)."""


class MissingEnvironmentError(EnvError, ImportError):
    """An adapter's package or data is absent; the message says what to install or download."""


class UnknownEnvError(EnvError, KeyError):
    """An environment spec whose prefix nobody registered."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class StepResult:
    """What an environment returns from ``reset()`` and ``step()``.

    ``observation`` is what the policy sees next (the game's feedback, never the history).
    ``admissible_actions`` is None for free-form environments (any text in the action tag is a
    valid action, e.g. AppWorld's code). ``reward`` is the environment's own per-step reward;
    ``won`` the environment's success flag (the collector turns it into the episode reward).
    ``action`` is the projected action actually played, or the raw text when invalid.
    ``info`` carries environment-specific fields (e.g. TextWorld's room description and
    inventory, a walkthrough ``"policy_commands"`` for scripted policies) and the facts about
    the step the environment reports for the step table (:attr:`TextEnv.step_reports`).
    """

    observation: str
    admissible_actions: list[str] | None = None
    reward: float = 0.0
    done: bool = False
    won: bool = False
    is_action_valid: bool = True
    action: str = ""
    state_key: str = ""
    info: dict[str, Any] = field(default_factory=dict)


class TextEnv(ABC):
    """A multi-turn text environment playing one task (one seeded task instance).

    Subclasses implement :meth:`_reset` and :meth:`_step` (which only ever receive admissible
    actions, or any tagged text for free-form environments) and may override
    :meth:`state_key`. ``task_id`` names the task instance; ``task`` is the instruction shown
    to the agent; ``role`` opens the prompt ("You are an expert agent …").
    """

    #: Registry prefix of the family, e.g. "textworld".
    env_name: str = "text"
    #: First sentence of the prompt.
    role: str = "You are an expert agent playing a text-based game."
    #: Whether the action tag must hold one of ``admissible_actions`` (False: free-form text).
    constrained: bool = True
    #: What an action is, in the prompt of a free-form environment ("a block of Python code").
    action_hint: str | None = None
    #: How validity is judged (:data:`g2po.agent_format.VALIDITY_RULES`): ``admissible`` plays
    #: only admissible actions; ``format`` (ALFWorld's paper setting) plays every action and
    #: judges the response's format alone.
    validity: str = "admissible"
    #: The facts about a step's own action this environment puts in each result's ``info``
    #: for the step table (columns an estimator declares, e.g. TextWorld's
    #: ``milestone_achieved``), each with its value for a step whose action did nothing: an
    #: invalid action's no-op result reports that value, and so does the row of a step whose
    #: environment raised. Facts about the state (the room, the inventory) stay in ``info``
    #: without being listed here. The collectors copy the listed facts an estimator declares
    #: (:func:`g2po.rollouts.reported_columns`).
    step_reports: Mapping[str, Any] = MappingProxyType({})

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.task: str = ""
        self._last: StepResult | None = None
        self.steps_taken = 0

    # -- the public protocol ------------------------------------------------------------
    def reset(self) -> StepResult:
        """Start the task from its initial state (the same for every rollout of a group)."""
        result = self._reset()
        result.state_key = self.state_key(result)
        self._last = result
        self.steps_taken = 0
        return result

    def step(self, text: str) -> StepResult:
        """Project the model's ``text`` to an action and play it; invalid actions are no-ops."""
        if self._last is None:
            raise EnvError(f"{self.task_id}: step() called before reset()")
        if self._last.done:
            raise EnvError(f"{self.task_id}: step() called after the episode ended")
        self.steps_taken += 1
        if self.validity == "format":  # every action is played; validity is the format's
            action, valid = parse_action_format(text)
            result = self._step(action)
        else:
            action, valid = self.project(text)
            result = self._step(action) if valid else self._invalid(text, action)
        if valid or self.validity == "format":
            result.action, result.is_action_valid = action, valid
        result.state_key = self.state_key(result)
        self._last = result
        return result

    def project(self, text: str) -> tuple[str, bool]:
        """The action a response names and whether it is valid in the current state.

        By default :func:`~g2po.agent_format.parse_action` against the current admissible
        actions (any tagged text when the environment is free-form); adapters whose action
        space is not a finite list (WebShop's ``search[…]``) override it.
        """
        assert self._last is not None
        admissible = self._last.admissible_actions if self.constrained else None
        return parse_action(text, admissible)

    def state_key(self, result: StepResult) -> str:
        """The anchor observation of a result: by default the observation itself.

        Results of invalid actions carry ``info["unchanged_key"]``, the key of the state they
        stay in, so that an invalid action loops on its node instead of inventing a new one.
        """
        if "unchanged_key" in result.info:
            return result.info["unchanged_key"]
        return result.observation.strip()

    def close(self) -> None:  # noqa: B027 - optional hook, most games hold nothing
        """Release the game process or server session, if any."""

    def __enter__(self) -> TextEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- hooks ----------------------------------------------------------------------------
    @abstractmethod
    def _reset(self) -> StepResult:
        """Reset the underlying game; set ``self.task``; return the initial result."""

    @abstractmethod
    def _step(self, action: str) -> StepResult:
        """Play one projected, valid action in the underlying game."""

    def _invalid(self, text: str, action: str) -> StepResult:
        """The no-op result of an invalid action: same state, same admissible actions."""
        last = self._last
        assert last is not None
        has_tag = extract_action(text) is not None
        feedback = (INVALID_ACTION_FEEDBACK.format(action=action) if has_tag
                    else NO_ACTION_FEEDBACK)
        info = {k: v for k, v in last.info.items() if k != "unchanged_key"}
        info.update(self.step_reports)  # the last step's facts are not this step's
        info["unchanged_key"] = last.state_key
        return dataclasses.replace(
            last, observation=feedback, reward=0.0, done=False, won=False,
            is_action_valid=False, action=action, info=info,
        )


class EnvFamily(Protocol):
    """A family of tasks addressed by one spec: lists task ids and makes environments."""

    spec: str

    def tasks(self, n: int, seed: int = 0) -> list[str]:
        """``n`` task ids, deterministic in ``seed`` (preparing them, e.g. generating games)."""
        ...

    def make(self, task_id: str) -> TextEnv:
        """A fresh environment playing ``task_id``."""
        ...


FamilyFactory = Callable[..., EnvFamily]

#: prefix -> (factory, one-line help); filled by :func:`register_env` as adapters are imported
#: (the bundled ones by :mod:`g2po.envs.catalog`, which looks families up).
_REGISTRY: dict[str, tuple[FamilyFactory, str]] = {}


def register_env(prefix: str, help: str = "") -> Callable[[FamilyFactory], FamilyFactory]:
    """Register ``factory(details: str, **kwargs) -> EnvFamily`` under ``prefix``.

    ``help`` is a one-line description with an example spec, shown by ``g2po rollouts
    --list-envs``.
    """

    def wrap(factory: FamilyFactory) -> FamilyFactory:
        if prefix in _REGISTRY and _REGISTRY[prefix][0] is not factory:
            raise ValueError(f"environment prefix {prefix!r} is already registered")
        _REGISTRY[prefix] = (factory, help)
        return factory

    return wrap


def registered() -> dict[str, tuple[FamilyFactory, str]]:
    """The families registered so far: prefix -> (factory, one-line help)."""
    return dict(_REGISTRY)


def make_games(task_ids: Sequence[str], make: Callable[[str], Any], spec: str) -> None:
    """``make(task_id)`` for each game a family generates before collecting starts, under a
    progress bar that shows once it takes more than a second (uncached games take 1-20 s
    each; cached ones, none)."""
    from tqdm.auto import tqdm

    for task_id in tqdm(task_ids, desc=f"making {spec} games", unit="game", delay=1.0,
                        leave=False, dynamic_ncols=True):
        make(task_id)


def admissible_or_none(actions: Sequence[str] | None) -> list[str] | None:
    """Admissible actions as a de-duplicated list in their original order (games repeat some)."""
    if actions is None:
        return None
    return list(dict.fromkeys(str(a) for a in actions))
