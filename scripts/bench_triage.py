"""Benchmark: the groups table (:mod:`g2po.analysis.triage`, ``g2po triage``, the Groups page).

Writes the run of ``scripts/bench_loaders.py`` (200 training steps x 16 tasks x 8 rollouts x up
to 50 steps, ~1.2 M step rows, observations of ~500 characters), then measures, each in a
fresh process so no import or cache of an earlier measurement helps:

- one training step (16 groups x 8 rollouts x up to 50 steps) already in memory:
  :func:`triage_groups` (target <= 0.2 s), and the same step read from its file
  (:func:`triage_log` of one step, no cache);
- the whole run the first time: :func:`triage_log` with an empty on-disk cache and a progress
  callback (target <= 10 s);
- the whole run opened again: read from the cache (target <= 1 s).

The machine this runs on may be shared: each figure is printed with the process's CPU time
beside its wall time and the load average, and ``--repeats`` repeats the run-wide ones.

Usage: ``python scripts/bench_triage.py [--dir DIR] [--keep] [--repeats N]`` (``--dir`` an
existing run, e.g. one kept by ``bench_loaders.py --keep``, is measured as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):  # the project, and bench_loaders beside this one
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> dict[str, float]:
    wall, cpu = _clock()
    return {"wall_s": wall - start[0], "cpu_s": cpu - start[1],
            "load": os.getloadavg()[0]}


def measure(kind: str, path: Path, cache: Path, repeats: int) -> dict:
    """One measurement, in this (fresh) process."""
    import loaders
    from g2po.analysis.triage import triage_groups, triage_log

    log = loaders.open_log(path)
    steps = log.train_steps()
    if kind == "step":
        step = steps[len(steps) // 2]
        frame = log.load_step(step)
        rule = log.rule()
        times = []
        for _ in range(repeats):
            start = _clock()
            table = triage_groups(frame, rule=rule)
            times.append(_since(start))
        start = _clock()
        triage_log(log, [step], cache=False)
        from_file = _since(start)
        return {"rows": len(frame), "groups": len(table), "in_memory": times,
                "from_file": from_file}
    seen = []
    start = _clock()
    table = triage_log(log, cache=cache, progress=lambda done, total: seen.append(done))
    out = _since(start)
    out.update(rows=int(table["steps"].sum()), groups=len(table), train_steps=len(steps),
               progress_calls=len(seen), from_cache_at_start=seen[0] if seen else None)
    return out


def _run(kind: str, path: Path, cache: Path, repeats: int = 1) -> dict:
    result = subprocess.run([sys.executable, __file__, "--measure", kind, str(path), str(cache),
                             str(repeats)], check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _fmt(m: dict) -> str:
    return f"{m['wall_s']:6.3f} s wall, {m['cpu_s']:6.3f} s CPU, load {m['load']:4.1f}"


def main(argv: list[str] | None = None) -> int:
    import bench_loaders

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_loaders.add_run_options(parser, "an existing run, or where to write one")
    parser.add_argument("--repeats", type=int, default=3,
                        help="repeats of the run-wide measurements (each a fresh process)")
    parser.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure:
        kind, path, cache, repeats = args.measure
        print(json.dumps(measure(kind, Path(path), Path(cache), int(repeats))))
        return 0

    root = Path(tempfile.mkdtemp(prefix="g2po-bench-triage-"))
    run = args.dir if args.dir is not None else root / "run"
    try:
        if not (run / "run.json").exists():
            start = time.perf_counter()
            bench_loaders.generate_run(run, args.steps, args.tasks, args.rollouts,
                                       args.max_len, args.obs_chars)
            print(f"generated the run in {time.perf_counter() - start:.1f} s: {run}")
        step = _run("step", run, root / "unused", repeats=9)
        wall = sorted(m["wall_s"] for m in step["in_memory"])
        print(f"one training step: {step['rows']:,} step rows, {step['groups']} groups")
        print(f"  in memory, best / median of 9      {wall[0]:6.3f} / {wall[4]:.3f} s"
              "   (target <= 0.2 s)")
        print(f"    first: {_fmt(step['in_memory'][0])}")
        print(f"  read from its file + computed     {_fmt(step['from_file'])}")
        firsts, agains = [], []
        for i in range(args.repeats):
            cache = root / f"cache-{i}"
            first = _run("run", run, cache)
            again = _run("run", run, cache)
            assert first["from_cache_at_start"] == 0 and again["from_cache_at_start"] == \
                again["train_steps"], "the cache did not serve the second opening"
            firsts.append(first)
            agains.append(again)
            shutil.rmtree(cache, ignore_errors=True)
        first = firsts[0]
        print(f"whole run: {first['rows']:,} step rows, {first['groups']:,} groups, "
              f"{first['train_steps']} training steps ({first['progress_calls']} progress "
              "updates)")
        for i, (f, a) in enumerate(zip(firsts, agains, strict=True)):
            print(f"  #{i + 1} first time (empty cache)   {_fmt(f)}   (target <= 10 s)")
            print(f"  #{i + 1} opened again (cache)       {_fmt(a)}   (target <= 1 s)")
        print(f"  best first / again                 {min(f['wall_s'] for f in firsts):6.3f} / "
              f"{min(a['wall_s'] for a in agains):.3f} s")
    finally:
        if args.dir is None and args.keep:
            print(f"run kept at {run}")
        else:  # the caches, and the run unless it was given
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
