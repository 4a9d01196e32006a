"""Collect groups of rollouts: N rollouts per task, played in lockstep, written as step rows.

The loop of one training step::

    tasks of the step ─► N environments per task ─► reset (same initial state per group)
    while any rollout is running:
        one batched policy call for every running rollout (prompts built by agent_format)
        each environment plays its response (invalid actions are no-ops)
    step rows ─► RunWriter (run directory: rollouts/step-000001.parquet, metrics.jsonl)

An environment that raises is reported with its task id, rollout and step (logged and counted
in the step's metrics as ``env/errors``); that rollout ends as a failure, its rows are kept and
the failing row names the error in ``env_error``; every other rollout goes on.

Step columns an estimator declares (:func:`g2po.estimators.step_columns`, e.g. MiGPO's
``milestone_achieved``) are copied into the rows from each step's ``info`` when the environment
reports them (:attr:`g2po.envs.base.TextEnv.step_reports`): :func:`reported_columns`, which the
verl agent loop calls too.

Policies are anything with ``act(turns) -> list[str]`` (:class:`Policy`); ``random`` and
``scripted`` are built in, model policies come from the trainers via :func:`register_policy`.
"""

from __future__ import annotations

import importlib.util
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from g2po.agent_format import build_prompt, format_response, parse_action
from g2po.envs.base import EnvFamily, StepResult, TextEnv
from g2po.envs.catalog import env_family
from g2po.errors import G2POError
from g2po.estimators import get_spec, step_columns
from g2po.index import merge_rate

__all__ = [
    "Turn",
    "Policy",
    "RandomPolicy",
    "ScriptedPolicy",
    "register_policy",
    "make_policy",
    "list_policies",
    "CollectConfig",
    "collect_groups",
    "collect_run",
    "step_metrics",
    "reported_columns",
]

log = logging.getLogger("g2po.rollouts")


# -- policies ---------------------------------------------------------------------------------
@dataclass
class Turn:
    """What a policy is given for one running rollout at one step.

    ``prompt`` is the full text for a language model (:func:`g2po.agent_format.build_prompt`);
    the other fields are its parts, for policies that do not read text. ``hint`` is the
    environment's walkthrough from the current state when it has one (TextWorld's
    ``policy_commands``, ALFWorld's expert plan): for scripted policies only, never shown in
    the prompt.
    """

    prompt: str
    observation: str
    admissible_actions: list[str] | None
    task: str
    history: list[tuple[str, str]]
    hint: list[str]
    env: str
    group_id: str
    traj_id: str
    t: int
    train_step: int


class Policy(Protocol):
    """Anything that answers a batch of turns with one response each, in order.

    A response is the model's text, or a mapping with the text under ``"text"`` and extra
    fields for the step row (e.g. ``prompt_tokens``, ``response_tokens``, ``logprob_mean``).
    """

    def act(self, turns: Sequence[Turn]) -> list[str] | list[dict[str, Any]]:
        ...


def _rng(seed: int, turn: Turn) -> random.Random:
    """A generator keyed by the turn, so results do not depend on batch order or resuming."""
    return random.Random(f"{seed}/{turn.train_step}/{turn.group_id}/{turn.traj_id}/{turn.t}")


_TYPO = str.maketrans("aeiou", "eioua")


def _invalid_response(rng: random.Random, turn: Turn) -> str:
    """A realistic mistake: no action tag, a misspelt action, or an action not available now."""
    kind = rng.randrange(3)
    if kind == 0:
        return "I think the best move is to look around more carefully before acting."
    options = turn.admissible_actions or ["look"]
    if kind == 1:
        wrong = rng.choice(options).translate(_TYPO)
        if wrong in options:
            wrong += " now"
    else:
        wrong = rng.choice(["go up", "climb the wall", "open the portal", "use magic", "fly"])
    return format_response(wrong, "I will try something else.")


@dataclass
class RandomPolicy:
    """Uniform over the admissible actions; with probability ``invalid_rate`` a mistake.

    Free-form environments (no admissible list) get ``look``-style filler actions.
    """

    invalid_rate: float = 0.1
    seed: int = 0
    name: str = "random"

    def __post_init__(self) -> None:
        if not 0.0 <= self.invalid_rate <= 1.0:
            raise ValueError(f"invalid_rate must be in [0, 1], got {self.invalid_rate}")

    def act(self, turns: Sequence[Turn]) -> list[str]:
        out = []
        for turn in turns:
            rng = _rng(self.seed, turn)
            out.append(self._one(rng, turn))
        return out

    def _one(self, rng: random.Random, turn: Turn) -> str:
        if rng.random() < self.invalid_rate:
            return _invalid_response(rng, turn)
        options = turn.admissible_actions or ["print('exploring')"]
        action = rng.choice(options)
        return format_response(action, f"I am not sure what to do, so I try {action!r}.")


@dataclass
class ScriptedPolicy(RandomPolicy):
    """Follows the environment's walkthrough with probability ``follow``, else acts randomly.

    ``follow_final`` ramps the probability linearly over ``train_steps`` training steps, so a
    multi-step run looks like training (success rises). Mixes successes and failures.
    """

    follow: float = 0.7
    follow_final: float | None = None
    train_steps: int = 1
    name: str = "scripted"

    def __post_init__(self) -> None:
        super().__post_init__()
        for label, p in (("follow", self.follow), ("follow_final", self.follow_final)):
            if p is not None and not 0.0 <= p <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {p}")

    def follow_at(self, train_step: int) -> float:
        """The walkthrough probability at a training step (1-based)."""
        if self.follow_final is None or self.train_steps <= 1:
            return self.follow
        frac = min(max((train_step - 1) / (self.train_steps - 1), 0.0), 1.0)
        return self.follow + frac * (self.follow_final - self.follow)

    def _one(self, rng: random.Random, turn: Turn) -> str:
        hint = [h for h in turn.hint if turn.admissible_actions is None
                or h in turn.admissible_actions]
        if hint and rng.random() < self.follow_at(turn.train_step):
            return format_response(hint[0], f"Following my plan, next I {hint[0]}.")
        return super()._one(rng, turn)


PolicyFactory = Callable[..., Policy]
_POLICIES: dict[str, PolicyFactory] = {}
#: The registry key of the model policy (a local Hugging Face path, or "tiny"), which the
#: trainers register when :mod:`g2po.trainers.models` is imported (the ``g2po rollouts``
#: command does so; this module, below the trainers, never imports them).
_MODEL_KEY = "model"


def register_policy(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    """Register ``factory(**kwargs) -> Policy`` under ``name``. The trainers register
    ``"model"``: ``factory(spec=PATH_OR_TINY, **kwargs)``, used for any spec that is not a
    registered name."""

    def wrap(factory: PolicyFactory) -> PolicyFactory:
        _POLICIES[name] = factory
        return factory

    return wrap


register_policy("random")(RandomPolicy)
register_policy("scripted")(ScriptedPolicy)


def list_policies() -> list[str]:
    return sorted(_POLICIES)


def make_policy(spec: str, **kwargs: Any) -> Policy:
    """A policy by name (``random``, ``scripted``) or a model (a local path, or ``tiny``).

    Keyword arguments go to the policy's factory; the built-ins take ``seed``,
    ``invalid_rate`` and (scripted) ``follow``, ``follow_final``, ``train_steps``.
    """
    if spec in _POLICIES and spec != _MODEL_KEY:
        try:
            return _POLICIES[spec](**kwargs)
        except TypeError as err:
            raise G2POError(f"policy {spec!r}: {err}") from None
    missing = [m for m in ("torch", "transformers") if not _importable(m)]
    if missing:
        named = ", ".join(p for p in list_policies() if p != _MODEL_KEY)
        raise G2POError(
            f"policy {spec!r} is not one of {named}, so it is read as a model; "
            f"model policies need the train extra "
            f"(pip install -e .[train]): {', '.join(missing)} missing"
        )
    if _MODEL_KEY not in _POLICIES:
        raise G2POError(
            f"policy {spec!r} is read as a model, but no model policy is registered: import "
            "g2po.trainers.models first (it calls register_policy('model'); the g2po rollouts "
            "command does so)"
        )
    return _POLICIES[_MODEL_KEY](spec=spec, **kwargs)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# -- collecting -------------------------------------------------------------------------------
@dataclass
class CollectConfig:
    """What ``g2po rollouts`` collects. Every field is stored in the run's manifest."""

    env: str
    """Environment spec, e.g. ``textworld:coin_collector-level5`` (see ``g2po.envs``)."""
    tasks: int = 4
    """Groups (task instances) per training step."""
    group_size: int = 8
    """Rollouts per group, all from the same initial state (G2PO's N)."""
    train_steps: int = 1
    """Training steps to collect; each is one step file of the run directory."""
    max_steps: int = 30
    """Step budget of a rollout; a rollout that uses it up ends as a failure."""
    history_length: int = 2
    """(observation, action) pairs of history shown in the prompt."""
    seed: int = 0
    """Seed of the task draw and of the built-in policies."""
    success_reward: float = 10.0
    """Episode reward of a won rollout (the paper's binary outcome); 0 otherwise."""
    task_pool: int | None = None
    """Distinct tasks cycled through over the training steps (default: ``tasks``, the same
    tasks at every step)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the environment family (e.g. ``cache`` for TextWorld)."""

    def __post_init__(self) -> None:
        for name in ("tasks", "group_size", "train_steps", "max_steps"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.history_length < 0:
            raise ValueError(f"history_length must be >= 0, got {self.history_length}")
        if self.task_pool is not None and self.task_pool < self.tasks:
            raise ValueError(f"task_pool ({self.task_pool}) must be at least tasks "
                             f"({self.tasks}): a task appears once per training step")

    def step_tasks(self, pool: Sequence[str], train_step: int) -> list[str]:
        """The task ids of a training step (1-based): the pool, cycled."""
        start = (train_step - 1) * self.tasks
        return [pool[(start + i) % len(pool)] for i in range(self.tasks)]


@dataclass
class _Rollout:
    group_id: str
    traj_id: str
    env: TextEnv | None
    current: StepResult | None = None
    history: list[tuple[str, str]] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    running: bool = True
    won: bool = False


def _report(stats: dict, kind: str, where: str, err: BaseException) -> None:
    message = f"{where}: {type(err).__name__}: {err}"
    stats[kind].append(message)
    log.warning("environment error, %s", message)


def collect_groups(
    family: EnvFamily,
    task_ids: Sequence[str],
    policy: Policy,
    *,
    group_size: int = 8,
    max_steps: int = 30,
    history_length: int = 2,
    success_reward: float = 10.0,
    train_step: int = 1,
    env_name: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Play ``group_size`` rollouts of every task in lockstep; return step rows and statistics.

    Returns ``(steps, stats)``: ``steps`` a step table (one row per agent step, see
    :mod:`g2po.steps`) with ``train_step``, ``observation``, ``response``, ``step_reward``,
    ``done``, ``won``, ``env``, ``task`` and ``env_error`` columns; ``stats`` holds lists
    ``env_errors`` / ``reset_errors`` (messages naming task, rollout and step), ``truncated``
    (rollouts that used up ``max_steps``) and ``policy_calls``.
    """
    env_name = env_name or family.spec
    stats: dict[str, Any] = {"env_errors": [], "reset_errors": [], "truncated": 0,
                             "policy_calls": 0}
    rollouts: list[_Rollout] = []
    for task_id in task_ids:
        for j in range(group_size):
            ro = _Rollout(task_id, f"{task_id}:{j}", None)
            try:
                ro.env = family.make(task_id)
                ro.current = ro.env.reset()
            except Exception as err:  # noqa: BLE001 - reported, the batch goes on
                _report(stats, "reset_errors", f"task {task_id}, rollout {j}, reset", err)
                _close(ro)
                continue
            rollouts.append(ro)

    try:
        for t in range(max_steps):
            running = [ro for ro in rollouts if ro.running]
            if not running:
                break
            turns = [_turn(ro, t, train_step, env_name, history_length) for ro in running]
            responses = policy.act(turns)
            stats["policy_calls"] += 1
            if len(responses) != len(turns):
                raise G2POError(f"policy returned {len(responses)} responses for "
                                f"{len(turns)} turns")
            for ro, turn, response in zip(running, turns, responses, strict=True):
                _advance(ro, turn, response, stats)
        for ro in rollouts:
            if ro.running:
                stats["truncated"] += 1
                ro.running = False
    finally:
        for ro in rollouts:
            _close(ro)

    rows = []
    for ro in rollouts:
        reward = success_reward if ro.won else 0.0
        for row in ro.rows:
            row["episode_reward"] = reward
        rows.extend(ro.rows)
    return _frame(rows, train_step), stats


def _turn(ro: _Rollout, t: int, train_step: int, env_name: str, history_length: int) -> Turn:
    env, cur = ro.env, ro.current
    assert env is not None and cur is not None
    prompt = build_prompt(env.task, cur.observation, cur.admissible_actions, ro.history,
                          history_length=history_length, role=env.role,
                          action_hint=env.action_hint)
    return Turn(prompt=prompt, observation=cur.observation,
                admissible_actions=cur.admissible_actions, task=env.task,
                history=list(ro.history), hint=list(cur.info.get("policy_commands") or []),
                env=env_name, group_id=ro.group_id, traj_id=ro.traj_id, t=t,
                train_step=train_step)


def _split_response(response: Any) -> tuple[str, dict[str, Any]]:
    """A policy answers with a text, or a mapping with ``"text"`` and extra row fields."""
    if isinstance(response, str):
        return response, {}
    if isinstance(response, Mapping) and isinstance(response.get("text"), str):
        extra = {k: v for k, v in response.items() if k != "text"}
        clash = set(extra) & set(_COLUMNS)
        if clash:
            raise G2POError(f"policy response fields {sorted(clash)} would overwrite the "
                            "collector's own columns")
        return response["text"], extra
    raise G2POError(f"a policy response must be a str or a mapping with a 'text' str, got "
                    f"{type(response).__name__}")


def _advance(ro: _Rollout, turn: Turn, answer: Any, stats: dict) -> None:
    env, cur = ro.env, ro.current
    assert env is not None and cur is not None
    response, extra = _split_response(answer)
    row = {"group_id": ro.group_id, "traj_id": ro.traj_id, "t": turn.t,
           "state_key": cur.state_key, "observation": cur.observation, "response": response,
           "env": turn.env, "task": env.task, "env_error": None, **extra}
    try:
        result = env.step(response)
    except Exception as err:  # noqa: BLE001 - reported, the batch goes on
        _report(stats, "env_errors", f"task {ro.group_id}, rollout {ro.traj_id}, step {turn.t}",
                err)
        action, valid = parse_action(response, cur.admissible_actions)
        row.update(action=action, is_action_valid=valid, step_reward=0.0, done=False,
                   won=False, env_error=f"{type(err).__name__}: {err}",
                   **reported_columns(env, None))
        ro.rows.append(row)
        ro.running = False
        _close(ro)
        return
    row.update(action=result.action, is_action_valid=result.is_action_valid,
               step_reward=float(result.reward), done=bool(result.done), won=bool(result.won),
               **reported_columns(env, result))
    ro.rows.append(row)
    ro.history.append((cur.observation, result.action))
    ro.current = result
    if result.done:
        ro.running = False
        ro.won = bool(result.won)
        _close(ro)


def reported_columns(env: TextEnv, result: StepResult | None) -> dict[str, Any]:
    """The step columns an estimator declares that ``env`` reports, for one step's row.

    Parameters
    ----------
    env : the environment that played the step; its ``step_reports`` name what it reports.
    result : what its ``step()`` returned; None when it raised, and the row gets each column's
        value for a step whose action did nothing (the env's ``step_reports``).

    Returns
    -------
    ``{column: value}``, read from ``result.info``: None where the environment left a column
    it lists out of ``info`` (an estimator that needs the column then names the rows).

    >>> from g2po.envs.base import TextEnv
    >>> class Game(TextEnv):
    ...     step_reports = {"milestone_achieved": False, "room": ""}
    ...     def _reset(self): ...
    ...     def _step(self, action): ...
    >>> reported_columns(Game("t"), StepResult("ok", info={"milestone_achieved": True}))
    {'milestone_achieved': True}
    >>> reported_columns(Game("t"), None)
    {'milestone_achieved': False}
    """
    reports = env.step_reports
    names = [name for name in step_columns() if name in reports]
    if result is None:
        return {name: reports[name] for name in names}
    return {name: result.info.get(name) for name in names}


def unreported_columns(estimator: str, env: TextEnv) -> list[str]:
    """The step columns ``estimator`` requires (its declaration,
    :class:`g2po.estimators.spec.StepColumn`) that ``env`` does not report
    (:attr:`TextEnv.step_reports`): a run with them would stop at its first advantage step.

    >>> from g2po.envs.base import TextEnv
    >>> class Game(TextEnv):
    ...     def _reset(self): ...
    ...     def _step(self, action): ...
    >>> unreported_columns("migpo", Game("t")), unreported_columns("g2po", Game("t"))
    (['milestone_achieved'], [])
    """
    return [c.name for c in get_spec(estimator).columns
            if c.required and c.name not in env.step_reports]


def check_reports(estimator: str, family: EnvFamily, task_id: str) -> None:
    """Refuse, before anything is trained, an estimator that needs a step column the
    environment family does not report (one environment of ``task_id`` is made to ask)."""
    env = family.make(task_id)
    try:
        missing = unreported_columns(estimator, env)
    finally:
        env.close()
    if missing:
        needs = "; ".join(f"{c.name} ({c.doc})" for c in get_spec(estimator).columns
                          if c.name in missing)
        raise G2POError(
            f"estimator {estimator!r} needs the step column(s) {needs}, which environment "
            f"{family.spec!r} does not report (see docs/estimators.md for the environments "
            "that do); choose another estimator or an environment that reports them")


def _close(ro: _Rollout) -> None:
    if ro.env is not None:
        try:
            ro.env.close()
        except Exception as err:  # noqa: BLE001 - closing must not lose the rows
            log.warning("closing the environment of %s failed: %s", ro.traj_id, err)
        ro.env = None


_COLUMNS = ["train_step", "group_id", "traj_id", "t", "state_key", "action", "episode_reward",
            "is_action_valid", "observation", "response", "step_reward", "done", "won", "env",
            "task", "env_error"]


def _frame(rows: list[dict], train_step: int) -> pd.DataFrame:
    extra = list(dict.fromkeys(k for row in rows for k in row if k not in _COLUMNS))
    frame = pd.DataFrame.from_records(rows, columns=_COLUMNS[1:] + extra)
    frame.insert(0, "train_step", np.int64(train_step))
    frame = frame.astype({"t": "int64", "episode_reward": "float64", "is_action_valid": bool,
                          "step_reward": "float64", "done": bool, "won": bool})
    return frame


def step_metrics(steps: pd.DataFrame, stats: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Namespaced scalars of one collected training step for ``metrics.jsonl`` (the rollout
    summary — success rate, mean reward, lengths, invalid rate — is added by the writer)."""
    n_traj = steps.groupby(["group_id", "traj_id"]).ngroups if len(steps) else 0
    nodes = steps.groupby("group_id")["state_key"].nunique().sum() if len(steps) else 0
    return {
        "env/errors": len(stats["env_errors"]),
        "env/reset_errors": len(stats["reset_errors"]),
        "rollout/truncated_rate": stats["truncated"] / n_traj if n_traj else 0.0,
        "g2po/merge_rate": merge_rate(nodes, len(steps)),
        "time/collect_s": round(seconds, 3),
        "time/steps_per_s": round(len(steps) / seconds, 1) if seconds > 0 else 0.0,
    }


def collect_run(
    config: CollectConfig,
    policy: Policy,
    out: str | Path,
    *,
    policy_spec: str = "",
    resume: bool = False,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
) -> Path:
    """Collect ``config.train_steps`` training steps into the run directory ``out``.

    Each step's rows land atomically as ``rollouts/step-00000K.parquet`` with a metrics line.
    With ``resume``, steps already written are skipped; every step is deterministic in the
    config, so a resumed run equals an uninterrupted one. ``on_step(train_step, metrics)`` is
    called after each step (the CLI prints progress with it). Returns the run directory.
    """
    from loaders.rundir import RunWriter

    family = env_family(config.env, **config.env_kwargs)
    pool = family.tasks(config.task_pool or config.tasks, config.seed)
    manifest = {
        "config": {**asdict(config), "policy": policy_spec or getattr(policy, "name", "")},
        "estimator": None,
        "env": family.spec,
        "model": policy_spec or getattr(policy, "name", type(policy).__name__),
        "source": "g2po rollouts",
        "tasks": list(pool),
    }
    writer = RunWriter(out, manifest, resume=resume)
    done = set(writer.completed_steps())
    for train_step in range(1, config.train_steps + 1):
        if train_step in done:
            continue
        started = time.perf_counter()
        steps, stats = collect_groups(
            family, config.step_tasks(pool, train_step), policy,
            group_size=config.group_size, max_steps=config.max_steps,
            history_length=config.history_length, success_reward=config.success_reward,
            train_step=train_step, env_name=family.spec,
        )
        if steps.empty:
            problems = stats["reset_errors"] + stats["env_errors"]
            raise G2POError(f"training step {train_step}: no rollout could start; "
                            + "; ".join(problems[:5]))
        metrics = step_metrics(steps, stats, time.perf_counter() - started)
        writer.write_step(train_step, steps, metrics)
        if on_step is not None:
            on_step(train_step, {**metrics, "rows": len(steps),
                                 "success_rate": float(steps.groupby("traj_id")["won"].max()
                                                       .mean()),
                                 "invalid_rate": float(1 - steps["is_action_valid"].mean()),
                                 "errors": stats["env_errors"] + stats["reset_errors"]})
    return Path(out)
