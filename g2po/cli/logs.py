"""``g2po validate``, and the log options every command that reads a log shares.

``add_log_options`` / ``log_options`` give any command ``--format``, ``--map``, ``--mapping``,
``--trust-pickle``, ``--state-regex``, ``--action-regex``, ``--metrics`` and ``--strict``, so
each one opens every log format :mod:`loaders` reads (with its training curves), and the
outcome rule (``--success-reward``, ``--success-min``, ``--truncate-at``) that every summary
and estimate of the log then follows.
"""

from __future__ import annotations

import argparse
import json

__all__ = ["add_parser", "add_log_options", "log_options", "STATE_KEY_HELP"]

#: The state-key strategies as ``--state-key`` takes them: :func:`g2po.params.state_key_forms`,
#: written out because importing it imports pandas (a test keeps the two equal).
STATE_KEY_HELP = "exact | normalized | alfworld | regex:PATTERN | similarity[:THRESHOLD]"
#: What ``--state-key`` is when not given: the run's own (:meth:`loaders.Log.params`).
STATE_KEY_DEFAULT = " (default: the key the run was trained with, from its run.json; else exact)"


def add_log_options(p: argparse.ArgumentParser, format_option: str = "--format") -> None:
    """The options that say how to read a log (format, column mapping, trust, extraction).
    ``format_option`` names the log-format flag (a command whose ``--format`` is its output
    format uses ``--log-format``); it is read as ``args.format`` either way."""
    from loaders.formats import FORMAT_CHOICES

    g = p.add_argument_group("reading the log")
    g.add_argument(format_option, dest="format", choices=FORMAT_CHOICES,
                   help="log format (default: detected from content and name)")
    g.add_argument("--map", action="append", default=[], metavar="COLUMN=SOURCE",
                   help="step-table column from a source column, e.g. --map group_id=uid "
                        "(tables and batch dumps; repeat)")
    g.add_argument("--mapping", metavar="FILE",
                   help="YAML file of 'column: source' pairs, e.g. 'traj_id: traj_uid'")
    g.add_argument("--trust-pickle", action="store_true",
                   help="allow reading a pickled batch dump: unpickling runs code from the "
                        "file, so only for files you trust")
    g.add_argument("--state-regex", metavar="REGEX",
                   help="verl dumps: extract the state key from the input text (named group "
                        "'state' or group 1; default: the last user/tool message)")
    g.add_argument("--action-regex", metavar="REGEX",
                   help="verl dumps: extract the action from the output text (default: the "
                        "last <action>…</action>, else the whole output)")
    g.add_argument("--metrics", action=_Metrics, metavar="FILE_OR_DIR",
                   help="the log's training curves: verl's file-logger JSONL or a TensorBoard "
                        "run's folder (default for a verl dump: found beside it); in the "
                        "app, for the --log before it")
    g.add_argument("--strict", action="store_true",
                   help="refuse a log with a malformed line (default: skip the line, say "
                        "which, and mark the trajectory that lost it incomplete)")
    o = p.add_argument_group("reading outcomes (default: the log's own rule: run.json, else "
                             "its won flags, else success reward 10)")
    o.add_argument("--success-reward", type=float, metavar="R",
                   help="the reward that counts as success, and the success terminal's value")
    o.add_argument("--success-min", type=float, metavar="T",
                   help="count a trajectory as a success when its reward is at least T")
    o.add_argument("--truncate-at", type=int, metavar="N",
                   help="a trajectory of N or more steps that did not succeed was cut at the "
                        "step limit (for logs without a done flag)")


class _Metrics(argparse.Action):
    """``--metrics``: (index of the ``--log`` it follows, path); a command's one path is 0."""

    def __call__(self, parser, namespace, values, option_string=None):
        logs = getattr(namespace, "log", None)
        if logs is not None and not logs:
            raise argparse.ArgumentError(self, "give it after the --log whose curves it holds")
        index = len(logs) - 1 if logs is not None else 0
        pairs = list(getattr(namespace, self.dest, None) or [])
        if any(i == index for i, _ in pairs):
            raise argparse.ArgumentError(self, "one --metrics per log")
        setattr(namespace, self.dest, [*pairs, (index, values)])


def log_options(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`loaders.open_log` / :func:`loaders.load_steps`."""
    from loaders import parse_mapping

    mapping = {**parse_mapping(args.mapping), **parse_mapping(args.map)}
    options = {"format": args.format, "mapping": mapping or None,
               "state_regex": args.state_regex, "action_regex": args.action_regex}
    outcome = {"success_reward": args.success_reward, "success_threshold": args.success_min,
               "truncate_at": args.truncate_at}
    if any(v is not None for v in outcome.values()):
        options["outcome"] = outcome
    if args.trust_pickle:
        options["trust_pickle"] = True
    if getattr(args, "strict", False):
        options["strict"] = True
    if getattr(args, "metrics", None) and not hasattr(args, "log"):  # a command's one log
        options["metrics"] = args.metrics[0][1]
    return options


def _validate(args: argparse.Namespace) -> int:
    from loaders.validate import validate_log

    options = log_options(args)
    result = validate_log(args.path, options.pop("format"), quick=args.quick, **options)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return 0 if result.ok else 1
    print(result.path)
    print(f"  format          {result.format or 'unknown'}")
    manifest = {k: result.manifest[k] for k in ("env", "model", "estimator", "created")
                if result.manifest.get(k) is not None}  # what a run's manifest says
    for key, value in manifest.items():
        print(f"  {key:<15} {value}")
    if result.train_steps:
        from loaders.report import step_ranges

        print(f"  training steps  {len(result.train_steps)} ({step_ranges(result.train_steps)})")
        print(f"  groups          {result.n_groups:,}")
        print(f"  trajectories    {result.n_traj:,}")
        print(f"  step rows       {result.n_steps:,}")
    if result.rule:
        print(f"  outcome rule    {result.rule} (from {result.rule_origin})")
    if result.n_traj:
        print(f"  successes       {result.n_success:,} of {result.n_traj:,} trajectories "
              f"({result.n_success / result.n_traj:.1%}), by that rule")
        print(f"  truncated       {result.n_truncated:,}")
    if result.truncation is not None:
        print(f"  truncation?     {result.truncation.message()} Add --truncate-at "
              f"{result.truncation.length} to count them so.")
    if result.reward_scale is not None:
        print(f"  reward scale?   {result.reward_scale.message()} Add "
              f"{result.reward_scale.flag}.")
    report = result.report
    if report is not None:
        skips = list(report.skips.values())
        print(f"  skipped rows    {report.n_skipped:,}" + ("" if skips else " (none)"))
        for entry in skips:
            print(f"    - {entry}")
        if report.notes:
            print("  notes")
            for note in report.notes:
                print(f"    - {note}")
    print(f"  problems        {len(result.problems)}" + ("" if result.problems else " (none)"))
    for problem in result.problems:
        print(f"    - {problem}")
    return 0 if result.ok else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="what a log holds (format, steps, groups, "
                                        "trajectories) and every problem with it")
    p.add_argument("path", help="a run directory, verl dump, table (csv/jsonl/parquet) or "
                                "batch dump")
    p.add_argument("--quick", action="store_true",
                   help="count from summaries only; do not read and check every row")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    add_log_options(p)
    p.set_defaults(func=_validate)
