"""``g2po audit``: the advantage a trainer recorded, per step, against the recomputation with
the run's estimator, parameters and outcome rule (:mod:`g2po.analysis.recorded`): one row per
group whose recorded credit differs, worst first, with what differs and the fix; or one row
per step (``--steps``). The groups table's ``recorded_credit`` check runs the same audit
(:func:`g2po.analysis.checks.recorded.audits`) on the same columns, keyed the same way: by
default this is that check's evidence, group by group, as G2PO (or the run's stated estimator)
is judged."""

from __future__ import annotations

import argparse
import sys

from g2po.cli.analysis import estimator_name
from g2po.cli.logs import add_log_options, log_options
from g2po.cli.url import add_url_option

__all__ = ["add_parser"]


def _say(text: str) -> None:
    print(f"g2po audit: {text}", file=sys.stderr)


def _read(log, train_steps: list[int], state_key):
    """The columns of ``train_steps`` the groups table's checks read (the recorded advantage,
    step rewards and the estimators' step columns among them) and the state-key strategy
    needs, one frame, keyed as the groups table keys them
    (:func:`g2po.analysis.group_table.coded`); returns (frame, the strategy left to apply)."""
    import numpy as np
    import pandas as pd

    from g2po.analysis.group_table import coded, read_columns

    parts, applied = [], state_key
    for step, frame in log.columns_of_steps(train_steps, read_columns(state_key)):
        frame, applied = coded(frame.assign(train_step=np.int64(step)), state_key)
        parts.append(frame)
    return (parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)), applied


def _no_advantage(path: str, n_steps: int) -> str:
    from loaders.advantage import ADVANTAGE
    from loaders.mapping import ALIASES

    names = " or ".join(repr(n) for n in (ADVANTAGE, *ALIASES[ADVANTAGE]))
    return (f"{path}: no recorded advantage in {n_steps} training step(s): looked for a column "
            f"{names} (tables, run directories, batch dumps), a key of that name on the "
            "lines of a verl dump (its reward extras; verl's v1 trainer may write none), and "
            "a column named with --map advantage=COLUMN")


def _credit(args: argparse.Namespace, log):
    """(credit to audit against, G2PO parameters, outcome rule, where the estimator comes from):
    what the run's manifest states (:func:`g2po.analysis.recorded.stated_credit`) unless the
    command names another estimator or its own parameters (``-p``, ``--state-key``)."""
    from dataclasses import replace

    from g2po.analysis.recorded import StatedCredit, stated_credit
    from g2po.cli.analysis import params_and_rule, parse_params
    from g2po.params import G2POParams

    values = parse_params(args.param)
    own = {k: v for k, v in values.items() if k not in G2POParams.names()
           and k not in log.rule().estimator_kwargs()}
    params, rule = params_and_rule({k: v for k, v in values.items() if k not in own},
                                   log.rule(), args.state_key, base=log.params(),
                                   rule_keys=False)
    stated = stated_credit(log.manifest)
    if args.estimator is not None and (stated is None or args.estimator != stated.estimator):
        stated, origin = None, "--estimator"
    else:
        origin = "the run's manifest" if stated is not None else "default"
    if stated is not None and not values and args.state_key is None:
        params, kwargs = stated.audit_params(params)  # as the run states it, whole
        return replace(stated, kwargs=kwargs or None, state_key=None, params=None), params, \
            rule, origin
    name = args.estimator or (stated.estimator if stated is not None else "g2po")
    return StatedCredit(name, own or None), params, rule, origin


def _audit(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from g2po.analysis.checks.recorded import audits
    from g2po.cli.url import with_urls
    from loaders.opener import open_log

    log = open_log(args.path, **log_options(args))
    credit, params, rule, origin = _credit(args, log)
    steps = log.train_steps() if args.step is None else [args.step]
    frame, applied = _read(log, steps, params.state_key)
    if "advantage" not in frame.columns or frame["advantage"].isna().all():
        raise ValueError(_no_advantage(args.path, len(steps)))
    found = next(iter(audits(frame, rule=rule, params=replace(params, state_key=applied),
                             credit=credit, fit=not args.no_fit).values()))
    for note in log.report.notes:
        _say(f"note: {note}")
    shown = ", ".join(f"{k}={v}" for k, v in found.params.items())
    _say(f"recomputed with {credit.estimator} ({origin}): {shown}; state key "
         f"{params.state_key}")
    for text in found.run_text():
        _say(f"run: {text}")
    return _show(args, found, lambda table: with_urls(args, log, table, "group", params, rule))


def _show(args: argparse.Namespace, found, urls) -> int:
    from g2po.cli.text import terminal_table, write_records
    from g2po.cli.url import print_urls

    groups = found.groups if args.all else found.findings
    if args.steps:
        keys = groups[[c for c in ("train_step", "group_id") if c in groups.columns]]
        table = found.steps.merge(keys, on=list(keys.columns))
        if not args.all:
            table = table[table["cause"] != ""]
    else:
        table = groups
    if args.top is not None:
        table = table.head(args.top)
    table = urls(table)  # each row's group in the explorer (--url)
    if write_records(table, args.output):
        return 0
    if args.steps:
        print(terminal_table(table.drop(columns="url", errors="ignore"),
                             max_rows=args.max_rows))
        print_urls(table)
    else:
        brief = table[[c for c in ("train_step", "group_id", "severity", "kind", "reason")
                       if c in table.columns]]
        print(f"{len(found.findings):,} of {len(found.groups):,} group(s) with findings"
              + ("" if args.all else " (--all: every group)")
              + " · every column: --format csv")
        if len(brief):
            print(terminal_table(brief, max_rows=args.max_rows, stretch="reason"))
        print_urls(table)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from g2po.cli.logs import STATE_KEY_DEFAULT, STATE_KEY_HELP

    p = sub.add_parser(
        "audit", help="the advantage the trainer recorded against the recomputation: "
                      "groups whose recorded credit differs, worst first",
        description="Recompute the credit of a log that records the advantage each step was "
                    "trained with (a column 'advantage' / 'advantages', a verl dump's extra "
                    "of that name, or --map advantage=COLUMN) with the run's estimator "
                    "(--estimator, default: the run's manifest, else g2po), parameters (-p) "
                    "and outcome rule, and report per group: the difference, steps recorded "
                    "as 0, sign flips, one value broadcast over a trajectory, values of the "
                    "neighbouring row, and which registered estimator and parameters explain "
                    "the recorded values best.")
    p.add_argument("path", help="a run directory, verl dump, table (csv/jsonl/parquet) or "
                                "batch dump")
    p.add_argument("--step", type=int, metavar="N", help="only training step N (default: all)")
    p.add_argument("--estimator", "-e", type=estimator_name, metavar="NAME",
                   help="the estimator the run trained with (default: the run's manifest, "
                        "else g2po, as the Groups table audits it)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="its parameters: gamma, w, mode, penalty, or the estimator's own "
                        "(e.g. -p omega=0.8); default: those the run's manifest states")
    p.add_argument("--state-key", default=None, help=STATE_KEY_HELP + STATE_KEY_DEFAULT)
    p.add_argument("--format", dest="output", choices=["table", "csv", "json"],
                   default="table", help="output: a table for the terminal (default), CSV or "
                                         "JSON records")
    p.add_argument("--steps", action="store_true",
                   help="one row per step instead: recorded beside recomputed, the difference "
                        "and its cause (of the groups with findings, or --all)")
    p.add_argument("--all", action="store_true", help="every group (or step), not only those "
                                                      "with findings")
    p.add_argument("--top", type=int, metavar="K", help="only the first K rows")
    p.add_argument("--no-fit", action="store_true",
                   help="skip the search for the estimator and parameters that explain the "
                        "recorded values")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed as a table")
    add_url_option(p, per_row=True)
    add_log_options(p, format_option="--log-format")
    p.set_defaults(func=_audit)
