"""``g2po whatif``: what a second state key would change. On one group (``--group``): the
steps whose advantage changes sign or by more than ``--min-change``, and why (the nodes that
merged or split); over a log: one row per group, the groups that change most first
(:mod:`g2po.analysis.whatif`, the numbers of the app's What-if merging page)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from g2po.cli.logs import add_log_options, log_options
from g2po.cli.url import add_url_option

if TYPE_CHECKING:
    from g2po.analysis.whatif import WhatIf

__all__ = ["add_parser"]

#: What the text output shows of each changed step (the CSV and JSON have every column).
_STEP_SHOWN = ["traj_id", "t", "action", "adv_before", "adv_after", "delta", "sign_flip",
               "why"]


def _whatif(args: argparse.Namespace) -> int:
    from g2po.cli.analysis import params_and_rule, parse_params
    from loaders.opener import open_log

    log = open_log(args.path, **log_options(args))
    params, rule = params_and_rule(parse_params(args.param), log.rule(), args.against,
                                   base=log.params(),
                                   rule_keys=False)
    if args.group is not None:
        return _one_group(args, log, params, rule)
    return _run_table(args, log, params, rule)


def _one_group(args: argparse.Namespace, log, params, rule) -> int:
    import pandas as pd

    from g2po.analysis.whatif import what_if
    from g2po.cli.text import json_value, write_records

    step = args.step
    if step is None and log.has_train_steps:
        step = log.train_steps()[-1]
    steps = log.load(train_step=step, group_id=args.group)
    result = what_if(steps, args.key, rule=rule, params=params, min_change=args.min_change)
    changed = result.changed
    url = _urls(args, log, pd.DataFrame({"train_step": [step], "group_id": [args.group]}),
                params, rule).get("url")
    if args.output == "csv":
        write_records(changed if url is None else changed.assign(url=url.iloc[0]), "csv")
    elif args.output == "json":
        print(json.dumps({"summary": result.summary(), "against": result.label_before,
                          "key": result.label_after, "min_change": result.min_change,
                          "steps": changed.to_dict(orient="records"),
                          "nodes": result.nodes.to_dict(orient="records"),
                          **({} if url is None else {"url": url.iloc[0]})},
                         indent=1, ensure_ascii=False, default=json_value))
    else:
        _print_group(args, result, step)
        if url is not None:
            print(f"\nthe view in the app: {url.iloc[0]}")
    return 0


def _urls(args: argparse.Namespace, log, table, params, rule):
    """``table`` with each group's view on the app's What-if page (``--url``: the second key
    and the threshold too; the first key is the sidebar's)."""
    from g2po.cli.url import with_urls

    return with_urls(args, log, table, "whatif", params, rule,
                     {"wkey": args.key, "wmin": args.min_change})


def _said(result: WhatIf, where: str) -> str:
    s = result.summary()
    return (f"{where} · {result.label_after!r} against {result.label_before!r}: "
            f"{s['changed']} of {s['steps']} step(s) change by more than "
            f"{result.min_change:g} or flip sign ({s['sign_flips']} sign flip(s), largest "
            f"|ΔA| {s['max_abs_delta']:.3f}) · state nodes {s['nodes_before']} → "
            f"{s['nodes_after']}: {s['merged']} merged, {s['split']} split")


def _print_group(args: argparse.Namespace, result: WhatIf, step: int | None) -> None:
    import textwrap

    from g2po.analysis.labels import lead_with_difference
    from g2po.analysis.whatif import node_changes_text
    from g2po.cli.text import _terminal_width, terminal_table

    width = _terminal_width()
    where = f"group {args.group}" + (f" at training step {step}" if step is not None else "")
    said = _said(result, where)
    print(textwrap.fill(said, width, break_on_hyphens=False) if width else said)
    if result.changed.empty:
        return
    shown = result.changed[_STEP_SHOWN]
    short, prefix = lead_with_difference(shown["traj_id"].astype(str).tolist(), limit=14)
    print(f"\nthe changed steps, sign flips first (trajectory ids after {prefix!r}):" if prefix
          else "\nthe changed steps, sign flips first:")
    print(terminal_table(shown.assign(traj_id=short), max_rows=args.max_rows, stretch="why"))
    if len(result.nodes):
        print()
        print("nodes that merged or split (node (its value V) label):")
        print(terminal_table(node_changes_text(result.nodes), max_rows=args.max_rows,
                             stretch="after"))


def _run_table(args: argparse.Namespace, log, params, rule) -> int:
    from g2po.analysis.labels import lead_with_difference
    from g2po.analysis.whatif import sort_whatif, whatif_log
    from g2po.cli.text import progress_bar, terminal_table, write_records
    from g2po.cli.url import print_urls

    steps = None if args.step is None else [args.step]
    update, close = progress_bar(args.output == "text" or args.progress, desc="whatif")
    try:
        table = whatif_log(log, args.key, steps, rule=rule, params=params,
                           min_change=args.min_change, progress=update)
    finally:
        close()
    table = sort_whatif(table, args.sort, False if args.ascending else None)
    n_groups, changed = len(table), int((table["changed"] > 0).sum())
    flips = int(table["sign_flips"].sum())
    if args.top is not None:
        table = table.head(args.top)
    table = _urls(args, log, table, params, rule)
    if not write_records(table, args.output):
        short, prefix = lead_with_difference(table["group_id"].astype(str).tolist(), limit=20)
        view = table.assign(group_id=short).drop(columns="url", errors="ignore")
        if (table["task"].astype(str) == table["group_id"].astype(str)).all():
            view = view.drop(columns="task")
        print(f"{args.key!r} against {params.state_key!r} (min change {args.min_change:g}): "
              f"{changed:,} of {n_groups:,} group(s) change, {flips:,} sign flip(s) · "
              f"outcome rule: {rule.describe()}"
              + (f" · {len(table):,} shown" if len(table) < n_groups else "")
              + (f" · group ids after {prefix!r}" if prefix else "")
              + " · one group: --group G [--step N]")
        print(terminal_table(view, max_rows=args.max_rows))
        print_urls(table)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from g2po.cli.logs import STATE_KEY_DEFAULT, STATE_KEY_HELP

    p = sub.add_parser(
        "whatif", help="what another state key would change: the steps whose advantage "
                       "moves or flips sign, and the nodes that merge or split",
        description="Recompute G2PO under a second state key (--key) against the first "
                    "(--against, default the run's own key). With --group: that group's "
                    "steps whose advantage changes sign or by more than --min-change, why "
                    "(their state or next state merged or split), and the nodes that merged "
                    "or split, with their values before and after. Without: one row per group "
                    "of the log (or of --step N), the groups with the most sign flips first.")
    p.add_argument("path", help="a run directory, verl dump, table (csv/jsonl/parquet) or "
                                "batch dump")
    p.add_argument("--key", required=True, metavar="KEY",
                   help=f"the state key to try: {STATE_KEY_HELP} (alfworld: G2PO's ALFWorld "
                        "anchor, for logs that record admissible actions)")
    p.add_argument("--against", default=None, metavar="KEY",
                   help="the state key it is compared with" + STATE_KEY_DEFAULT)
    p.add_argument("--step", type=int, metavar="N", help="only training step N (with "
                                                         "--group: default the last)")
    p.add_argument("--group", metavar="G", help="one group: its changed steps and nodes")
    p.add_argument("--min-change", type=float, default=0.1, metavar="X",
                   help="a step changes when its advantage moves by more than X, or flips "
                        "sign (default 0.1; advantages are normalised)")
    p.add_argument("--format", dest="output", choices=["text", "csv", "json"],
                   default="text", help="output: text for the terminal (default), CSV or JSON")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="G2PO parameter: gamma, w, mode, penalty (e.g. -p gamma=0.9)")
    p.add_argument("--sort", metavar="COL", help="the log's table: sort by this column "
                                                 "(default: sign flips, changed steps, |ΔA|)")
    p.add_argument("--ascending", action="store_true", help="sort --sort's column smallest "
                                                            "first")
    p.add_argument("--top", type=int, metavar="K", help="the log's table: only the first K "
                                                        "rows")
    p.add_argument("--progress", action="store_true",
                   help="show the progress bar with --format csv/json too (on a terminal)")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed as a table")
    add_url_option(p, per_row=True)
    add_log_options(p, format_option="--log-format")
    p.set_defaults(func=_whatif)
