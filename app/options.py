"""Command-line options of the app: ``streamlit run app/main.py -- --log PATH …``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from g2po.app_url import SAMPLE_DIR as BUNDLED_SAMPLES
from g2po.cli.logs import add_log_options, log_options
from loaders import LoaderError, check_outcome_overrides

__all__ = ["AppOptions", "parse_options", "SAMPLE_DIR", "OptionsError"]

#: The bundled sample rollouts, opened when no log is given (``g2po url`` names runs so too).
SAMPLE_DIR = BUNDLED_SAMPLES


class OptionsError(ValueError):
    """Bad command-line options; the message says which and how to fix them."""


@dataclass(frozen=True)
class AppOptions:
    """What the command line asked for.

    logs : paths to open: a run directory, a directory holding runs or log files, or one log
        file; empty means the bundled :data:`SAMPLE_DIR`.
    format : a loader format forced for every path (``run``, ``verl``, ``csv``, …), else
        detected per path.
    read : the other keyword arguments of :func:`loaders.open_log` from the command line
        (``mapping``, ``state_regex``, ``action_regex``, ``trust_pickle``), as sorted
        (name, value) pairs; each log gets those that apply to its format.
    plugins : modules (dotted names or ``.py`` files) imported at start, for estimators
        registered with :func:`g2po.register_estimator`.
    refresh : seconds between checks for new training steps of live runs; 0 turns it off.
    allow_dirs : folders (besides the ``--log`` paths, the samples and the folder the app
        started in: :func:`app.open_logs.roots`) whose logs the path box may open.
    max_rows : the most rows a table (CSV, JSONL, Parquet; opened or uploaded) may hold: a
        table is read whole into memory (~0.5 kB a row), run directories are not.
    cache_mb : the memory the opened logs may keep between reruns, in MiB; the least
        recently used are closed beyond it.
    metrics : (index into ``logs``, path): the training curves of that ``--log``
        (``--metrics`` after it).
    """

    logs: tuple[str, ...] = ()
    format: str | None = None
    read: tuple[tuple[str, object], ...] = ()
    plugins: tuple[str, ...] = ()
    refresh: float = 5.0
    from_sample: bool = field(default=False)
    allow_dirs: tuple[str, ...] = ()
    max_rows: int = 1_000_000
    cache_mb: float = 2048.0
    metrics: tuple[tuple[int, str], ...] = ()

    @property
    def mapping(self) -> dict[str, str]:
        """The column mapping of ``--map`` / ``--mapping`` (empty when none)."""
        return dict(dict(self.read).get("mapping") or ())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamlit run app/main.py --",
        description="Inspect G2PO state graphs and advantages.",
        exit_on_error=False,
    )
    parser.add_argument("--log", action="append", default=[], metavar="PATH",
                        help="a run directory, a folder of runs/logs, or a log file "
                             "(repeat for several)")
    add_log_options(parser)  # --format, --map, --mapping, --trust-pickle, --state-regex, …
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import a module or .py file that registers estimators")
    parser.add_argument("--refresh", type=float, default=5.0, metavar="SECONDS",
                        help="check live runs for new training steps this often (0: never)")
    parser.add_argument("--allow-dir", action="append", default=[], metavar="FOLDER",
                        help="let the sidebar's path box open logs under this folder too "
                             "(besides the --log paths, the samples and, served to this "
                             "machine only, the folder the app started in; repeat)")
    parser.add_argument("--max-rows", type=int, default=AppOptions.max_rows, metavar="N",
                        help="the most rows a CSV/JSONL/Parquet table may hold "
                             "(default %(default)s)")
    parser.add_argument("--cache-mb", type=float, default=AppOptions.cache_mb, metavar="MIB",
                        help="memory kept by opened logs between reruns (default "
                             "%(default)s MiB)")
    return parser


def parse_options(argv: Sequence[str] | None) -> AppOptions:
    """Parse the arguments after ``--``; raise :class:`OptionsError` with the usage on bad
    ones (never exit: the app shows the message)."""
    parser = _parser()
    try:
        args, unknown = parser.parse_known_args(list(argv or []))
    except (argparse.ArgumentError, SystemExit) as err:
        raise OptionsError(f"{err}\n\n{parser.format_usage()}") from None
    if unknown:
        raise OptionsError(f"unknown argument(s): {' '.join(unknown)}\n\n"
                           f"{parser.format_usage()}")
    if args.refresh < 0:
        raise OptionsError(f"--refresh must be >= 0 seconds, got {args.refresh}")
    if args.max_rows < 1:
        raise OptionsError(f"--max-rows must be >= 1, got {args.max_rows}")
    if args.cache_mb <= 0:
        raise OptionsError(f"--cache-mb must be > 0, got {args.cache_mb}")
    missing = [d for d in args.allow_dir if not Path(d).expanduser().is_dir()]
    if missing:
        raise OptionsError(f"--allow-dir {missing[0]}: no such folder")
    metrics = tuple((i, str(Path(m).expanduser())) for i, m in args.metrics or ())
    absent = [m for _, m in metrics if not Path(m).exists()]
    if absent:
        raise OptionsError(f"--metrics {absent[0]}: no such file or folder")
    try:
        read = log_options(args)  # the CLI's own parsing of --map / --mapping
        check_outcome_overrides(read.get("outcome"))
    except LoaderError as err:
        raise OptionsError(str(err)) from None
    fmt = read.pop("format")
    for name in ("mapping", "outcome"):  # sorted pairs: options are hashed
        if read.get(name):
            read[name] = tuple(sorted(read[name].items()))
    logs = tuple(args.log)
    return AppOptions(logs=logs or (str(SAMPLE_DIR),), format=fmt,
                      read=tuple(sorted((k, v) for k, v in read.items() if v)),
                      plugins=tuple(args.plugin), refresh=args.refresh, from_sample=not logs,
                      allow_dirs=tuple(args.allow_dir), max_rows=args.max_rows,
                      cache_mb=args.cache_mb, metrics=metrics)
