"""The ``g2po`` command. Each command group lives in its own module with an ``add_parser``.

Building the parser imports nothing heavy (no pandas, numpy, torch, estimators or log readers:
tests/g2po/cli/test_startup.py), so ``g2po --help`` answers at once; each command imports
what it needs when it runs."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from g2po.errors import G2POError

__all__ = ["main", "build_parser"]

# Modules contributing sub-commands, each with add_parser(subparsers).
_COMMAND_MODULES = ("g2po.cli.analysis", "g2po.cli.triage", "g2po.cli.audit", "g2po.cli.rollouts",
                    "g2po.cli.logs", "g2po.cli.train", "g2po.cli.seeds", "g2po.cli.whatif",
                    "g2po.cli.url")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="g2po",
        description="Group-Graph Policy Optimization: inspect state graphs and advantages, "
        "and train LLM agents.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (skipped rows, notes from loaders) as one plain line, not a source location."""
    print(f"g2po: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    # verl announces each optional engine it lacks (torchtitan, megatron, …); we use none of them.
    warnings.filterwarnings("ignore", message=r"\w+ engine is not available")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # A command whose positional words may come anywhere among its flags names them in
        # `intermixed` (argparse's nargs="*" positional takes only the first run of words:
        # `g2po train a=1 --total-steps 3 b=2` leaves b=2 over); the words keep their order.
        dest = getattr(args, "intermixed", None)
        flags = [word for word in extra if word.startswith("-")]
        if dest is None or flags:
            parser.error(f"unrecognized arguments: {' '.join(flags or extra)}")
        setattr(args, dest, list(getattr(args, dest)) + extra)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `g2po … | head`: the reader has all it wants (an OSError: first)
        _quiet_stdout()
        return 0
    except (G2POError, OSError, ValueError, TypeError, KeyError) as err:
        print(f"g2po {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"g2po {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the last resort of a command-line tool
        # A failure nobody turned into a clear message: one line, never a traceback (set
        # G2PO_DEBUG=1 to see it), and exit 3 so scripts and tests can tell it from a user error.
        if os.environ.get("G2PO_DEBUG"):
            raise
        print(f"g2po {args.command}: internal error ({type(err).__name__}): "
              f"{_one_line(str(err))}; please report it (G2PO_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return 3


def _quiet_stdout() -> None:
    """Point standard output at the null device: Python flushes it at exit, and what is left
    in its buffer would fail on the closed pipe again ("Exception ignored … BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a descriptor (captured): nothing to flush
        pass


def _one_line(text: str, width: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width] + "…"


if __name__ == "__main__":
    sys.exit(main())
