"""``g2po advantages``, ``g2po graph`` and ``g2po bench``: the estimator library from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from g2po.cli.logs import STATE_KEY_DEFAULT, STATE_KEY_HELP, add_log_options, log_options
from g2po.cli.sweep import add_ray_options, sweep_runs

if TYPE_CHECKING:
    import pandas as pd

    from g2po.estimators.spec import EstimatorSpec
    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams
    from loaders import Log

__all__ = ["add_parser", "estimator_name", "parse_params", "params_and_rule", "advantage_table",
           "check_params"]

_STEP_COLUMNS = ["group_id", "traj_id", "t", "action", "episode_reward", "is_action_valid"]


def _param_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key.strip()] = _param_value(value.strip())
    return params


def params_and_rule(values: dict, rule: OutcomeRule, state_key: str | None, *,
                    base: G2POParams | None = None,
                    rule_keys: bool = True) -> tuple[G2POParams, OutcomeRule]:
    """The G2PO parameters and the log's outcome ``rule``: ``base`` (the run's recorded
    parameters, :meth:`loaders.Log.params`; default: the defaults) with the ``-p`` values for
    γ, w, mode, penalty and ``--state-key`` (None: the base's) set, and the ``-p`` values that
    set the rule's success reward, threshold or terminal where ``rule_keys`` allows (else they
    are an error: the command has flags for them)."""
    from g2po.params import G2POParams

    base = base or G2POParams()
    own = {k: v for k, v in values.items() if k in rule.estimator_kwargs()}
    if own and not rule_keys:
        raise ValueError(f"-p takes {', '.join(n for n in G2POParams.names() if n != 'state_key')}"
                         " (the outcome rule has its own flags: --success-reward, --success-min,"
                         f" --truncate-at); got {', '.join(sorted(own))}")
    rest = {k: v for k, v in values.items() if k not in own}
    if "state_key" in rest:
        raise ValueError("-p state_key: use --state-key")
    params = G2POParams.from_values({**rest, "state_key": state_key or base.state_key}, base,
                                    where="-p: ")
    return params, replace(rule, **own) if own else rule


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a step table file (csv, jsonl, parquet) or a supported log")
    p.add_argument("--group", help="only this group_id")
    p.add_argument("--train-step", type=int, help="only this training step")
    p.add_argument("--state-key", default=None, help=STATE_KEY_HELP + STATE_KEY_DEFAULT)
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="estimator parameter, e.g. -p gamma=0.9 -p mode=mean_norm")
    add_log_options(p)


#: How ``g2po advantages`` / ``graph`` name the format they read a log as.
def _load(args: argparse.Namespace, *, last_step_by_default: bool = False
          ) -> tuple[Log, pd.DataFrame]:
    """The opened log (its outcome rule: :meth:`loaders.Log.rule`, with ``--success-reward``
    …) and the selected rows of any supported log; only those are read where the format
    allows. Says on stderr what it read (the format, rows and training steps) and the
    loader's notes (a missing run.json, files it did not read, defaults it assumed)."""
    from loaders.formats import format_words
    from loaders.opener import open_log
    from loaders.report import report_of

    log = open_log(args.path, **log_options(args))
    train_step = args.train_step
    if train_step is None and last_step_by_default and log.has_train_steps:
        train_step = log.train_steps()[-1]
    steps = log.load(train_step=train_step, group_id=args.group)
    if steps.empty:
        raise ValueError(f"{args.path}: no step rows match the selection")
    n_steps = steps["train_step"].nunique() if "train_step" in steps.columns else 0
    print(f"g2po {args.command}: read {args.path} as {format_words(log.format)}"
          f": {len(steps):,} step rows"
          + (f" of {n_steps} training step(s)" if n_steps else ""), file=sys.stderr)
    for note in report_of(steps).notes:
        print(f"g2po {args.command}: note: {note}", file=sys.stderr)
    return log, steps


def _one_group(args: argparse.Namespace, steps: pd.DataFrame) -> str:
    """The one group of ``steps``; a ValueError naming some when there are several."""
    groups = steps["group_id"].unique()
    if len(groups) != 1:
        raise ValueError(
            f"{args.path}: --group is required, the log holds {len(groups)} groups: "
            + ", ".join(map(str, groups[:10])) + (" …" if len(groups) > 10 else "")
        )
    return str(groups[0])


def _estimator_params(name: str, rule: OutcomeRule, params: dict,
                      base: G2POParams) -> dict:
    """What estimator ``name`` gets: what the run's recorded parameters ``base`` and its
    outcome rule give it with G2PO's meaning (:meth:`G2POParams.for_estimator`), then the
    ``-p`` parameters it takes, which win."""
    from g2po.estimators import estimator_params

    return {**base.for_estimator(name, rule),
            **{k: v for k, v in params.items() if k in estimator_params(name)}}


def advantage_table(steps: pd.DataFrame, rule: OutcomeRule, params: dict,
                    names: list[str], state_key: str | None,
                    base: G2POParams | None = None) -> pd.DataFrame:
    """What ``g2po advantages`` writes for ``steps``: the training step and step columns, then
    each estimator's columns (prefixed ``name/`` when there are several), under the log's
    outcome ``rule``, the run's recorded parameters ``base`` (default: the defaults) and the
    ``-p`` ``params``, which win; ``state_key`` None is the base's. A parameter no chosen
    estimator takes is a TypeError. One training step at a time gives the same rows (a group
    never spans two)."""
    from g2po.estimators import compute_advantages
    from g2po.params import G2POParams

    base = base or G2POParams()
    state_key = state_key or base.state_key
    table = steps
    shown = [c for c in ["train_step", *_STEP_COLUMNS] if c in steps.columns]
    for name in names:
        own = _estimator_params(name, rule, params, base)
        prefix = f"{name}/" if len(names) > 1 else ""
        table = compute_advantages(table, name, state_key=state_key, prefix=prefix, **own)
        added = [c for c in table.columns if c not in steps.columns and c not in shown]
        shown.extend(added)
    check_params(params, names)
    return table[shown]


def check_params(params: dict, names: list[str]) -> None:
    """A TypeError naming the ``-p`` parameters none of the estimators ``names`` takes."""
    from g2po.estimators import estimator_params

    unused = set(params) - {k for n in names for k in estimator_params(n)}
    if unused:
        raise TypeError(f"no chosen estimator takes parameter(s): {', '.join(sorted(unused))}")


def _advantages(args: argparse.Namespace) -> int:
    from g2po.cli.text import terminal_table
    from loaders.tables import write_csv

    if args.explain:
        return _explain(args)
    found = sweep_runs(args)
    if args.ray is not None or found is not None:
        return _advantages_sweep(args, found)
    log, steps = _load(args)
    table = advantage_table(steps, log.rule(), parse_params(args.param),
                            args.estimator or ["g2po"], args.state_key, log.params())
    if args.out:
        out = Path(args.out)
        if out.suffix == ".csv":
            write_csv(table, out)
        elif out.suffix in (".parquet", ".pq"):
            table.to_parquet(out, index=False)
        else:
            raise ValueError(f"--out must end in .csv or .parquet, got {out.name!r}")
        print(f"wrote {len(table)} step rows to {out}")
    else:
        print(terminal_table(table, max_rows=args.max_rows, full=args.full))
    return 0


def _explain(args: argparse.Namespace) -> int:
    """``g2po advantages --explain``: one group's computed view in words
    (:func:`g2po.analysis.group_view.explain_group`): its critical transitions, its credit
    alarms (those that judge a group against the run from the run's groups table, as ``g2po
    triage`` computes it: cached) and, where the log recorded one, the trainer's advantage
    against the recomputation (audited against what the run's manifest states it trained
    with, as the groups table's check does; else G2PO)."""
    from g2po.analysis.group_view import compute_group, explain_group
    from g2po.analysis.recorded import stated_credit
    from g2po.analysis.triage import triage_log
    from g2po.cli.text import terminal_line

    if args.estimator not in (None, ["g2po"]) or args.out or args.ray is not None:
        raise ValueError("--explain prints G2PO's view of one group: without -e (other than "
                         "g2po), --out or --ray")
    log, steps = _load(args, last_step_by_default=True)
    group = _one_group(args, steps)
    params, rule = params_and_rule(parse_params(args.param), log.rule(), args.state_key,
                                   base=log.params())
    table = triage_log(log, rule=rule, params=params)  # the run's, as g2po triage judges it
    row = table[(table["group_id"].astype(str) == group) &
                (table["train_step"] == (int(steps["train_step"].iloc[0])
                                         if "train_step" in steps.columns else 0))]
    view = compute_group(steps, rule=rule, params=params, credit=stated_credit(log.manifest),
                         row=row.iloc[0].to_dict() if len(row) else None)
    step = f" · training step {int(steps['train_step'].iloc[0])}" \
        if "train_step" in steps.columns else ""
    print(terminal_line(f"group {group}{step} · state key {params.state_key} · γ "
                        f"{params.gamma:g}, w {params.w:g}, penalty {params.penalty:g}, "
                        f"{params.mode}"))
    for line in explain_group(view):
        print(("  " if line.startswith("  ") else "") + terminal_line(line))
    return 0


def _advantages_sweep(args: argparse.Namespace,
                      found: tuple[list, list[str]] | None) -> int:
    """``g2po advantages`` of a folder of runs (or of any log with ``--ray``): one Parquet
    file per run under ``--out DIR`` (its rows name their ``run``), computed file by file on
    Ray or here (:mod:`g2po.cli.sweep`). ``found``: :func:`sweep_runs`' answer, found once."""
    from functools import partial

    from g2po.cli.sweep import (
        AdvantageSpec,
        Run,
        advantages_runs,
        advantages_unit,
        local_units,
        plan_units,
        say,
    )
    from g2po.cli.text import progress_bar

    if args.group is not None or args.train_step is not None:
        raise ValueError("--group / --train-step select from one log; a sweep or --ray "
                         "computes every group")
    if not args.out or Path(args.out).suffix in (".csv", ".parquet", ".pq"):
        raise ValueError("a sweep or --ray writes one Parquet file per run: give --out DIR "
                         "(a folder)")
    runs, notes = found if found is not None else ([Run(Path(args.path).name,
                                                         Path(args.path))], [])
    for note in notes:
        say(args.command, f"note: {note}")
    spec = AdvantageSpec(tuple(args.estimator or ["g2po"]), parse_params(args.param),
                         args.state_key)
    check_params(spec.params, list(spec.estimators))  # said before any work starts
    options = log_options(args)
    units = plan_units(runs, options)
    compute = partial(advantages_unit, options=options, spec=spec, table=advantage_table)
    update, close = progress_bar(True, "files", "advantages")
    try:
        if args.ray is not None:
            from g2po.cli.ray_sweep import ray_units

            results = ray_units(units, compute, address=args.ray or None,
                                workers=args.ray_workers, progress=update)
        else:
            results = local_units(units, compute, progress=update)
        written = advantages_runs(results, Path(args.out))
    finally:
        close()
    for run, path, rows in written:
        print(f"wrote {rows} step rows of {run} to {path}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    import pandas as pd

    from g2po.analysis.state_graph import state_graph
    from g2po.index import merge_rate

    log, steps = _load(args, last_step_by_default=True)
    group = _one_group(args, steps)
    params, rule = params_and_rule(parse_params(args.param), log.rule(), args.state_key,
                                   base=log.params())
    graph = state_graph(steps, rule=rule, params=params)
    nodes, edges = graph.nodes.copy(), graph.edges.copy()
    nodes["state_key"] = nodes["state_key"].str.slice(0, args.width)
    nodes = nodes.drop(columns=["label", "canonical_key", "observation"])
    edges["action"] = edges["action"].str.slice(0, args.width)
    n_states = graph.n_states
    merged = merge_rate(n_states, len(graph.steps))
    print(f"group {group}: {len(graph.steps)} steps, "
          f"{graph.steps['traj_id'].nunique()} trajectories, {n_states} state nodes "
          f"(merge rate {merged:.1%}), {len(edges)} edges")
    print(f"outcome rule: {rule.describe()}")
    with pd.option_context("display.width", 200, "display.max_columns", None,
                           "display.float_format", "{:.4f}".format):
        print("\nnodes")
        print(nodes.to_string())
        print("\nedges")
        print(edges.to_string(index=False))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from g2po.bench import run_benchmark

    run_benchmark(sizes=args.rows, repeats=args.repeats, estimators=args.estimator)
    return 0


def estimator_name(name: str) -> str:
    """``--estimator``'s check: a registered estimator (built-in, or a plugin's registered in
    this process). The registry is imported only here, when a command with ``-e`` runs (it
    imports it anyway): building the parser and ``--help`` need no estimator."""
    from g2po.estimators import list_estimators

    names = list_estimators()
    if name not in names:
        raise argparse.ArgumentTypeError(
            f"unknown estimator {name!r}; registered: {', '.join(names)} (g2po estimators "
            "describes them)")
    return name


def _estimators(args: argparse.Namespace) -> int:
    """``g2po estimators``: every registered estimator, one line each; with names, what each
    declares (its parameters and their meanings, the step columns it reads, its parts, the
    original it equals)."""
    from g2po.estimators import estimator_params, get_spec, list_estimators

    if not args.names:
        names = list_estimators()
        width = max(map(len, names))
        for name in names:
            spec = get_spec(name)
            needs = "".join(f" [needs {c.name}]" for c in spec.columns if c.required)
            print(f"{name:<{width}}  {spec.title or '-'}: {spec.summary or '-'}{needs}")
        return 0
    for i, name in enumerate(args.names):
        print(("\n" if i else "") + "\n".join(_describe(get_spec(name),
                                                          estimator_params(name))))
    return 0


def _describe(spec: EstimatorSpec, defaults: dict) -> list[str]:
    """The lines ``g2po estimators NAME`` prints for one estimator."""
    lines = [f"{spec.name}: {spec.title or '(no title)'}", f"  {spec.summary or '-'}"]
    if spec.original:
        lines.append(f"  original: {spec.original}")
    lines.append("  parameters:" if defaults else "  parameters: none")
    lines += [f"    {k} = {v!r}: {spec.params.get(k, '(undocumented)')}"
              for k, v in defaults.items()]
    for column in spec.columns:
        lines.append(f"  {'needs' if column.required else 'reads, where present,'} the step "
                     f"column {column.name} ({column.dtype}): {column.doc}")
    for part in spec.parts:
        weight = ("weighted per step" if spec.weights is not None else
                  f"× {part.weight if isinstance(part.weight, str) else f'{part.weight:g}'}")
        lines.append(f"  part {part.label} ({part.column}, {weight}): {part.words}")
    return lines


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advantages", help="per-step advantages of one or more estimators")
    _add_common(p)
    p.add_argument("--estimator", "-e", action="append", type=estimator_name,
                   metavar="NAME", help="estimator (repeat to compare); default g2po; "
                                        "`g2po estimators` lists them")
    p.add_argument("--out", help="write the table to FILE.csv or FILE.parquet (a folder of "
                                 "runs or --ray: to DIR, one RUN.parquet per run)")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed to the terminal")
    p.add_argument("--full", action="store_true",
                   help="print text columns whole (default on a terminal: cut to fit its "
                        "width, COLUMNS or the terminal's)")
    p.add_argument("--explain", action="store_true",
                   help="explain one group (--group; default training step: the last) in "
                        "words: its success, critical transitions, credit alarms and, where "
                        "the log recorded one, the trainer's advantage against G2PO's, as the "
                        "group explorer shows them")
    add_ray_options(p)
    p.set_defaults(func=_advantages)

    p = sub.add_parser("graph", help="node and edge summary of one group's state graph")
    _add_common(p)
    p.add_argument("--width", type=int, default=40, help="characters of text shown per cell")
    p.set_defaults(func=_graph)

    p = sub.add_parser("bench", help="time the estimators end to end on synthetic groups")
    p.add_argument("--rows", type=int, nargs="+", default=[30_000, 1_000_000])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--estimator", "-e", action="append", type=estimator_name,
                   metavar="NAME", help="only this estimator (repeat for several); default "
                                        "every registered one")
    p.set_defaults(func=_bench)

    p = sub.add_parser("estimators", help="the registered estimators and what each declares")
    p.add_argument("names", nargs="*", metavar="NAME", type=estimator_name,
                   help="describe these: parameters, step columns, parts, original")
    p.set_defaults(func=_estimators)
