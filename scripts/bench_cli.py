"""Benchmark: how fast the ``g2po`` command answers (issue 30, item 2).

Each figure is the median over ``--runs`` fresh processes (``python -m g2po …``, output to a
pipe), wall time and the process's CPU time (user + system) beside it, as the machine may be
shared (the load average is printed too):

- ``g2po --help`` and ``g2po <command> --help`` for every command the parser holds
  (target <= 0.5 s each);
- ``g2po triage RUN`` opened again from its cache, on the run of ``scripts/bench_loaders.py``
  (200 training steps x 16 tasks x 8 rollouts x up to 50 steps, ~1.2 M step rows; smaller with
  ``--steps`` … ``--obs-chars``), after one run that fills the cache (target <= 1 s);
- the imports of each (``python -X importtime``): modules imported and the sum of their own
  times, and the heavy libraries among them (pandas, numpy, torch, pyarrow).

Python compiles each module it imports unless its bytecode is cached; where
``PYTHONDONTWRITEBYTECODE`` is set and the packages hold no ``__pycache__`` (this project's
shared venv), every start compiles pandas again. The benchmark therefore gives the processes a
bytecode cache of their own (``PYTHONPYCACHEPREFIX`` in its temporary folder, warmed by one
untimed run), as an installed package has; ``--as-is`` measures the environment unchanged.

Usage: ``python scripts/bench_cli.py [--runs N] [--dir RUN] [--keep] [--as-is]``; the smallest
mode, for tests: ``--runs 1 --steps 2 --tasks 2 --rollouts 4 --max-len 10 --obs-chars 80``.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):  # the project, and bench_loaders beside this one
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

HEAVY = ("pandas", "numpy", "torch", "pyarrow")
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def commands() -> list[str]:
    """The commands the ``g2po`` parser holds, in its order."""
    import g2po.cli

    sub = g2po.cli.build_parser()._subparsers._group_actions[0]
    return list(sub.choices)


def _env(pycache: Path | None, cache: Path) -> dict[str, str]:
    env = {**os.environ, "G2PO_CACHE": str(cache), "COLUMNS": "120",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _run(argv: list[str], env: dict[str, str], *, importtime: bool = False
         ) -> tuple[float, float, str, str]:
    """(wall s, CPU s, stdout, stderr) of ``python [-X importtime] -m g2po ARGV``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *(["-X", "importtime"] if importtime else []),
                           "-m", "g2po", *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"g2po {' '.join(argv)} exited {done.returncode}: "
                           f"{done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout, done.stderr


def timed(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median wall and CPU seconds of ``runs`` fresh processes."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, _, _ = _run(argv, env)
        walls.append(wall)
        cpus.append(cpu)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "load": os.getloadavg()[0]}


def imports(argv: list[str], env: dict[str, str]) -> dict:
    """What ``g2po ARGV`` imports (``-X importtime``): the count, the sum of the modules' own
    times, and each heavy library's cumulative time (absent: not imported)."""
    _, _, _, err = _run(argv, env, importtime=True)
    own, heavy, count = 0, {}, 0
    for line in err.splitlines():
        match = _IMPORT_LINE.match(line)
        if not match:
            continue
        count += 1
        own += int(match[1])
        if match[4] in HEAVY:
            heavy[match[4]] = heavy.get(match[4], 0) + int(match[2]) / 1e6
    return {"modules": count, "import_s": own / 1e6, "heavy": heavy}


def _fmt(m: dict[str, float]) -> str:
    return f"{m['wall_s']:6.3f} s wall, {m['cpu_s']:6.3f} s CPU, load {m['load']:4.1f}"


def _fmt_imports(m: dict) -> str:
    heavy = ", ".join(f"{k} {v:.3f} s" for k, v in m["heavy"].items()) or "none of " + \
        "/".join(HEAVY)
    return (f"{m['modules']} modules, {m['import_s']:.3f} s (own times summed); heavy "
            f"(cumulative, nested ones inside): {heavy}")


def _step_rows(table_csv: str) -> tuple[int, int]:
    """(step rows, groups) of ``g2po triage --format csv``'s output."""
    rows = list(csv.DictReader(io.StringIO(table_csv)))
    return sum(int(r["steps"]) for r in rows), len(rows)


def main(argv: list[str] | None = None) -> int:
    import bench_loaders

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_loaders.add_run_options(parser, "an existing log to triage, or where to write the run")
    parser.add_argument("--runs", type=int, default=5,
                        help="fresh processes per figure (the median is printed)")
    parser.add_argument("--as-is", action="store_true",
                        help="no bytecode cache of the benchmark's own (see the docstring)")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="g2po-bench-cli-"))
    pycache = None if args.as_is else root / "pycache"
    env = _env(pycache, root / "cache")
    run = args.dir if args.dir is not None else root / "run"
    try:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; bytecode: "
              + ("as the environment has it (PYTHONDONTWRITEBYTECODE="
                 f"{os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')})" if pycache is None
                 else f"cached in {pycache} (warmed by an untimed run)"))
        names = commands()
        print(f"start-up, median of {args.runs} fresh process(es)   (target <= 0.5 s)")
        for words in [[], *([name] for name in names)]:
            argv_ = [*words, "--help"]
            _run(argv_, env)  # warms the bytecode cache (and the disk's)
            print(f"  g2po {' '.join(argv_):<24} {_fmt(timed(argv_, env, args.runs))}")
        print(f"  imports of g2po --help: {_fmt_imports(imports(['--help'], env))}")

        if not run.exists():
            start = time.perf_counter()
            bench_loaders.generate_run(run, args.steps, args.tasks, args.rollouts,
                                       args.max_len, args.obs_chars)
            print(f"generated the run in {time.perf_counter() - start:.1f} s: {run}")
        triage = ["triage", str(run)]
        wall, cpu, out, _ = _run([*triage, "--format", "csv"], env)  # fills the cache
        rows, groups = _step_rows(out)
        print(f"g2po triage of {rows:,} step rows, {groups:,} groups; filling the cache: "
              f"{wall:.1f} s wall, {cpu:.1f} s CPU")
        print(f"  g2po triage RUN (cache)         {_fmt(timed(triage, env, args.runs))}"
              "   (target <= 1 s)")
        print(f"  imports of the cached triage: {_fmt_imports(imports(triage, env))}")
    finally:
        if args.keep and args.dir is None:
            print(f"run kept at {run}")
            shutil.rmtree(root / "cache", ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
