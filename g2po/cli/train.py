"""``g2po train``: train an agent with G2PO (or any estimator) on the local or the verl backend.

``--backend local`` (default): the configuration comes from the defaults, then
``--config FILE`` (YAML/JSON), then the flags, then ``KEY=VALUE`` overrides (positional words
or ``--set``; any :class:`g2po.trainers.TrainConfig` key, see ``--list-config``). When ``--out``
already holds a run, its stored configuration is the starting point and training resumes from
its last checkpoint.

``--backend verl``: ``--config`` is a Hydra config and the ``KEY=VALUE`` words are Hydra
overrides, handed to ``g2po.trainers.verl_backend.run`` untouched.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

__all__ = ["add_parser", "resolve_config"]

# Flag (argparse dest) -> TrainConfig key, for the flags that exist besides KEY=VALUE.
_FLAGS = {
    "env": "env", "model": "model", "estimator": "estimator", "total_steps": "total_steps",
    "seed": "seed", "lr": "lr", "tasks_per_step": "tasks_per_step",
    "rollouts_per_task": "rollouts_per_task", "max_steps": "max_steps", "device": "device",
    "threads": "threads",
}
VERL_MODULE = "g2po.trainers.verl_backend"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train", help="train an agent with G2PO (or another estimator)",
        description="Train a causal LM agent with G2PO (or GRPO, GiGPO, any registered "
        "estimator) and write a run directory the app opens while it trains. Example: "
        "g2po train --backend local --env textworld:coin_collector-level2 --model tiny:heads=2 "
        "--total-steps 20 --max-steps 8 --out runs/tiny-g2po task_pool=16. Rerun the same "
        "command to resume.",
    )
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="configuration overrides, anywhere among the flags: TrainConfig keys "
                   "for --backend local (lr=1e-3 params.w=0.8 outcome.terminal=reward, see "
                   "--list-config), Hydra overrides for --backend verl")
    p.add_argument("--backend", choices=("local", "verl"), default="local",
                   help="local: one process, transformers, CPU or one GPU (default); "
                   "verl: Ray + vLLM + FSDP (see docs/verl.md)")
    p.add_argument("--out", help="run directory to write (resumed when it holds a run)")
    p.add_argument("--config", metavar="FILE", help="YAML or JSON configuration file")
    p.add_argument("--set", "-s", dest="set_overrides", action="append", default=[],
                   metavar="KEY=VALUE", help="an override, as the positional ones")
    p.add_argument("--env", help="environment spec; 'textworld' = "
                   "textworld:coin_collector-level5")
    p.add_argument("--model", help="'tiny' (built locally, no download) or a local Hugging "
                   "Face model folder")
    p.add_argument("--estimator", help="g2po (default), grpo, gigpo, rloo, …")
    p.add_argument("--total-steps", type=int, help="training steps")
    p.add_argument("--seed", type=int, help="seed of sampling and task draws")
    p.add_argument("--lr", type=float, help="learning rate (default: 1e-6, tiny model 1e-3)")
    p.add_argument("--tasks-per-step", type=int, help="groups per training step")
    p.add_argument("--rollouts-per-task", type=int, help="N, rollouts per group")
    p.add_argument("--max-steps", type=int, help="environment steps per episode")
    p.add_argument("--device", help="auto, cpu, cuda, cuda:N")
    p.add_argument("--threads", type=int, help="CPU threads for torch (0 = torch's default)")
    p.add_argument("--rollout", help="--backend verl: the rollout engine "
                   "(actor_rollout_ref.rollout.name); with --device cpu hf (default) or vllm")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved configuration and exit")
    p.add_argument("--list-config", action="store_true",
                   help="list every configuration key with its default and meaning, and exit")
    p.set_defaults(func=_train, intermixed="overrides")


def _overrides(args: argparse.Namespace) -> list[str]:
    words = list(args.overrides) + list(args.set_overrides)
    bad = [w for w in words if "=" not in w]
    if bad:
        raise ValueError(f"expected KEY=VALUE overrides, got {', '.join(map(repr, bad))}")
    return words


def resolve_config(args: argparse.Namespace):
    """The local backend's configuration the arguments describe (order: module docstring)."""
    from dataclasses import asdict

    from g2po.trainers.config import load_config
    from loaders.rundir import MANIFEST

    base = None
    if args.out and (Path(args.out) / MANIFEST).is_file():
        from loaders import open_run

        base = open_run(args.out).manifest.get("config") or None
    flags = {key: getattr(args, name) for name, key in _FLAGS.items()
             if getattr(args, name, None) is not None}
    if args.no_progress:
        flags["progress"] = False
    config = load_config(args.config, flags, base=base)
    overrides = _overrides(args)
    if overrides:
        config = load_config(None, overrides, base=asdict(config))
    return config


def _list_config() -> int:
    from dataclasses import MISSING

    from g2po.trainers.config import config_fields, field_docs

    docs = field_docs()
    for name, f in config_fields().items():
        default = f.default if f.default is not MISSING else f.default_factory()
        if hasattr(default, "as_dict"):  # params, outcome: set one part as name.part=VALUE
            parts = ", ".join(f"{name}.{k} = {v!r}" for k, v in default.as_dict().items())
            print(f"{parts}\n    {docs.get(name, '')}")
        else:
            print(f"{name} = {default!r}\n    {docs.get(name, '')}")
    return 0


def _train(args: argparse.Namespace) -> int:
    if args.backend == "verl":
        return _train_verl(args)
    if args.rollout:
        raise ValueError("--rollout applies to --backend verl (the local backend generates with "
                         "its own model)")
    if args.list_config:
        return _list_config()
    config = resolve_config(args)
    if args.print_config:
        import yaml

        print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
        return 0
    if not args.out:
        raise ValueError("--out DIR is required: the run directory to write")
    from g2po.trainers import train

    result = train(config, args.out, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"run directory: {result.run_dir} (open it with: streamlit run app/main.py -- --log "
          f"{result.run_dir})")
    return 0


def _train_verl(args: argparse.Namespace) -> int:
    """Hand the Hydra config and overrides to the verl backend."""
    from g2po.trainers import BackendError

    try:
        backend = importlib.import_module(VERL_MODULE)
    except ModuleNotFoundError as err:
        if err.name != VERL_MODULE:
            raise BackendError(f"the verl backend needs packages that are missing ({err}): "
                               "pip install -e '.[verl]'; see the README's GPU path "
                               "(docs/verl.md)") from err
        raise BackendError("the verl backend (g2po.trainers.verl_backend) is not part of this "
                           "installation; see the README's GPU path (docs/verl.md), or use "
                           "--backend local") from err
    overrides = _overrides(args)
    flags = {key: getattr(args, name) for name, key in _FLAGS.items()
             if getattr(args, name, None) is not None}
    if args.out:
        flags["out"] = args.out
    if args.rollout:
        flags["rollout"] = args.rollout
    if flags:
        translate = getattr(backend, "overrides_from_flags", None)
        if translate is None:
            raise ValueError(
                f"--backend verl takes Hydra overrides (KEY=VALUE words) instead of "
                f"{', '.join('--' + k.replace('_', '-') for k in flags)}; see "
                "g2po train --backend verl --print-config for its keys")
        overrides = list(translate(flags)) + overrides
    if args.list_config:
        args.print_config = True
    return int(backend.run(overrides, args.config, print_config=args.print_config) or 0)
