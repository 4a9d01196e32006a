"""``g2po rollouts``: collect groups of rollouts from an environment into a run directory."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

__all__ = ["add_parser"]

_RUN_ENTRIES = {"run.json", "rollouts", "metrics.jsonl"}


def _pairs(pairs: list[str], flag: str) -> dict:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} expects KEY=VALUE, got {pair!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _clear(out: Path) -> None:
    """Remove a previous run for --overwrite, refusing anything that is not only a run."""
    if not out.exists():
        return
    if not (out / "run.json").is_file():
        raise ValueError(f"{out}: exists and is not a run directory (no run.json); "
                         "refusing to overwrite it")
    extra = sorted(p.name for p in out.iterdir() if p.name not in _RUN_ENTRIES)
    if extra:
        raise ValueError(f"{out}: holds files that are not part of a run ({', '.join(extra)}); "
                         "refusing to overwrite it")
    shutil.rmtree(out)


def _register_model_policy(policy: str) -> None:
    """Register the trainers' model policy (``--policy tiny|PATH``)."""
    try:
        import g2po.trainers.models  # noqa: F401
    except ModuleNotFoundError as err:
        raise ValueError(f"--policy {policy}: not random or scripted, so it is read as a model, "
                         f"and model policies need the train extra (pip install -e .[train]): "
                         f"{err}") from None


def _rollouts(args: argparse.Namespace) -> int:
    from g2po.envs import list_envs
    from g2po.rollouts import CollectConfig, collect_run, make_policy

    if args.list_envs:
        for prefix, text in list_envs().items():
            print(f"{prefix:10s} {text}")
        return 0
    if not args.env or not args.out:
        raise ValueError("--env and --out are required (see g2po rollouts --help)")
    config = CollectConfig(
        env=args.env, tasks=args.tasks, group_size=args.group_size,
        train_steps=args.train_steps, max_steps=args.max_steps, history_length=args.history,
        seed=args.seed, success_reward=args.success_reward, task_pool=args.task_pool,
        env_kwargs=_pairs(args.env_arg, "--env-arg"),
    )
    kwargs = {"seed": args.seed, **_pairs(args.policy_arg, "--policy-arg")}
    if args.policy in ("random", "scripted"):
        kwargs["invalid_rate"] = args.invalid_rate
    if args.policy == "scripted":
        kwargs.update(follow=args.follow, follow_final=args.follow_final,
                      train_steps=args.train_steps)
    if args.policy not in ("random", "scripted"):
        kwargs.setdefault("env", args.env)  # a model policy (e.g. tiny) is built for the env
        _register_model_policy(args.policy)
    policy = make_policy(args.policy, **kwargs)
    out = Path(args.out)
    if args.overwrite:
        _clear(out)

    def progress(train_step: int, m: dict) -> None:
        if args.quiet:
            return
        print(f"step {train_step}/{config.train_steps}: {m['rows']} rows, "
              f"success {m['success_rate']:.0%}, invalid {m['invalid_rate']:.1%}, "
              f"merge {m['g2po/merge_rate']:.0%}, {m['env/errors'] + m['env/reset_errors']} "
              f"env error(s), {m['time/collect_s']:.1f} s", file=sys.stderr)
        for message in m["errors"]:
            print(f"  environment error: {message}", file=sys.stderr)

    collect_run(config, policy, out, policy_spec=args.policy, resume=args.resume,
                on_step=progress)
    print(f"wrote {out}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rollouts", help="collect groups of rollouts into a run directory",
        description="Run groups of N rollouts per task (same initial state per group) and write "
        "the project's run directory (run.json, rollouts/step-*.parquet, metrics.jsonl).",
    )
    p.add_argument("--env", help="environment spec, e.g. textworld:coin_collector-level5 "
                   "(see --list-envs)")
    p.add_argument("--policy", default="random",
                   help="random | scripted | a local model path or 'tiny' (needs the train extra)")
    p.add_argument("--out", help="run directory to write")
    p.add_argument("--tasks", type=int, default=4, help="groups (tasks) per training step")
    p.add_argument("--group-size", type=int, default=8, help="rollouts per group (N)")
    p.add_argument("--train-steps", type=int, default=1, help="training steps to collect")
    p.add_argument("--max-steps", type=int, default=30, help="step budget of one rollout")
    p.add_argument("--history", type=int, default=2, help="history steps shown in the prompt")
    p.add_argument("--seed", type=int, default=0, help="task draw and policy seed")
    p.add_argument("--task-pool", type=int,
                   help="distinct tasks cycled over training steps (default: --tasks)")
    p.add_argument("--success-reward", type=float, default=10.0,
                   help="episode reward of a success (0 otherwise)")
    p.add_argument("--invalid-rate", type=float, default=0.1,
                   help="random/scripted: probability of an invalid response")
    p.add_argument("--follow", type=float, default=0.7,
                   help="scripted: probability of following the walkthrough")
    p.add_argument("--follow-final", type=float,
                   help="scripted: ramp --follow linearly to this value by the last step")
    p.add_argument("--policy-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="extra policy argument (JSON values), e.g. temperature=0.7")
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="extra environment argument, e.g. cache=/tmp/games")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="continue a run in --out, skipping training steps already written")
    mode.add_argument("--overwrite", action="store_true",
                      help="replace the run in --out (only if it holds nothing but a run)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--list-envs", action="store_true", help="list environment families")
    p.set_defaults(func=_rollouts)
