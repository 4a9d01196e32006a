"""``g2po triage``: the groups table of a log in a terminal, or as CSV / JSON for pandas and
scripts: one row per group, worst first (by severity, with the reason in words), with the
same numbers as the app's Groups page (:mod:`g2po.analysis.triage`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from g2po.cli.logs import STATE_KEY_DEFAULT, STATE_KEY_HELP, add_log_options, log_options
from g2po.cli.sweep import add_ray_options, sweep_runs
from g2po.cli.url import add_url_option

__all__ = ["add_parser"]


def _say_findings(findings, where: str = "") -> None:
    """The run's findings on stderr, once each: defects as ``run-wide``, progress and
    run-level facts as ``note``."""
    from g2po.cli.sweep import say

    for finding in findings:
        label = "run-wide" if finding.level == "defect" else "note"
        say("triage", f"{where}{label}: {finding.text}")


def _triage(args: argparse.Namespace) -> int:
    from g2po.analysis.alarms import STOCHASTIC_NOTE
    from g2po.analysis.triage import run_findings, triage_log, truncation_hint
    from g2po.cli.analysis import params_and_rule, parse_params
    from g2po.cli.text import progress_bar
    from g2po.cli.url import with_urls
    from loaders.opener import open_log

    found = sweep_runs(args)
    if args.ray is not None or found is not None:
        return _triage_sweep(args, found)
    log = open_log(args.path, **log_options(args))
    params, rule = params_and_rule(parse_params(args.param), log.rule(), args.state_key,
                                   base=log.params(), rule_keys=False)
    steps = None if args.step is None else [args.step]  # an unknown one: the log's error
    update, close = progress_bar(args.output == "table" or args.progress)
    try:
        table = triage_log(log, steps, rule=rule, params=params,
                           cache=not args.no_cache, progress=update,
                           stochastic=args.stochastic, estimator=args.estimator)
    finally:
        close()
    for note in log.report.notes:  # what advantages says: files not read, steps unreadable
        print(f"g2po triage: note: {note}", file=sys.stderr)
    hint = truncation_hint(table, rule)  # what validate and the app warn about
    if hint is not None:
        print(f"g2po triage: truncation? {hint.message()} Add --truncate-at {hint.length} to "
              "count them so.", file=sys.stderr)
    scale = None if (table["success_rate"] > 0).any() else log.reward_scale(rule, steps)
    if scale is not None:
        print(f"g2po triage: reward scale? {scale.message()} Add {scale.flag}.",
              file=sys.stderr)
    _say_findings(run_findings(table, args.estimator))  # about the run: said once
    if args.stochastic:
        print(f"g2po triage: {STOCHASTIC_NOTE}.", file=sys.stderr)
    return _show(args, table, f"{len(table):,} group(s) of "
                              f"{_steps_of(table, log.has_train_steps)} · outcome rule: "
                              f"{rule.describe()}",
                 lambda rows: with_urls(args, log, rows, "group", params, rule))


def _steps_of(table, stepped: bool = True) -> str:
    """The training steps of a table, in words: which one when there is one (none when the
    log has no training steps: all its rows are one step)."""
    from g2po.analysis.triage_show import one_step

    if not stepped:
        return "the log (it has no training steps)"
    step = one_step(table)
    return f"training step {step}" if step is not None else \
        f"{table['train_step'].nunique():,} training steps"


def _show(args: argparse.Namespace, table, said: str, urls) -> int:
    """Print the groups ``table`` as ``args`` ask (filtered, sorted, cut; a terminal table,
    CSV or JSON), the terminal table after the line ``said``; a sweep's ``run`` first.
    ``urls`` gives the rows shown their ``url`` column (``--url``; :func:`with_urls`).

    Groups and tasks are named over the whole ``table`` (:func:`group_names`), so a group
    reads the same whatever ``--top``, the filters, the sort or the terminal's width."""
    import textwrap

    from g2po.analysis.triage_show import (
        brief_view,
        filter_groups,
        group_names,
        one_step,
        sort_groups,
    )
    from g2po.cli.text import _terminal_width, terminal_table, write_records
    from g2po.cli.url import print_urls

    shown = filter_groups(table, alarms=args.alarm or (), task=args.task,
                          estimator=args.estimator)
    shown = sort_groups(shown, args.sort, False if args.ascending else None)
    if args.top is not None:
        shown = shown.head(args.top)
    shown = urls(shown)
    if write_records(shown, args.output):
        return 0
    width = _terminal_width()
    said += f" · {len(shown):,} shown" if len(shown) != len(table) else ""
    step = one_step(shown)
    if step is not None and one_step(table) is None:  # the rows' one step, said once
        said += f", all of training step {step}"
    if args.all_columns:
        print(textwrap.fill(said, width, break_on_hyphens=False) if width else said)
        print(terminal_table(shown.drop(columns="url", errors="ignore"),
                             max_rows=args.max_rows))
        print_urls(shown)
        return 0
    view, prefix = brief_view(shown, group_names(table))
    if "run" in shown.columns:
        view.insert(0, "run", shown["run"].to_numpy())
    said += (f" · group ids after {prefix!r}" if prefix else "") + \
        " · every column: --all-columns, --format csv"
    print(textwrap.fill(said, width, break_on_hyphens=False) if width else said)
    print(terminal_table(view, max_rows=args.max_rows, stretch="reason"))
    print_urls(shown)
    return 0


def _sweep_urls(args: argparse.Namespace, runs: dict, rules: dict, params: dict,
                named: bool):
    """The sweep's ``urls`` for :func:`_show`: each run's rows with their views, the run's
    own path, outcome rule and parameters (``rules``, ``params``: by run; :func:`with_urls`
    once per run: its log is opened here)."""
    import pandas as pd

    from g2po.cli.sweep import _open
    from g2po.cli.url import with_urls

    def urls(rows):
        if getattr(args, "url", None) is None or rows.empty:
            return rows
        parts = []
        for run, part in (rows.groupby("run", sort=False) if named else [(None, rows)]):
            path = runs[run] if named else Path(args.path)
            one = argparse.Namespace(**{**vars(args), "path": str(path)})
            log = _open(path, log_options(args))
            key = run if named else next(iter(rules))
            parts.append(with_urls(one, log, part, "group", params[key], rules[key]))
        return pd.concat(parts).loc[rows.index]

    return urls


def _triage_sweep(args: argparse.Namespace, found: tuple[list, list[str]] | None) -> int:
    """``g2po triage`` of a folder of runs (each record names its ``run``), or of any log with
    ``--ray``: computed file by file on Ray, or run by run here (:mod:`g2po.cli.sweep`).
    ``found``: :func:`sweep_runs`' answer, found once."""
    from functools import partial

    from g2po.analysis.alarms import STOCHASTIC_NOTE
    from g2po.analysis.triage import run_findings, truncation_hint
    from g2po.cli.analysis import params_and_rule, parse_params
    from g2po.cli.sweep import Run, plan_units, say, triage_runs, triage_unit
    from g2po.cli.text import progress_bar
    from g2po.outcomes import OutcomeRule

    if args.step is not None:
        raise ValueError("--step selects a training step of one log; a sweep or --ray "
                         "triages every step")
    runs, notes = found if found is not None else ([Run(Path(args.path).name,
                                                         Path(args.path))], [])
    for note in notes:
        say("triage", f"note: {note}")
    options = log_options(args)
    values = parse_params(args.param)
    # each run under its own recorded parameters, with what -p and --state-key set on them
    units = [replace(u, params=params_and_rule(values, OutcomeRule(), args.state_key,
                                               base=u.params, rule_keys=False)[0])
             for u in plan_units(runs, options)]
    rules = {u.run: u.rule for u in units}
    if args.ray is not None:
        from g2po.cli.ray_sweep import ray_units
        from g2po.cli.sweep import join_triage

        update, close = progress_bar(args.output == "table" or args.progress, "files")
        compute = partial(triage_unit, options=options, stochastic=args.stochastic,
                          estimator=args.estimator)
        try:
            table = join_triage((t for _, t in ray_units(
                units, compute, address=args.ray or None, workers=args.ray_workers,
                progress=update)), args.estimator)
        finally:
            close()
    else:
        update, close = progress_bar(args.output == "table" or args.progress, "runs")
        try:
            table = triage_runs(units, options, stochastic=args.stochastic,
                                estimator=args.estimator, cache=not args.no_cache,
                                progress=update)
        finally:
            close()
    named = found is not None
    if not named:
        table = table.drop(columns="run")
    for run, rows in (table.groupby("run", sort=False) if named else [(None, table)]):
        where = f"{run}: " if named else ""
        hint = truncation_hint(rows, rules[run if named else runs[0].name])
        if hint is not None:
            say("triage", f"{where}truncation? {hint.message()} Add --truncate-at "
                          f"{hint.length} to count them so.")
        _say_findings(run_findings(rows, args.estimator), where)
    if args.stochastic:
        say("triage", f"{STOCHASTIC_NOTE}.")
    described = {r.describe() for r in rules.values()}
    rule_text = described.pop() if len(described) == 1 else "each run's own"
    n_steps = len(table[["run", "train_step"]].drop_duplicates()) if named else \
        table["train_step"].nunique()
    steps = _steps_of(table) if n_steps == 1 else f"{n_steps:,} training steps"
    urls = _sweep_urls(args, {r.name: r.path for r in runs}, rules,
                       {u.run: u.params for u in units}, named)
    return _show(args, table, f"{len(table):,} group(s) of {steps}"
                              + (f" of {len(runs):,} run(s)" if named else "")
                              + f" · outcome rule: {rule_text}", urls)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "triage", help="the groups table: one row per group, worst first (no training "
                       "signal, alarms), to find the groups that need a look",
        description="One row per group of a log (every training step, or --step N): task, "
                    "rollouts, success rate, reward mean and spread, share of steps with a ~0 "
                    "G2PO advantage, mean |A| and |A^EC|, state nodes and merge rate, largest "
                    "node value variance, invalid and truncated shares, and each registered "
                    "check's count and evidence (credit, the group's integrity, progress); "
                    "what most of the run shares, and its progress, said once on stderr. "
                    "The terminal table names each group by the end of its id and its task "
                    "by the words that tell it from the run's other tasks, the same whatever "
                    "--top, the filters or the width; --url adds each row's view in the "
                    "app. "
                    "Cached per step file in $G2PO_CACHE/triage (default "
                    "~/.cache/g2po/triage).")
    p.add_argument("path", help="a run directory, verl dump, table (csv/jsonl/parquet) or "
                                "batch dump, or a folder of them (a sweep: each row names its "
                                "run)")
    p.add_argument("--step", type=int, metavar="N", help="only training step N (default: all)")
    p.add_argument("--sort", metavar="COL",
                   help="sort by this column, numbers largest first, text A-Z (default: "
                        "severity, then most kinds of alarm)")
    p.add_argument("--ascending", action="store_true", help="sort --sort's column smallest "
                                                            "first")
    p.add_argument("--top", type=int, metavar="K", help="only the first K rows")
    p.add_argument("--alarm", action="append", metavar="KIND",
                   help="only groups where this check fires (repeat: any of them): a check's "
                        "kind (the alarm_<kind> columns; an unknown one lists them), or "
                        "no_signal_g2po / no_signal_grpo")
    p.add_argument("--task", help="only groups whose task or group id contains this text")
    p.add_argument("--format", dest="output", choices=["table", "csv", "json"],
                   default="table", help="output: a table for the terminal (default), CSV or "
                                         "JSON records")
    p.add_argument("--estimator", choices=["g2po", "grpo"], default="g2po",
                   help="the estimator you train with: a group's severity and reason say what "
                        "it gets from the group (default g2po)")
    p.add_argument("--stochastic", action="store_true",
                   help="the environment is stochastic: a (state, action) leading to "
                        "different next states is then chance, and no aliasing alarm is "
                        "raised")
    p.add_argument("--state-key", default=None, help=STATE_KEY_HELP + STATE_KEY_DEFAULT)
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="G2PO parameter: gamma, w, mode, penalty (e.g. -p gamma=0.9)")
    p.add_argument("--no-cache", action="store_true", help="compute everything again, and "
                                                           "leave the cache alone")
    p.add_argument("--progress", action="store_true",
                   help="show the progress bar with --format csv/json too (on a terminal)")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed as a table")
    p.add_argument("--all-columns", action="store_true",
                   help="print every column as a table (default: step, group, task, "
                        "severity, success and the reason, fitted to the terminal; --format "
                        "csv/json always have every column)")
    add_url_option(p, per_row=True)
    add_ray_options(p)
    add_log_options(p, format_option="--log-format")
    p.set_defaults(func=_triage)

