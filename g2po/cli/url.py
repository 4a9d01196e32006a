"""``g2po url``: the URL of a view of the app (a run, a training step, a group, a node or an
edge of its state graph, a page), for a notebook, a W&B note or a CI log to link straight to.

The page and query names are :mod:`g2po.app_url`'s, which the app reads too; the run is named
as the app's sidebar names it (:func:`loaders.discover.log_name`,
:func:`loaders.discover.distinct_names`); node ids and edge rows are those of
:func:`g2po.analysis.state_graph.state_graph`, which the group explorer draws. A log the app
was not started with is opened by the URL itself (``open=PATH``), which the app allows only
under its path rule. :func:`add_url_option` and :func:`group_urls` give other commands a URL
per row of groups (:func:`with_urls`: ``g2po audit --url``, ``g2po whatif --url``).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from g2po.app_url import (
    DEFAULT_BASE,
    PAGES,
    SAMPLE_DIR,
    SIMILARITY_RANGE,
    START_PAGE,
    URL_NAMES,
    page_key,
    view_url,
)
from g2po.cli.logs import STATE_KEY_DEFAULT, STATE_KEY_HELP, add_log_options, log_options

if TYPE_CHECKING:
    import pandas as pd

    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams
    from loaders.log import Log

__all__ = ["add_parser", "add_url_option", "AppRun", "app_run", "view_names", "with_urls",
           "print_urls", "OPEN_RULE"]

#: What the app must allow for a URL that opens a log (``open=PATH``): said by ``--help``, the
#: note on stderr and docs/app.md.
OPEN_RULE = ("the app opens it only under its path rule: PATH must lie under a --log or "
             "--allow-dir FOLDER it was started with, or (while it serves only this machine, "
             "its default) under the folder it was started in")
#: The explorer's own names: read by no other page.
_EXPLORER = ("traj", "node", "edge")


@dataclass(frozen=True)
class AppRun:
    """A log as the app shows it: its ``name`` in the sidebar (``run=``), and ``open``, its
    absolute path when the URL must open it (the app was not started with it), else None."""

    name: str
    open: str | None


def app_run(path: str | Path, app_logs: Sequence[str] = ()) -> AppRun:
    """How the app started with ``--log`` ``app_logs`` (none: the bundled samples, as ``make
    run``) names the log at ``path``, and whether a URL must open it. Every log the app lists
    is named by the sidebar's one rule, so a name two logs share is told apart as there."""
    from loaders.discover import distinct_names, find_logs, log_name
    from loaders.errors import NoLogFoundError

    target = Path(path).expanduser()
    found, _ = find_logs(target)
    if list(found) != [target]:
        names = [log_name(log, target) for log in found]
        raise ValueError(f"{path}: a folder of {len(names)} logs ({', '.join(names[:5])}"
                         f"{' …' if len(names) > 5 else ''}); give the one to link to")
    roots = [Path(p).expanduser() for p in app_logs] or \
        ([SAMPLE_DIR] if SAMPLE_DIR.is_dir() else [])
    listed: dict[Path, str] = {}  # resolved path → name, the app's order, each path once
    for root in roots:
        try:
            logs, _ = find_logs(root)
        except NoLogFoundError as err:
            if not app_logs:
                continue  # no samples here: the app lists none either
            raise ValueError(f"--app-log {root}: {err}") from None
        for log in logs:
            listed.setdefault(log.resolve(), log_name(log, root))
    resolved = target.resolve()
    opened = None
    if resolved not in listed:
        opened = str(resolved)
        listed[resolved] = log_name(target, target)
    names = distinct_names(list(listed.values()), [str(p) for p in listed])
    return AppRun(dict(zip(listed, names, strict=True))[resolved], opened)


def view_names(run: AppRun, params: G2POParams, rule: OutcomeRule,
               rule_given: Sequence[str] = ()) -> dict[str, object]:
    """The URL names every view of ``run`` carries: the run (and the path that opens it), the
    G2PO parameters that differ from the defaults, and the outcome-rule fields the user set
    (``rule_given``, names of :class:`OutcomeRule` fields; the others are the log's own, which
    the app reads as the CLI does)."""
    from g2po.params import G2POParams

    names: dict[str, object] = {"run": run.name}
    if run.open is not None:
        names["open"] = run.open
    default = G2POParams()
    for spec in URL_NAMES.values():
        if spec.sets in ("gamma", "w", "mode", "penalty") and \
                getattr(params, spec.sets) != getattr(default, spec.sets):
            names[spec.name] = getattr(params, spec.sets)
        elif spec.sets in rule_given and getattr(rule, spec.sets) is not None:
            names[spec.name] = getattr(rule, spec.sets)
    key = _app_state_key(str(params.state_key))
    if key != "exact":
        names["state_key"] = key
    return names


def _app_state_key(key: str) -> str:
    """``key`` as the sidebar's state-key picker holds it; a ValueError for a key it does not
    offer (the URL could not carry it)."""
    import inspect

    from g2po.params import STATE_KEY_CHOICES
    from g2po.state_keys import similarity

    name, _, arg = key.partition(":")
    if name not in STATE_KEY_CHOICES:
        raise ValueError(f"state key {key!r}: the app's sidebar offers "
                         f"{', '.join(STATE_KEY_CHOICES)} (regex:PATTERN, "
                         "similarity:THRESHOLD), so a URL cannot carry it")
    if name == "similarity":
        threshold = float(arg) if arg else \
            inspect.signature(similarity).parameters["threshold"].default
        low, high = SIMILARITY_RANGE
        if not low <= threshold <= high:
            raise ValueError(f"state key {key!r}: the app's similarity threshold goes from "
                             f"{low:g} to {high:g}")
        return f"similarity:{threshold}"
    return key


def _nearest(wanted: object, choices: Sequence, n: int = 3) -> str:
    """The ``n`` choices nearest ``wanted``: by difference for numbers, by likeness for text."""
    if not choices:
        return "none"
    if isinstance(wanted, int):
        picked = sorted(choices, key=lambda c: (abs(int(c) - wanted), c))[:n]
    else:
        text = [str(c) for c in choices]
        picked = difflib.get_close_matches(str(wanted), text, n=n, cutoff=0.0) or text[:n]
    return ", ".join(map(str, picked))


def _step(log: Log, path: str, step: int | None) -> int:
    """The training step of the view: ``step`` checked, else the last (the app's default)."""
    steps = log.train_steps()
    if not steps:
        raise ValueError(f"{path}: holds no training steps yet")
    if step is None:
        return steps[-1]
    if not log.has_train_steps:
        raise ValueError(f"{path}: has no training steps (all its rows are one step): "
                         "leave out --step")
    if step not in steps:
        raise ValueError(f"{path}: no training step {step}; nearest: {_nearest(step, steps)} "
                         f"({len(steps)} training steps)")
    return step


def _group(log: Log, path: str, step: int, group: str | None) -> str:
    """The group of the view: ``group`` checked, else the step's first (the app's default)."""
    groups = [str(g) for g in log.groups(step)]
    if not groups:
        raise ValueError(f"{path}: training step {step} holds no groups")
    if group is None:
        return groups[0]
    if group not in groups:
        raise ValueError(f"{path}: training step {step} has no group {group!r}; nearest: "
                         f"{_nearest(group, groups)} ({len(groups)} groups; g2po triage "
                         f"{path} --step {step} lists them)")
    return group


def _graph_names(args: argparse.Namespace, log: Log, step: int, group: str,
                 params: G2POParams, rule: OutcomeRule) -> dict[str, object]:
    """The explorer's names of the view (trajectories, node, edge), checked against the group's
    state graph under ``params`` and ``rule``, the one the explorer draws."""
    from g2po.analysis.state_graph import state_graph

    graph = state_graph(log.load_group(step, group), rule=rule, params=params)
    where = f"group {group!r} at training step {step} under state key {params.state_key}"
    lists = f"g2po graph {args.path} --group {group} --train-step {step} lists them"
    names: dict[str, object] = {}
    if args.traj:
        known = sorted(map(str, graph.steps["traj_id"].unique()))
        for traj in args.traj:
            if traj not in known:
                raise ValueError(f"{where}: no trajectory {traj!r}; nearest: "
                                 f"{_nearest(traj, known)} ({lists})")
            if "," in traj:
                raise ValueError(f"trajectory {traj!r}: the URL lists trajectories separated "
                                 "by commas, so one with a comma in its id cannot be named")
        names["traj"] = list(dict.fromkeys(args.traj))
    nodes = [int(n) for n in graph.nodes.index]
    if args.node is not None:
        if args.node not in nodes:
            raise ValueError(f"{where}: no node {args.node}; nearest: "
                             f"{_nearest(args.node, nodes)} (nodes {min(nodes)}–{max(nodes)}; "
                             f"{lists})")
        names["node"] = args.node
    if args.edge is not None:
        n_edges = len(graph.edges)
        if not 0 <= args.edge < n_edges:
            raise ValueError(f"{where}: no edge {args.edge} (edges are rows 0–{n_edges - 1}; "
                             f"{lists})")
        # as a click on the edge: its source node selected, the steps along it listed
        names.setdefault("node", int(graph.edges["source"].iloc[args.edge]))
        names["edge"] = args.edge
        names["filter"] = f"edge:{args.edge}"
    return names


def _open_log(args: argparse.Namespace) -> tuple[Log, G2POParams, OutcomeRule, list[str]]:
    """The log, the parameters and outcome rule of the view, and the rule fields the user set
    (``--success-reward`` … or ``-p``)."""
    from g2po.cli.analysis import params_and_rule, parse_params
    from loaders.opener import open_log

    log = open_log(args.path, **log_options(args))
    values = parse_params(args.param)
    params, rule = params_and_rule(values, log.rule(), args.state_key, base=log.params())
    given = [*log.outcome_overrides, *(k for k in values if k in rule.estimator_kwargs())]
    return log, params, rule, given


def _url(args: argparse.Namespace) -> int:
    page = args.page
    for name in _EXPLORER:
        if getattr(args, name) not in (None, []) and page not in (None, "group"):
            raise ValueError(f"--{name} is read by the group explorer only, not by --page "
                             f"{page} (leave --page out, or give --page group)")
    page = page or START_PAGE
    run = app_run(args.path, args.app_log or ())
    log, params, rule, given = _open_log(args)
    names = view_names(run, params, rule, given)
    wants_group = args.group is not None or any(getattr(args, n) not in (None, [])
                                                for n in _EXPLORER)
    if args.step is not None or wants_group:
        step = _step(log, args.path, args.step)
        if log.has_train_steps:
            names["step"] = step
        if wants_group:
            group = _group(log, args.path, step, args.group)
            names["group"] = group
            if page == "group":
                names.update(_graph_names(args, log, step, group, params, rule))
    print(view_url(_base(args.base), page, names))
    if run.open is not None:
        print(f"g2po url: note: the URL opens {run.open} in the app as its path box does; "
              f"{OPEN_RULE}", file=sys.stderr)
    return 0


def _base(base: str | None) -> str:
    return base or os.environ.get("G2PO_APP_URL") or DEFAULT_BASE


def _page(word: str) -> str:
    try:
        return page_key(word)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_url_option(p: argparse.ArgumentParser, *, per_row: bool) -> None:
    """The options that say where the app is and what it was started with: ``--base`` (``g2po
    url``) or, with ``per_row``, ``--url [BASE]`` (a command that adds a URL per row), and
    ``--app-log``."""
    g = p.add_argument_group("the app the URL is for")
    help_base = (f"the app's address (default: $G2PO_APP_URL, else {DEFAULT_BASE}; with a "
                 "path when served under one)")
    if per_row:
        g.add_argument("--url", nargs="?", const="", metavar="BASE",
                       help="add each row's view in the app as a column 'url' (in the "
                            "terminal, listed under the table); BASE: " + help_base)
    else:
        g.add_argument("--base", metavar="URL", help=help_base)
    g.add_argument("--app-log", action="append", metavar="PATH",
                   help="a --log the app was started with (repeat; from the folder it was "
                        "started in; default: none given, so the bundled sample rollouts): "
                        "runs are named as its sidebar names them, and a log it was not "
                        f"started with is opened by the URL (open=PATH): {OPEN_RULE}")


def with_urls(args: argparse.Namespace, log: Log, table: pd.DataFrame, page: str,
              params: G2POParams, rule: OutcomeRule,
              extra: dict[str, object] | None = None) -> pd.DataFrame:
    """``table`` (rows of groups: ``group_id``, and ``train_step`` where the log has training
    steps; rows of steps may add ``traj_id``, highlighted in the explorer) with a last column
    ``url``, each row's view on ``page`` of the app at ``args.url`` (:func:`add_url_option`)
    under ``params`` and ``rule`` (the outcome-rule fields the user set are in the URL), with
    the page's ``extra`` names; ``table`` as it is without ``--url``."""
    if getattr(args, "url", None) is None:
        return table
    run = app_run(args.path, args.app_log or ())
    if run.open is not None:
        print(f"g2po {args.command}: note: the URLs open {run.open} in the app as its path box "
              f"does; {OPEN_RULE}", file=sys.stderr)
    names = {**view_names(run, params, rule, list(log.outcome_overrides)), **(extra or {})}
    base = _base(args.url)
    n = len(table)
    steps = table["train_step"].tolist() if log.has_train_steps and \
        "train_step" in table.columns else [None] * n
    trajs = [[str(t)] if "," not in str(t) else None for t in table["traj_id"]] \
        if page == "group" and "traj_id" in table.columns else [None] * n
    urls = [view_url(base, page, {**names, **({} if s is None else {"step": int(s)}),
                                  "group": str(g), **({} if t is None else {"traj": t})})
            for s, g, t in zip(steps, table["group_id"], trajs, strict=True)]
    return table.assign(url=urls)


def print_urls(table: pd.DataFrame) -> None:
    """Under a table printed for the terminal: each row's ``url`` (:func:`with_urls`) on a line
    of its own, whole, after its training step and group."""
    if "url" not in table.columns or table.empty:
        return
    print("\nthe rows' views in the app:")
    steps = table["train_step"] if "train_step" in table.columns else [None] * len(table)
    for step, group, url in zip(steps, table["group_id"], table["url"], strict=True):
        print(f"  {'' if step is None else f'step {step} · '}{group}: {url}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    pages = ", ".join(f"{k} ({p.title})" for k, p in PAGES.items())
    p = sub.add_parser(
        "url", help="the URL of a view of the app (run, step, group, node, edge, page), for a "
                    "notebook, a W&B note or a CI log",
        description="Print the URL that opens the app on one view of a log: a page, a "
                    "training step, a group, and in the group explorer trajectories, a node or "
                    "an edge of its state graph. The log is opened to check that each exists "
                    "(a clear error names the missing one, with the nearest choices); node "
                    "ids and edge rows are those the explorer shows for that group under the "
                    "given parameters (as g2po graph lists them). The run is named as the "
                    "app's sidebar names it; a log the app was not started with (--app-log) "
                    f"is opened by the URL (open=PATH): {OPEN_RULE}. The reading options "
                    "(--map, --state-regex …) are not in the URL: start the app with the "
                    "same.")
    p.add_argument("path", help="the log: a run directory, verl dump, table "
                                "(csv/jsonl/parquet) or batch dump")
    p.add_argument("--page", type=_page, metavar="PAGE",
                   help=f"the page (default: the group explorer, at the app's root): {pages}; "
                        "'explorer' is the group explorer too")
    p.add_argument("--step", type=int, metavar="N", help="the training step (default with "
                                                         "--group: the last)")
    p.add_argument("--group", metavar="G", help="the group (default with --traj/--node/--edge: "
                                                "the step's first, as the app)")
    p.add_argument("--traj", action="extend", nargs="+", metavar="T",
                   help="trajectories to highlight (group explorer)")
    p.add_argument("--node", type=int, metavar="K",
                   help="the node to select, its steps listed (its id in the group's state "
                        "graph: g2po graph lists them)")
    p.add_argument("--edge", type=int, metavar="E",
                   help="the edge to select, its steps listed (its row of g2po graph's edges)")
    p.add_argument("--state-key", default=None, help=STATE_KEY_HELP + STATE_KEY_DEFAULT)
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="G2PO parameter (gamma, w, mode, penalty) or outcome rule "
                        "(success_reward, success_threshold, terminal), e.g. -p gamma=0.9")
    add_url_option(p, per_row=False)
    add_log_options(p)
    p.set_defaults(func=_url)
