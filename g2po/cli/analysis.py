"""``g2po advantages``, ``g2po graph`` and ``g2po bench``: the estimator library from the shell."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from g2po.analysis.state_graph import state_graph
from g2po.cli.logs import add_log_options, log_options
from g2po.estimators import (
    compute_advantages,
    estimator_params,
    list_estimators,
    shared_params,
)
from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders.tables import write_csv

__all__ = ["add_parser", "parse_params", "params_and_rule", "terminal_table"]

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


def params_and_rule(values: dict, rule: OutcomeRule, state_key: str, *,
                    rule_keys: bool = True) -> tuple[G2POParams, OutcomeRule]:
    """The G2PO parameters (``-p`` values for γ, w, mode, penalty and ``--state-key``) and the
    log's outcome ``rule``, with the ``-p`` values that set the rule's success reward,
    threshold or terminal where ``rule_keys`` allows (else they are an error: the command has
    flags for them)."""
    own = {k: v for k, v in values.items() if k in rule.estimator_kwargs()}
    if own and not rule_keys:
        raise ValueError(f"-p takes {', '.join(n for n in G2POParams.names() if n != 'state_key')}"
                         " (the outcome rule has its own flags: --success-reward, --success-min,"
                         f" --truncate-at); got {', '.join(sorted(own))}")
    rest = {k: v for k, v in values.items() if k not in own}
    if "state_key" in rest:
        raise ValueError("-p state_key: use --state-key")
    params = G2POParams.from_values({**rest, "state_key": state_key}, where="-p: ")
    return params, replace(rule, **own) if own else rule


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a step table file (csv, jsonl, parquet) or a supported log")
    p.add_argument("--group", help="only this group_id")
    p.add_argument("--train-step", type=int, help="only this training step")
    p.add_argument("--state-key", default="exact",
                   help="exact | normalized | regex:PATTERN | similarity[:THRESHOLD]")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="estimator parameter, e.g. -p gamma=0.9 -p mode=mean_norm")
    add_log_options(p)


#: How ``g2po advantages`` / ``graph`` name the format they read a log as.
def _load(args: argparse.Namespace, *, last_step_by_default: bool = False
          ) -> tuple[OutcomeRule, pd.DataFrame]:
    """The log's outcome rule (:meth:`loaders.Log.rule`, with ``--success-reward`` …) and the
    selected rows of any supported log; only those are read where the format allows. Says on
    stderr what it read (the format, rows and training steps) and the loader's notes (a
    missing run.json, files it did not read, defaults it assumed)."""
    from loaders import open_log
    from loaders.formats import format_words
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
    return log.rule(), steps


def _estimator_params(name: str, rule: OutcomeRule, params: dict) -> dict:
    """What estimator ``name`` gets: the log's outcome rule where it takes one (success reward,
    threshold, terminal), then the ``-p`` parameters it takes, which win."""
    return {**shared_params(name, rule.estimator_kwargs()),
            **{k: v for k, v in params.items() if k in estimator_params(name)}}


def _advantages(args: argparse.Namespace) -> int:
    rule, steps = _load(args)
    params = parse_params(args.param)
    names = args.estimator or ["g2po"]
    table = steps
    shown = [c for c in ["train_step", *_STEP_COLUMNS] if c in steps.columns]
    for name in names:
        own = _estimator_params(name, rule, params)
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
            write_csv(table, out)
        elif out.suffix in (".parquet", ".pq"):
            table.to_parquet(out, index=False)
        else:
            raise ValueError(f"--out must end in .csv or .parquet, got {out.name!r}")
        print(f"wrote {len(table)} step rows to {out}")
    else:
        print(terminal_table(table, max_rows=args.max_rows, full=args.full))
    return 0


def terminal_table(table: pd.DataFrame, *, max_rows: int | None = None, full: bool = False,
                   width: int | None = None, stretch: str | None = None) -> str:
    """The table as text for a terminal: floats to 4 places, line breaks and tabs inside text
    shown as spaces. Unless ``full``, it fits ``width`` (default: the terminal's width, none
    for a pipe): text columns are cut (with "…") to share what the numbers leave, and columns
    that still do not fit continue below, as pandas wraps them. A ``stretch`` column (the
    last, a sentence) instead takes all the others leave, left-aligned, the others kept
    whole while it has room for a few words."""
    hidden = 0
    if max_rows is not None and len(table) > max_rows:
        half = max(max_rows // 2, 1)
        hidden = len(table) - max_rows
        table = pd.concat([table.head(half), table.tail(max(max_rows - half, 1))])
    text_cols = [c for c in table.columns
                 if table[c].dtype == object or pd.api.types.is_string_dtype(table[c].dtype)]
    width = None if full else width or _terminal_width()
    if stretch is not None and stretch in table.columns:
        table = table.assign(**{c: _cut_column(table[c], None) for c in text_cols})
        rest = table.drop(columns=stretch)
        used = max(map(len, _lines(rest))) if len(rest.columns) else 0
        room = None if not width else width - used - 1
        if room is None or room >= max(12, len(stretch)):
            for _ in range(2):  # once more by what pandas' spacing added
                cut = _cut_column(table[stretch], room)
                pad = max(cut.map(len).max() if len(cut) else 0, len(stretch))
                lines = [line.rstrip() for line in _lines(table.assign(
                    **{stretch: cut.map(lambda v, pad=pad: v.ljust(pad))}).rename(
                    columns={stretch: str(stretch).ljust(pad)}))]  # left-aligned, header too
                over = max(map(len, lines)) - width if width else 0
                if over <= 0:
                    break
                room -= over
            if hidden:
                lines.insert(1 + max(max_rows // 2, 1),
                             f"… {hidden:,} rows not shown (--max-rows) …")
            return "\n".join(lines)
    if width and text_cols:
        with pd.option_context("display.float_format", "{:.4f}".format):
            numbers = table.drop(columns=text_cols).to_string(index=False).split("\n")[0]
        share = max((width - len(numbers) - 2 * len(text_cols)) // len(text_cols), 12)
        table = table.assign(**{c: _cut_column(table[c], max(share, len(str(c))))
                                for c in text_cols})
    elif text_cols:
        table = table.assign(**{c: _cut_column(table[c], None) for c in text_cols})
    lines = _lines(table, width)
    if hidden:
        lines.insert(1 + max(max_rows // 2, 1), f"… {hidden:,} rows not shown (--max-rows) …")
    return "\n".join(lines)


def _lines(table: pd.DataFrame, width: int | None = None) -> list[str]:
    """pandas' text of the table, floats to 4 places, wrapped at ``width``."""
    with pd.option_context("display.width", None, "display.max_columns", None,
                           "display.max_colwidth", None, "display.float_format",
                           "{:.4f}".format):
        return table.to_string(index=False, line_width=width).split("\n")


def _terminal_width() -> int | None:
    """The terminal's width when printing to one (or when ``COLUMNS`` says it); None when the
    output goes to a pipe or file, which gets whole lines."""
    if os.environ.get("COLUMNS") or sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    return None


def _cut_column(column: pd.Series, width: int | None) -> pd.Series:
    return column.map(lambda value: _cut(value, width))


# Control characters (terminal escape sequences among them) from logs are shown, not obeyed.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}


def _cut(value, width: int | None):
    """One line of text of at most ``width`` characters (any length when None), with control
    characters from the log shown as ``\\x1b`` rather than sent to the terminal."""
    if not isinstance(value, str):
        return value
    value = " ".join(value.split()).translate(_CONTROLS)
    return value if width is None or len(value) <= width else value[: width - 1] + "…"


def _graph(args: argparse.Namespace) -> int:
    rule, steps = _load(args, last_step_by_default=True)
    groups = steps["group_id"].unique()
    if len(groups) != 1:
        raise ValueError(
            f"{args.path}: --group is required, the log holds {len(groups)} groups: "
            + ", ".join(map(str, groups[:10])) + (" …" if len(groups) > 10 else "")
        )
    params, rule = params_and_rule(parse_params(args.param), rule, args.state_key)
    graph = state_graph(steps, rule=rule, params=params)
    nodes, edges = graph.nodes.copy(), graph.edges.copy()
    nodes["state_key"] = nodes["state_key"].str.slice(0, args.width)
    nodes = nodes.drop(columns=["label", "canonical_key", "observation"])
    edges["action"] = edges["action"].str.slice(0, args.width)
    n_states = graph.n_states
    merged = merge_rate(n_states, len(graph.steps))
    print(f"group {groups[0]}: {len(graph.steps)} steps, "
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

    run_benchmark(sizes=args.rows, repeats=args.repeats)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advantages", help="per-step advantages of one or more estimators")
    _add_common(p)
    p.add_argument("--estimator", "-e", action="append", choices=list_estimators(),
                   help="estimator (repeat to compare); default g2po")
    p.add_argument("--out", help="write the table to FILE.csv or FILE.parquet")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed to the terminal")
    p.add_argument("--full", action="store_true",
                   help="print text columns whole (default on a terminal: cut to fit its "
                        "width, COLUMNS or the terminal's)")
    p.set_defaults(func=_advantages)

    p = sub.add_parser("graph", help="node and edge summary of one group's state graph")
    _add_common(p)
    p.add_argument("--width", type=int, default=40, help="characters of text shown per cell")
    p.set_defaults(func=_graph)

    p = sub.add_parser("bench", help="time G2PO end to end on synthetic groups")
    p.add_argument("--rows", type=int, nargs="+", default=[30_000, 1_000_000])
    p.add_argument("--repeats", type=int, default=5)
    p.set_defaults(func=_bench)
