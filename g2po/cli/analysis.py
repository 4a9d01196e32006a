"""``g2po advantages``, ``g2po graph`` and ``g2po bench``: the estimator library from the shell."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from g2po.cli.logs import add_log_options, log_options
from g2po.estimators import compute_advantages, estimator_params, list_estimators
from g2po.graph import state_graph

__all__ = ["add_parser"]

_STEP_COLUMNS = ["group_id", "traj_id", "t", "action", "episode_reward", "is_action_valid"]


def _param_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _parse_params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key.strip()] = _param_value(value.strip())
    return params


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a step table file (csv, jsonl, parquet) or a supported log")
    p.add_argument("--group", help="only this group_id")
    p.add_argument("--train-step", type=int, help="only this training step")
    p.add_argument("--state-key", default="exact",
                   help="exact | normalized | regex:PATTERN | similarity[:THRESHOLD]")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="estimator parameter, e.g. -p gamma=0.9 -p mode=mean_norm")
    add_log_options(p)


def _load(args: argparse.Namespace, *, last_step_by_default: bool = False) -> pd.DataFrame:
    """The selected rows of any supported log; only those are read where the format allows."""
    from loaders import open_log

    log = open_log(args.path, **log_options(args))
    train_step = args.train_step
    if train_step is None and last_step_by_default and log.has_train_steps:
        train_step = log.train_steps()[-1]
    steps = log.load(train_step=train_step, group_id=args.group)
    if steps.empty:
        raise ValueError(f"{args.path}: no step rows match the selection")
    return steps


def _advantages(args: argparse.Namespace) -> int:
    steps = _load(args)
    params = _parse_params(args.param)
    names = args.estimator or ["g2po"]
    table = steps
    shown = [c for c in ["train_step", *_STEP_COLUMNS] if c in steps.columns]
    for name in names:
        own = {k: v for k, v in params.items() if k in estimator_params(name)}
        prefix = f"{name}/" if len(names) > 1 else ""
        table = compute_advantages(table, name, state_key=args.state_key, prefix=prefix, **own)
        added = [c for c in table.columns if c not in steps.columns and c not in shown]
        shown.extend(added)
    unused = set(params) - {k for n in names for k in estimator_params(n)}
    if unused:
        raise TypeError(f"no chosen estimator takes parameter(s): {', '.join(sorted(unused))}")
    table = table[shown]
    if args.out:
        out = Path(args.out)
        if out.suffix == ".csv":
            table.to_csv(out, index=False)
        elif out.suffix in (".parquet", ".pq"):
            table.to_parquet(out, index=False)
        else:
            raise ValueError(f"--out must end in .csv or .parquet, got {out.name!r}")
        print(f"wrote {len(table)} step rows to {out}")
    else:
        with pd.option_context("display.width", 200, "display.max_columns", None,
                               "display.float_format", "{:.4f}".format):
            print(table.to_string(index=False, max_rows=args.max_rows))
    return 0


def _graph(args: argparse.Namespace) -> int:
    steps = _load(args, last_step_by_default=True)
    groups = steps["group_id"].unique()
    if len(groups) != 1:
        raise ValueError(
            f"{args.path}: --group is required, the log holds {len(groups)} groups: "
            + ", ".join(map(str, groups[:10])) + (" …" if len(groups) > 10 else "")
        )
    graph = state_graph(steps, state_key=args.state_key, **_parse_params(args.param))
    nodes, edges = graph.nodes.copy(), graph.edges.copy()
    nodes["state_key"] = nodes["state_key"].str.slice(0, args.width)
    nodes = nodes.drop(columns=["label", "canonical_key", "observation"])
    edges["action"] = edges["action"].str.slice(0, args.width)
    n_states = graph.n_states
    merged = 1.0 - n_states / max(len(graph.steps), 1)
    print(f"group {groups[0]}: {len(graph.steps)} steps, "
          f"{graph.steps['traj_id'].nunique()} trajectories, {n_states} state nodes "
          f"(merge rate {merged:.1%}), {len(edges)} edges")
    with pd.option_context("display.width", 200, "display.max_columns", None,
                           "display.float_format", "{:.4f}".format):
        print("\nnodes")
        print(nodes.to_string())
        print("\nedges")
        print(edges.to_string(index=False))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from g2po.bench import run_benchmark

    run_benchmark(sizes=args.rows, repeats=args.repeats)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advantages", help="per-step advantages of one or more estimators")
    _add_common(p)
    p.add_argument("--estimator", "-e", action="append", choices=list_estimators(),
                   help="estimator (repeat to compare); default g2po")
    p.add_argument("--out", help="write the table to FILE.csv or FILE.parquet")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed to the terminal")
    p.set_defaults(func=_advantages)

    p = sub.add_parser("graph", help="node and edge summary of one group's state graph")
    _add_common(p)
    p.add_argument("--width", type=int, default=40, help="characters of text shown per cell")
    p.set_defaults(func=_graph)

    p = sub.add_parser("bench", help="time G2PO end to end on synthetic groups")
    p.add_argument("--rows", type=int, nargs="+", default=[30_000, 1_000_000])
    p.add_argument("--repeats", type=int, default=5)
    p.set_defaults(func=_bench)
