"""The training configuration of the ``local`` backend.

One dataclass: every field has a one-line doc with its allowed values; ``__post_init__`` checks
them and says how to fix a bad one. G2PO's parameters and the run's outcome rule are the house's
values, held whole (``params``: :class:`g2po.params.G2POParams`; ``outcome``:
:class:`g2po.outcomes.OutcomeRule`) and set one field at a time as ``params.gamma=0.9`` or
``outcome.terminal=reward``; the names of earlier versions (``gamma``, ``invalid_penalty``,
``state_key``, ``success_reward``, and ``estimator_params.w`` for a parameter G2POParams holds)
still work and land there. A run's configuration comes from the defaults, then a YAML/JSON file,
then command-line flags and ``KEY=VALUE`` overrides (:func:`load_config`); the resolved
configuration is stored in the run directory's ``run.json`` so a run says how it was made,
reopens with its rule and parameters, and can be resumed.

Defaults follow the G2PO paper (lr 1e-6, low-variance KL at 0.01, invalid-action penalty 0.1,
gamma 0.95, N = 8 rollouts per task, the last 2 steps of history in the prompt), except where
a small CPU run needs otherwise (``max_steps``, ``max_new_tokens``); the tiny model trains with
a larger learning rate (see ``docs/study.md``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from g2po.errors import G2POError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams, state_key_forms

__all__ = [
    "TrainConfig",
    "ConfigError",
    "DEFAULT_ENVS",
    "load_config",
    "apply_overrides",
    "config_fields",
    "field_docs",
    "resolve_env",
    "LEGACY_KEYS",
]


class ConfigError(G2POError, ValueError):
    """A configuration value, key or file that cannot be used; the message says how to fix it."""


#: What a bare family name given to ``--env`` means.
DEFAULT_ENVS = {
    "textworld": "textworld:coin_collector-level5",
}

_BACKENDS = ("local", "verl")
_LOSS_AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                   "seq-mean-token-sum-norm")
_KL_TYPES = ("low_var_kl", "k3", "kl", "k1", "abs", "mse", "k2", "low_var_kl+", "k3+")
#: Fields that hold one of the house's values whole, set one part at a time (``params.w=0.8``).
_VALUES = {"params": G2POParams, "outcome": OutcomeRule}
#: Keys of earlier versions -> (field, part) where they live now; configuration files, stored
#: runs and ``KEY=VALUE`` words may still use them.
LEGACY_KEYS = {"gamma": ("params", "gamma"), "invalid_penalty": ("params", "penalty"),
               "state_key": ("params", "state_key"),
               "success_reward": ("outcome", "success_reward")}


def resolve_env(env: str) -> str:
    """The environment spec ``env`` names: a full spec is kept, a bare family name gets its
    default game (``textworld`` -> ``textworld:coin_collector-level5``)."""
    if ":" not in env and env in DEFAULT_ENVS:
        return DEFAULT_ENVS[env]
    return env


@dataclass
class TrainConfig:
    """Everything a training run needs; see the module docstring for where values come from."""

    # -- environment and tasks -------------------------------------------------------------
    env: str = "textworld:coin_collector-level5"
    """Environment spec (``g2po rollouts --list-envs``); a bare ``textworld`` means its default
    game, coin_collector level 5."""
    task_pool: int = 64
    """How many distinct tasks (task ids ``list_tasks(env, task_pool, task_seed)``) training
    draws from."""
    task_seed: int = 0
    """Seed of the task pool (which games are generated)."""
    tasks_per_step: int = 4
    """Groups per training step: tasks drawn without replacement from the pool each step."""
    rollouts_per_task: int = 8
    """N, the rollouts of one task that form a group (the paper uses 8)."""
    max_steps: int = 15
    """Environment steps before an episode is cut off (unsuccessful)."""
    history_length: int = 2
    """How many earlier (observation, action) steps the prompt shows."""

    # -- validation (held-out tasks; the paper's Table 1) ------------------------------------
    val_tasks: int = 0
    """Validation tasks (``list_tasks(val_env, val_tasks, val_seed)``); 0 = no validation."""
    val_env: str | None = None
    """Environment spec of the validation tasks; None = ``env`` (with ``val_seed``'s tasks).
    The authors validate ALFWorld on its in-distribution split: ``alfworld:valid_seen``, or
    ``alfworld:generated-valid_seen`` for generated games."""
    val_seed: int = 1_000_000
    """Seed of the validation task list (other games than training's for TextWorld)."""
    val_rollouts: int = 1
    """Episodes per validation task (verl's ``val_kwargs.n``)."""
    val_every: int = 5
    """Validate after every this many training steps and after the last (the paper: 5)."""
    val_before_train: bool = False
    """Also validate the initial model (logged as training step 0)."""
    val_temperature: float = 0.4
    """Sampling temperature of the validation episodes (the paper's 0.4)."""

    # -- model and generation --------------------------------------------------------------
    model: str = "tiny"
    """``tiny`` (built locally, no download; see :mod:`g2po.trainers.tiny`) or the path of a
    local Hugging Face causal-LM folder."""
    device: str = "auto"
    """``auto`` (cuda if available, else cpu), ``cpu``, ``cuda`` or ``cuda:N``."""
    dtype: str = "auto"
    """Parameter dtype: ``auto`` (float32 on CPU, bfloat16 on GPU), ``float32``, ``bfloat16``."""
    max_new_tokens: int = 48
    """Response length limit in tokens (the paper uses 512 for its 1.5B/7B models)."""
    max_prompt_tokens: int = 1024
    """Longer prompts keep their last tokens (counted in ``rollout/prompt_truncated``)."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts; log-probs for the loss use the same."""
    top_p: float = 1.0
    """Nucleus sampling; 1.0 samples the full distribution, as the loss assumes."""
    chat_template: str = "auto"
    """``auto``: wrap the prompt in the tokenizer's chat template when it has one; ``none``."""
    generation_batch_size: int = 0
    """Prompts per ``generate`` call; 0 = every active rollout at once."""
    threads: int = 0
    """CPU threads torch uses; 0 = torch's default. On a busy shared machine 1 is faster."""

    # -- advantages ------------------------------------------------------------------------
    estimator: str = "g2po"
    """Any registered estimator (``g2po``, ``grpo``, ``gigpo``, ``rloo``, …)."""
    params: G2POParams = field(default_factory=G2POParams)
    """G2PO's parameters (g2po.params.G2POParams): gamma (0.95), w (1.0), mode (mean_std_norm |
    mean_norm), penalty (the invalid-action penalty, 0.1), state_key (exact | normalized |
    alfworld | regex:PATTERN | similarity[:THRESHOLD]); each estimator gets those it takes with
    G2PO's meaning. Set one as params.gamma=0.9 (gamma=, invalid_penalty=, state_key= also
    work)."""
    outcome: OutcomeRule = field(default_factory=OutcomeRule)
    """The run's outcome rule (g2po.outcomes.OutcomeRule): success_reward (a won episode's
    reward, else 0; the success terminal's value; 10), success_threshold (null: success is
    reward = success_reward), terminal (binary | reward), truncate_at (null or N). Set one as
    outcome.terminal=reward (success_reward= also works)."""
    estimator_params: dict[str, Any] = field(default_factory=dict)
    """The estimator's own parameters beyond params and outcome, e.g. {omega: 0.8} for gigpo; a
    name that params or outcome gives this estimator (w, gamma, …) is moved there."""

    # -- the update ------------------------------------------------------------------------
    lr: float | None = None
    """AdamW learning rate; None = the paper's 1e-6 for a Hugging Face model, 1e-3 for the
    tiny model (whose random weights need far larger steps; see docs/study.md)."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip; 0 disables it."""
    kl_coef: float = 0.01
    """Coefficient of the KL loss to the initial model; 0 skips the reference model."""
    kl_type: str = "low_var_kl"
    """verl's ``kl_penalty`` estimator: low_var_kl (k3), kl (k1), mse (k2), abs, with ``+``."""
    clip_ratio_low: float = 0.2
    """PPO clip range below 1."""
    clip_ratio_high: float = 0.2
    """PPO clip range above 1."""
    clip_ratio_c: float = 3.0
    """Dual-clip bound for negative advantages (> 1)."""
    policy_loss: str = "vanilla"
    """verl policy-loss name (``get_policy_loss_fn``): vanilla, gspo, cispo, …"""
    loss_agg_mode: str = "token-mean"
    """verl ``agg_loss`` mode: token-mean, seq-mean-token-mean, seq-mean-token-sum, …"""
    ppo_epochs: int = 1
    """Passes over a training step's samples."""
    mini_batch_size: int = 0
    """Samples (agent steps) per optimizer step; 0 = all of a training step in one."""
    micro_batch_size: int = 16
    """Samples per forward/backward (gradient accumulation; lower it to save memory)."""

    # -- the run ---------------------------------------------------------------------------
    backend: str = "local"
    """``local`` (one process, transformers) or ``verl`` (Ray, vLLM, FSDP)."""
    total_steps: int = 100
    """Training steps (one rollout batch and its update each)."""
    seed: int = 0
    """Seed of sampling, task draws and the tiny model."""
    checkpoint_every: int = 10
    """Save a checkpoint every this many steps (and at the end); resume starts there."""
    keep_checkpoints: int = 2
    """How many recent checkpoints to keep."""
    checkpoint_dir: str | None = None
    """Where checkpoints go; None = ``OUT/checkpoints`` (a run directory to share without
    weights can keep them elsewhere)."""
    progress: bool = True
    """Show a progress bar (reward, success, seconds per step)."""

    def __post_init__(self) -> None:
        problems = self._take_values() + self.problems()
        if problems:
            raise ConfigError("invalid training configuration:\n" +
                              "\n".join(f"  - {p}" for p in problems))

    def _take_values(self) -> list[str]:
        """``params`` and ``outcome`` as the house's values (a mapping from a file or a stored
        run is parsed), and the ``estimator_params`` they hold for this estimator moved into
        them (:func:`_fold`); the problems found, each naming its key."""
        problems = []
        for name, kind in _VALUES.items():
            value = getattr(self, name)
            if isinstance(value, kind):
                continue
            if not isinstance(value, dict):
                problems.append(f"{name} must be a mapping of its fields ("
                                f"{', '.join(kind.names())}), got {value!r}")
                continue
            try:
                setattr(self, name, kind.from_values(value, where=f"{name}: "))
            except (ValueError, G2POError) as err:
                problems.append(str(err))
        if not problems and not isinstance(self.params.state_key, str):
            problems.append(f"params.state_key must be a strategy's name ({state_key_forms()})"
                            ": a run stores it as text")
        if problems or not isinstance(self.estimator_params, dict):
            return problems
        try:
            self.params, self.outcome, self.estimator_params = _fold(
                self.estimator, self.params, self.outcome, self.estimator_params)
        except (ValueError, G2POError) as err:
            problems.append(str(err))
        return problems

    def estimator_kwargs(self) -> dict[str, Any]:
        """The estimator's keyword arguments: what ``params`` and ``outcome`` give it with
        G2PO's meaning (:meth:`g2po.params.G2POParams.for_estimator`), then its own
        ``estimator_params`` (which the estimator checks). The state key is
        ``params.state_key``, passed apart."""
        return {**self.params.for_estimator(self.estimator, self.outcome),
                **self.estimator_params}

    def problems(self) -> list[str]:
        """Every invalid field, each with how to fix it."""
        out: list[str] = []

        def positive(name: str, allow_zero: bool = False) -> None:
            value = getattr(self, name)
            if value < 0 or (value == 0 and not allow_zero):
                bound = ">= 0" if allow_zero else "> 0"
                out.append(f"{name} must be {bound}, got {value!r}")

        for name in ("task_pool", "tasks_per_step", "rollouts_per_task", "max_steps",
                     "max_new_tokens", "max_prompt_tokens", "micro_batch_size", "ppo_epochs",
                     "total_steps", "checkpoint_every", "keep_checkpoints"):
            positive(name)
        for name in ("val_rollouts", "val_every"):
            positive(name)
        for name in ("val_tasks", "history_length", "generation_batch_size", "mini_batch_size",
                     "threads", "weight_decay", "grad_clip", "kl_coef", "clip_ratio_low",
                     "clip_ratio_high"):
            positive(name, allow_zero=True)
        if self.lr is not None and self.lr < 0:
            out.append(f"lr must be >= 0 (or None for the model's default), got {self.lr!r}")
        if self.tasks_per_step > self.task_pool:
            out.append(f"tasks_per_step ({self.tasks_per_step}) cannot exceed task_pool "
                       f"({self.task_pool}): tasks are drawn without replacement")
        for name in ("temperature", "val_temperature"):
            if not 0 < getattr(self, name):
                out.append(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not 0 < self.top_p <= 1:
            out.append(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.clip_ratio_c <= 1:
            out.append(f"clip_ratio_c must be > 1, got {self.clip_ratio_c!r}")
        if self.backend not in _BACKENDS:
            out.append(f"backend must be one of {', '.join(_BACKENDS)}, got {self.backend!r}")
        if self.loss_agg_mode not in _LOSS_AGG_MODES:
            out.append(f"loss_agg_mode must be one of {', '.join(_LOSS_AGG_MODES)}, "
                       f"got {self.loss_agg_mode!r}")
        if self.kl_type not in _KL_TYPES:
            out.append(f"kl_type must be one of {', '.join(_KL_TYPES)}, got {self.kl_type!r}")
        if self.chat_template not in ("auto", "none"):
            out.append(f"chat_template must be auto or none, got {self.chat_template!r}")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            out.append(f"dtype must be auto, float32, bfloat16 or float16, got {self.dtype!r}")
        if not isinstance(self.estimator_params, dict):
            out.append("estimator_params must be a mapping, e.g. {w: 0.8}")
        if not self.env:
            out.append("env must name an environment, e.g. textworld:coin_collector-level5")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, as stored in ``run.json`` (``params`` and ``outcome`` as
        mappings of their fields)."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)


def _fold(estimator: str, params: G2POParams, outcome: OutcomeRule,
          own: dict[str, Any]) -> tuple[G2POParams, OutcomeRule, dict[str, Any]]:
    """Move the names of ``own`` (``estimator_params``) that ``params`` or ``outcome`` give
    ``estimator`` (``estimator_params.w=0.8`` of earlier versions) into them, so the run
    records each value once. A name set in both places to different values is refused."""
    taken = params.for_estimator(estimator, outcome)  # raises for an unknown estimator
    moved = {name: {} for name in _VALUES}
    kept = {}
    for key, value in own.items():
        if key not in taken:
            kept[key] = value
            continue
        name = "params" if key in G2POParams.names() else "outcome"
        current, default = (getattr(params if name == "params" else outcome, key),
                            getattr(_VALUES[name](), key))
        if current != default and current != value:
            raise ValueError(f"estimator_params.{key}={value!r} and {name}.{key}={current!r} "
                             f"disagree: set it once, as {name}.{key}")
        moved[name][key] = value
    params = G2POParams.from_values(moved["params"], params, where="estimator_params: ")
    outcome = OutcomeRule.from_values(moved["outcome"], outcome, where="estimator_params: ")
    return params, outcome, kept


def config_fields() -> dict[str, dataclasses.Field]:
    """The configuration's fields by name."""
    return {f.name: f for f in dataclasses.fields(TrainConfig)}


def field_docs() -> dict[str, str]:
    """Each field's one-line doc (read from the class source, so help is never written twice)."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(TrainConfig)))
    body = tree.body[0].body
    docs: dict[str, str] = {}
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)):
            docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


def _coerce(name: str, value: Any, source: str) -> Any:
    """``value`` as the type of field ``name``; strings from the command line are parsed."""
    f = config_fields()[name]
    kind = str(f.type)
    if kind.endswith(" | None"):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")):
            return None
        kind = kind.removesuffix(" | None")
    if name in _VALUES and isinstance(value, _VALUES[name]):
        return value
    if kind.startswith("dict") or name in _VALUES:
        if isinstance(value, str):
            value = yaml.safe_load(value) if value.strip() else {}
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: {name} must be a mapping, e.g. {name}={{w: 0.8}}")
        return dict(value)
    if isinstance(value, str) and kind != "str":
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            pass
    try:
        if kind == "bool":
            if isinstance(value, bool):
                return value
            raise TypeError
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise TypeError
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise TypeError
            return float(value)
        if kind == "str":
            return str(value)
    except (TypeError, ValueError):
        pass
    raise ConfigError(f"{source}: {name} must be of type {kind}, got {value!r}")


def _unknown(name: str, source: str) -> ConfigError:
    import difflib

    names = sorted(config_fields())
    parts = [f"{field}.{part}" for field, kind in _VALUES.items() for part in kind.names()]
    close = difflib.get_close_matches(name, names + parts, n=3)
    if name in G2POParams.names() or name in OutcomeRule.names():
        close = [f"params.{name}" if name in G2POParams.names() else f"outcome.{name}"]
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return ConfigError(f"{source}: unknown configuration key {name!r}{hint}; keys: "
                       f"{', '.join(names)}")


def apply_overrides(values: dict[str, Any], overrides: list[str] | dict[str, Any],
                    source: str = "--set") -> dict[str, Any]:
    """``values`` updated by ``KEY=VALUE`` strings (or a dict); ``params.w=0.8``,
    ``outcome.terminal=reward`` or ``estimator_params.omega=0.8`` set one part of a field, and
    the keys of :data:`LEGACY_KEYS` land where they live now (``gamma=0.9`` is
    ``params.gamma=0.9``). Values are parsed as YAML (``lr=1e-3``, ``progress=false``).

    >>> apply_overrides({}, ["gamma=0.9", "outcome.terminal=reward"])
    {'params': {'gamma': 0.9}, 'outcome': {'terminal': 'reward'}}
    """
    values = dict(values)
    items = overrides.items() if isinstance(overrides, dict) else []
    if not isinstance(overrides, dict):
        parsed = []
        for text in overrides:
            key, sep, value = text.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"{source}: expected KEY=VALUE, got {text!r}")
            parsed.append((key.strip(), value.strip()))
        items = parsed
    fields = config_fields()
    for key, value in items:
        name, _, sub = key.partition(".")
        if not sub and name in LEGACY_KEYS:
            name, sub = LEGACY_KEYS[name]
        if name not in fields:
            raise _unknown(name, source)
        if sub:
            if not str(fields[name].type).startswith("dict") and name not in _VALUES:
                raise ConfigError(f"{source}: {name} is not a mapping, so {key!r} cannot set "
                                  "a key inside it")
            inner = values.get(name)
            inner = inner.as_dict() if hasattr(inner, "as_dict") else dict(inner or {})
            inner[sub] = yaml.safe_load(value) if isinstance(value, str) else value
            values[name] = inner
        elif name in _VALUES and name in values:  # a whole mapping updates the parts set
            current = values[name]
            current = current.as_dict() if hasattr(current, "as_dict") else dict(current)
            values[name] = {**current, **_coerce(name, value, source)} \
                if not isinstance(value, _VALUES[name]) else value
        else:
            values[name] = _coerce(name, value, source)
    return values


def _read_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                          f"{err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a configuration file holds a mapping of KEY: VALUE")
    return data


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | dict[str, Any] | None = None,
    base: dict[str, Any] | None = None,
) -> TrainConfig:
    """The configuration from ``base`` (e.g. a stored run's), then the file at ``path`` (YAML or
    JSON, keys as in :class:`TrainConfig`), then ``overrides``.

    >>> load_config(overrides=["lr=1e-3", "estimator=grpo"]).lr
    0.001
    """
    values: dict[str, Any] = {}
    if base:
        values = apply_overrides(values, {k: v for k, v in base.items()
                                          if k in config_fields() or k in LEGACY_KEYS},
                                 "stored configuration")
    if path is not None:
        values = apply_overrides(values, _read_file(Path(path)), str(path))
    if overrides:
        values = apply_overrides(values, overrides)
    for key in ("env", "val_env"):
        if values.get(key):
            values[key] = resolve_env(values[key])
    return TrainConfig(**values)
