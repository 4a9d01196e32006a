"""The G2PO sections of the verl configuration, read into small typed values and checked.

verl's own sections are verl's business (its dataclasses validate them when the trainer starts);
this module owns ``algorithm.g2po`` / ``algorithm.gigpo`` (estimator parameters, read as the
house's values: :class:`g2po.params.G2POParams`, the run's :class:`g2po.outcomes.OutcomeRule`
and the estimator's own parameters),
``g2po_env`` (the environment the agent loop plays) and ``g2po_log`` (rollout logging), plus the
few verl keys G2PO depends on (the trainer mode, the default agent loop, no in-reward KL).
:func:`config_problems` lists every problem at once, each naming its key and how to fix it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams

__all__ = [
    "VerlConfigError",
    "VerlRuntimeError",
    "VERL_BUILTIN_ESTIMATORS",
    "LIBRARY_PREFIX",
    "verl_estimator_name",
    "library_estimator",
    "TRAINER_MODE",
    "AGENT_LOOP",
    "STEP_FIELD",
    "MISSING_FIELD_POLICIES",
    "OWN_KEYS",
    "EstimatorSettings",
    "EnvSettings",
    "estimator_settings",
    "env_settings",
    "config_problems",
]

#: verl 0.9.1's own ``algorithm.adv_estimator`` names: they keep verl's meaning.
VERL_BUILTIN_ESTIMATORS = frozenset({
    "gae", "gdpo", "gpg", "grpo", "grpo_passk", "grpo_vectorized", "opo",
    "optimal_token_baseline", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "remax",
    "rloo", "rloo_vectorized", "tir_optimal_token_baseline"})
#: The verl name of a library estimator whose own name verl already uses (``g2po:grpo``).
LIBRARY_PREFIX = "g2po:"
#: The registered v1 trainer mode that supplies the per-step fields.
TRAINER_MODE = "g2po"
#: The registered agent loop that plays ``g2po_env``.
AGENT_LOOP = "g2po_env"
#: The ``extra_fields`` key under which the agent loop stores each step's record.
STEP_FIELD = "g2po_step"
#: ``missing_step_fields`` values: fail, or (explicit opt-in) compute the episode term only.
MISSING_FIELD_POLICIES = ("error", "episode_only")
#: Keys of ``algorithm.<estimator>`` that are ours, not the estimator's parameters: the state
#: key (a G2POParams field passed apart), what to do without step fields, and the outcome
#: rule's step limit (no estimator takes it; the loaders read it).
OWN_KEYS = ("state_key", "missing_step_fields", "truncate_at")


class VerlConfigError(G2POError, ValueError):
    """The composed verl configuration cannot run G2PO; the message lists every problem."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) with the verl configuration:\n{lines}")


class VerlRuntimeError(G2POError, RuntimeError):
    """The machine cannot start verl's trainer (no GPU, no rollout engine); says what is missing."""


def verl_estimator_name(name: str) -> str:
    """The ``algorithm.adv_estimator`` that runs g2po library estimator ``name`` in verl: the
    same name, unless verl has a built-in of that name (``grpo``, ``rloo``), then
    ``g2po:NAME`` — so ``grpo`` stays verl's GRPO and ``g2po:grpo`` is the library's.

    >>> verl_estimator_name("g2po"), verl_estimator_name("grpo")
    ('g2po', 'g2po:grpo')
    """
    return LIBRARY_PREFIX + name if name in VERL_BUILTIN_ESTIMATORS else name


def library_estimator(adv_estimator: str) -> str | None:
    """The g2po library estimator an ``algorithm.adv_estimator`` value runs, or None when it
    is one of verl's own (or unknown to both).

    >>> library_estimator("g2po:grpo"), library_estimator("grpo"), library_estimator("gigpo")
    ('grpo', None, 'gigpo')
    """
    from g2po.estimators import list_estimators

    name = str(adv_estimator)
    if name.startswith(LIBRARY_PREFIX):
        name = name[len(LIBRARY_PREFIX):]
        return name if name in VERL_BUILTIN_ESTIMATORS and name in list_estimators() else None
    if name in VERL_BUILTIN_ESTIMATORS:
        return None
    return name if name in list_estimators() else None


def _plain(node: Any) -> Any:
    """A DictConfig/ListConfig as plain Python values (interpolations resolved)."""
    if isinstance(node, DictConfig) or OmegaConf.is_list(node):
        return OmegaConf.to_container(node, resolve=True)
    return node


@dataclass(frozen=True)
class EstimatorSettings:
    """How one of our estimators runs inside verl: the house's values and the estimator's own.

    ``name`` is the g2po library estimator; ``params`` G2PO's parameters (the state key among
    them) and ``rule`` the run's outcome rule, of which the estimator takes what it takes with
    G2PO's meaning (:meth:`G2POParams.for_estimator`); ``own`` its other parameters (GiGPO's
    ``omega`` and normalisation, …; checked against :func:`g2po.estimators.estimator_params`);
    ``missing_step_fields`` one of :data:`MISSING_FIELD_POLICIES`.
    """

    name: str
    params: G2POParams = field(default_factory=G2POParams)
    rule: OutcomeRule = field(default_factory=OutcomeRule)
    own: dict[str, Any] = field(default_factory=dict)
    missing_step_fields: str = "error"

    @property
    def state_key(self) -> str:
        """The state-merging strategy (``params.state_key``)."""
        return str(self.params.state_key)

    def kwargs(self) -> dict[str, Any]:
        """The estimator's exact keyword arguments (the state key apart)."""
        return {**self.params.for_estimator(self.name, self.rule), **self.own}


def estimator_settings(name: str, algorithm: Mapping | None,
                       success_reward: float | None = None) -> EstimatorSettings:
    """The settings of library estimator ``name`` from verl's ``algorithm`` section
    (``algorithm.<name>``, the library name also for ``g2po:grpo``; absent keys take the
    library defaults, the rule's success reward ``success_reward`` when given: the
    environment's). Raises :class:`VerlConfigError` on unknown keys or values."""
    section = _plain((algorithm or {}).get(name)) if algorithm is not None else None
    section = dict(section or {})
    problems = _estimator_problems(name, section)
    if problems:
        raise VerlConfigError(problems)
    policy = section.pop("missing_step_fields", "error")
    taken = set(G2POParams().for_estimator(name, OutcomeRule()))
    params = {k: section.pop(k) for k in list(section)
              if k in G2POParams.names() and (k in taken or k == "state_key")}
    rule = {k: section.pop(k) for k in list(section)
            if k in OutcomeRule.names() and (k in taken or k == "truncate_at")}
    where = f"algorithm.{name}: "
    try:
        base = OutcomeRule() if success_reward is None else \
            OutcomeRule(success_reward=float(success_reward))
        return EstimatorSettings(name=name, params=G2POParams.from_values(params, where=where),
                                 rule=OutcomeRule.from_values(rule, base, where=where),
                                 own=section, missing_step_fields=policy)
    except (ValueError, G2POError) as err:
        raise VerlConfigError([str(err)]) from None


def _estimator_problems(name: str, section: dict[str, Any]) -> list[str]:
    from g2po.estimators import check_estimator_params, estimator_params
    from g2po.segments import NORM_MODES
    from g2po.state_keys import resolve_state_key

    where = f"algorithm.{name}"
    accepted = estimator_params(name)
    problems = []
    for key in section:
        if key not in accepted and key not in OWN_KEYS:
            problems.append(f"{where}.{key}: not a parameter of the {name} estimator; it takes "
                            f"{', '.join([*accepted, *OWN_KEYS])}")
    policy = section.get("missing_step_fields", "error")
    if policy not in MISSING_FIELD_POLICIES:
        problems.append(f"{where}.missing_step_fields must be one of "
                        f"{', '.join(MISSING_FIELD_POLICIES)}, got {policy!r}")
    if section.get("mode", NORM_MODES[0]) not in NORM_MODES:
        problems.append(f"{where}.mode must be one of {', '.join(NORM_MODES)}, "
                        f"got {section['mode']!r}")
    try:
        resolve_state_key(section.get("state_key", "exact"))
    except (G2POError, ValueError) as err:
        problems.append(f"{where}.state_key: {err}")
    if problems:
        return problems
    # Let the estimator itself judge the values (gamma range, terminal, ...) on a tiny table.
    params = {k: v for k, v in section.items() if k not in OWN_KEYS}
    try:
        OutcomeRule(truncate_at=section.get("truncate_at"))
        check_estimator_params(name, **params)
    except (G2POError, ValueError, TypeError) as err:
        problems.append(f"{where}: {err}")
    return problems


@dataclass(frozen=True)
class EnvSettings:
    """The ``g2po_env`` section: which environment the agent loop plays and how."""

    name: str
    """Environment spec of the training tasks, e.g. ``textworld:coin_collector-level5``."""
    val_name: str
    """Environment spec of the validation tasks."""
    max_steps: int = 50
    """Environment steps before an episode is cut off (unsuccessful)."""
    history_length: int = 2
    """Earlier (observation, action) steps shown in each prompt."""
    success_reward: float = 10.0
    """Episode reward of a won episode; 0 otherwise."""
    train_tasks: int = 64
    """Tasks in the training task list."""
    val_tasks: int = 16
    """Tasks in the validation task list."""
    seed: int = 0
    """Seed of the training task list."""
    val_seed: int = 1_000_000
    """Seed of the validation task list."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the environment family."""

    def family_key(self, spec: str) -> tuple[str, str]:
        """A hashable key of the family ``spec`` with these kwargs (families are cached)."""
        import json

        return spec, json.dumps(self.env_kwargs, sort_keys=True, default=str)


def env_settings(config: Mapping) -> EnvSettings:
    """:class:`EnvSettings` from the full configuration's ``g2po_env`` section."""
    section = dict(_plain(config.get("g2po_env")) or {})
    section.pop("data_dir", None)
    section["val_name"] = section.get("val_name") or section.get("name", "")
    known = set(EnvSettings.__dataclass_fields__)
    unknown = sorted(set(section) - known)
    if unknown:
        raise VerlConfigError([f"g2po_env.{k}: unknown key; keys: {', '.join(sorted(known))}"
                               for k in unknown])
    return EnvSettings(**section)


def _env_problems(config: Mapping) -> list[str]:
    try:
        env = env_settings(config)
    except (VerlConfigError, TypeError) as err:
        return getattr(err, "problems", [f"g2po_env: {err}"])
    problems = []
    for key in ("max_steps", "train_tasks", "val_tasks"):
        if not isinstance(getattr(env, key), int) or getattr(env, key) <= 0:
            problems.append(f"g2po_env.{key} must be a positive integer, got {getattr(env, key)!r}")
    if not isinstance(env.history_length, int) or env.history_length < 0:
        problems.append(f"g2po_env.history_length must be an integer >= 0, "
                        f"got {env.history_length!r}")
    if not isinstance(env.env_kwargs, dict):
        problems.append("g2po_env.env_kwargs must be a mapping")
    from g2po.envs import list_envs

    prefixes = list_envs()
    for key, spec in (("name", env.name), ("val_name", env.val_name)):
        prefix = str(spec).partition(":")[0]
        if prefix not in prefixes:
            problems.append(f"g2po_env.{key}: {spec!r} is not an environment spec; the part "
                            f"before ':' must be one of {', '.join(prefixes)}")
    return problems


def config_problems(config: DictConfig) -> list[str]:
    """Every reason the composed configuration cannot train with G2PO, each naming its key."""
    problems: list[str] = []
    algorithm = config.get("algorithm") or {}
    adv_estimator = str(algorithm.get("adv_estimator"))
    estimator = library_estimator(adv_estimator)
    mode = str(OmegaConf.select(config, "trainer.v1.trainer_mode", default=""))
    if adv_estimator.startswith(LIBRARY_PREFIX) and estimator is None:
        problems.append(
            f"algorithm.adv_estimator={adv_estimator}: {LIBRARY_PREFIX}NAME names a g2po "
            "library estimator whose name verl also uses; those are "
            + ", ".join(LIBRARY_PREFIX + n for n in _shadowed()))
    if estimator is not None:
        try:
            settings = estimator_settings(estimator, algorithm)
        except VerlConfigError as err:
            problems.extend(err.problems)
        else:
            if mode != TRAINER_MODE and settings.missing_step_fields == "error":
                problems.append(
                    f"algorithm.adv_estimator={adv_estimator} needs the per-step fields that only "
                    f"the g2po trainer hands over: set trainer.v1.trainer_mode={TRAINER_MODE} "
                    f"(it is {mode!r}), or opt in to the episode term alone with "
                    f"algorithm.{estimator}.missing_step_fields=episode_only")
        if algorithm.get("use_kl_in_reward"):
            problems.append(
                f"algorithm.use_kl_in_reward=true changes the reward token by token, so the "
                f"{estimator} state graph would see a different outcome on every step; use the "
                "actor's KL loss instead (actor_rollout_ref.actor.use_kl_loss=true, the paper's "
                "setting) and set algorithm.use_kl_in_reward=false")
        success = OmegaConf.select(config, f"algorithm.{estimator}.success_reward", default=None)
        env_success = OmegaConf.select(config, "g2po_env.success_reward", default=None)
        if success is not None and env_success is not None and success != env_success:
            problems.append(
                f"algorithm.{estimator}.success_reward ({success}) differs from "
                f"g2po_env.success_reward ({env_success}): the success terminal would never be "
                "reached; leave it at ${g2po_env.success_reward}")
    if not OmegaConf.select(config, "trainer.use_v1", default=False):
        problems.append("trainer.use_v1 must be true: the G2PO trainer is a verl v1 trainer mode")
    agent_loop = OmegaConf.select(config, "actor_rollout_ref.rollout.agent.default_agent_loop")
    if agent_loop == AGENT_LOOP or mode == TRAINER_MODE:
        problems.extend(_env_problems(config))
    if mode == TRAINER_MODE and agent_loop != AGENT_LOOP and _auto(config):
        problems.append(
            f"data.train_files=auto writes task lists for the {AGENT_LOOP} agent loop, but "
            f"actor_rollout_ref.rollout.agent.default_agent_loop is {agent_loop!r}; set it to "
            f"{AGENT_LOOP} or give your own data.train_files")
    n = OmegaConf.select(config, "actor_rollout_ref.rollout.n", default=1)
    if estimator is not None and (not isinstance(n, int) or n < 2):
        problems.append(f"actor_rollout_ref.rollout.n must be >= 2 for {estimator} (a group is "
                        f"the N rollouts of one task; the paper uses 8), got {n!r}")
    mini = OmegaConf.select(config, "actor_rollout_ref.actor.ppo_mini_batch_size", default=None)
    tasks = OmegaConf.select(config, "data.train_batch_size", default=None)
    dynamic = OmegaConf.select(config, "actor_rollout_ref.actor.use_dynamic_bsz", default=False)
    if isinstance(mini, int) and isinstance(tasks, int) and mini > tasks and not dynamic:
        problems.append(f"actor_rollout_ref.actor.ppo_mini_batch_size ({mini}) exceeds "
                        f"data.train_batch_size ({tasks}), which verl allows only with "
                        "actor_rollout_ref.actor.use_dynamic_bsz=true; a mini-batch is "
                        f"{mini} x rollout.n step rows, so lower it or set use_dynamic_bsz")
    if OmegaConf.select(config, "data.validation_shuffle", default=False):
        problems.append("data.validation_shuffle=true plays the validation tasks in another "
                        "order at each validation (and another draw after a resume); set it "
                        "false so every validation plays the same panel the same way")
    run_dir = OmegaConf.select(config, "g2po_log.run_dir", default=None)
    if OmegaConf.select(config, "g2po_log.enable", default=False) and not run_dir:
        problems.append("g2po_log.run_dir must name a directory when g2po_log.enable is true")
    return problems


def _shadowed() -> list[str]:
    from g2po.estimators import list_estimators

    return [n for n in list_estimators() if n in VERL_BUILTIN_ESTIMATORS]


def _auto(config: DictConfig) -> bool:
    return any(str(OmegaConf.select(config, f"data.{k}", default="")) == "auto"
               for k in ("train_files", "val_files"))
