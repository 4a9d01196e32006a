"""The ``g2po train`` flags both backends share, as hydra overrides of the verl configuration.

``g2po train --backend verl --env alfworld:train --model /models/Qwen2.5-1.5B-Instruct --out
runs/alf`` means the same as the local backend's flags: the flags become the overrides below,
placed before the user's own ``KEY=VALUE`` words (which therefore win).

========================  ==========================================================
flag                      overrides
========================  ==========================================================
``--env SPEC``            ``g2po_env.name``
``--model PATH|tiny``     ``actor_rollout_ref.model.path`` (``tiny``: built locally for the
                          environment, with a plain chat template)
``--estimator NAME``      ``algorithm.adv_estimator``: the g2po library estimator NAME
                          (``g2po:NAME`` where verl has a built-in NAME: grpo, rloo)
``--total-steps N``       ``trainer.total_training_steps``
``--seed N``              ``g2po_env.seed``, ``data.seed``
``--lr X``                ``actor_rollout_ref.actor.optim.lr``
``--tasks-per-step N``    ``data.train_batch_size`` and ``actor.ppo_mini_batch_size`` (one
                          update per training step, as the local backend's default)
``--rollouts-per-task N`` ``actor_rollout_ref.rollout.n``
``--max-steps N``         ``g2po_env.max_steps``
``--out DIR``             ``g2po_log.run_dir``, checkpoints in ``DIR/checkpoints``
``--device cpu``          verl's CPU mode: :data:`~g2po.trainers.verl_backend.devices.CPU_OVERRIDES`
                          (``trainer.device=cpu``, FSDP2, eager attention, the ``hf`` rollout,
                          no sleep mode, one logical GPU, …); the launcher sets the rest
``--rollout NAME``        ``actor_rollout_ref.rollout.name`` (after the CPU mode's ``hf``: with
                          ``--device cpu``, ``hf`` or ``vllm``)
========================  ==========================================================

``--device cuda``/``auto`` (or no ``--device``) is verl's GPU path, unchanged; ``cuda:N`` is
refused (verl places its workers on the GPUs Ray sees). ``--threads`` applies to the local
backend only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from g2po.trainers.verl_backend.devices import CPU, CPU_OVERRIDES
from g2po.trainers.verl_backend.settings import VerlConfigError, verl_estimator_name

__all__ = ["overrides_from_flags", "hydra_value", "PLAIN_CHAT_TEMPLATE"]

#: A chat template that renders the user message as it is: the tiny model has no template and
#: is trained on bare prompts (``actor_rollout_ref.model.custom_chat_template``).
PLAIN_CHAT_TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"

_PLAIN = re.compile(r"[A-Za-z0-9_./:+\-]+")


def hydra_value(value: Any) -> str:
    """``value`` as a hydra override value: plain words as they are, anything else quoted.

    >>> hydra_value("alfworld:train"), hydra_value("/my models/q 1.5b"), hydra_value(3)
    ('alfworld:train', "'/my models/q 1.5b'", '3')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    quote = '"' if "'" in text else "'"
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def _model_overrides(model: str, env: str | None) -> list[str]:
    if model == "tiny" or model.startswith("tiny:"):
        from g2po.trainers.models import model_path

        if env is None:
            raise VerlConfigError(["--model tiny is built for an environment: pass --env SPEC"])
        path = model_path(model, env=env)
        return [f"actor_rollout_ref.model.path={hydra_value(path)}",
                f"actor_rollout_ref.model.custom_chat_template={hydra_value(PLAIN_CHAT_TEMPLATE)}"]
    return [f"actor_rollout_ref.model.path={hydra_value(Path(model).expanduser())}"
            if Path(model).expanduser().exists() else
            f"actor_rollout_ref.model.path={hydra_value(model)}"]


def overrides_from_flags(flags: Mapping[str, Any]) -> list[str]:
    """Hydra overrides meaning the shared ``g2po train`` flags (see the module docstring).

    ``flags`` maps flag names (``env``, ``model``, ``estimator``, ``total_steps``, ``seed``,
    ``lr``, ``tasks_per_step``, ``rollouts_per_task``, ``max_steps``, ``device``, ``threads``,
    ``out``, ``rollout``) to values; None values are skipped. Raises :class:`VerlConfigError`
    for a flag verl has no meaning for.

    >>> overrides_from_flags({"env": "alfworld:train", "max_steps": 50, "lr": 1e-6})
    ['g2po_env.name=alfworld:train', 'actor_rollout_ref.actor.optim.lr=1e-06', \
'g2po_env.max_steps=50']
    """
    flags = {k: v for k, v in flags.items() if v is not None}
    env = flags.get("env")
    if env is not None:
        from g2po.trainers.config import resolve_env

        env = resolve_env(str(env))
    out: list[str] = []
    problems: list[str] = []
    if env is not None:
        out.append(f"g2po_env.name={hydra_value(env)}")
    if "model" in flags:
        out.extend(_model_overrides(str(flags["model"]), env))
    if "estimator" in flags:
        from g2po.estimators import list_estimators

        name = str(flags["estimator"])
        if name not in list_estimators():
            problems.append(f"--estimator {name}: not a g2po estimator; choose one of "
                            f"{', '.join(list_estimators())} (verl's own estimators are "
                            "chosen with algorithm.adv_estimator=NAME)")
        out.append(f"algorithm.adv_estimator={hydra_value(verl_estimator_name(name))}")
    simple = {"total_steps": "trainer.total_training_steps",
              "lr": "actor_rollout_ref.actor.optim.lr",
              "rollouts_per_task": "actor_rollout_ref.rollout.n",
              "max_steps": "g2po_env.max_steps",
              "rollout": "actor_rollout_ref.rollout.name"}
    for flag, key in simple.items():
        if flag in flags:
            out.append(f"{key}={hydra_value(flags[flag])}")
    if "seed" in flags:
        out += [f"g2po_env.seed={int(flags['seed'])}", f"data.seed={int(flags['seed'])}"]
    if "tasks_per_step" in flags:
        n = int(flags["tasks_per_step"])
        out += [f"data.train_batch_size={n}", f"actor_rollout_ref.actor.ppo_mini_batch_size={n}"]
    if "out" in flags:
        run_dir = Path(str(flags["out"])).expanduser().resolve()
        out += [f"g2po_log.run_dir={hydra_value(run_dir)}",
                f"trainer.default_local_dir={hydra_value(run_dir / 'checkpoints')}"]
    device = str(flags.get("device", "auto"))
    if device == CPU:
        out = list(CPU_OVERRIDES) + out
    elif device not in ("auto", "cuda"):
        problems.append(f"--device {device}: verl places its workers on the GPUs Ray sees; "
                        "choose them with CUDA_VISIBLE_DEVICES and trainer.n_gpus_per_node "
                        "(or --device cpu for verl's CPU mode)")
    if flags.get("threads"):
        problems.append("--threads applies to --backend local only")
    if problems:
        raise VerlConfigError(problems)
    return out
