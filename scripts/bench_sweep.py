"""Benchmark: a sweep of runs (docs/sweeps.md), on this machine and on a local Ray.

Writes a folder of ``--runs`` run directories shaped as ``scripts/bench_loaders.py``'s (by
default 4 runs x 25 training steps x 16 tasks x 8 rollouts x up to 50 steps, ~0.6 M step rows
in all), then runs, each as a fresh ``g2po`` process:

- ``g2po triage DIR --format csv --no-cache``: the single-machine path;
- the same with ``--ray --ray-workers 1`` and ``--ray --ray-workers 2``: a local Ray started
  by the command with 1 and 2 CPUs;

and prints for each the wall time, the peak resident memory of the command's own process and
the peak of the sum over it and every process it started (Ray's GCS, raylet and workers
included; sampled every 0.1 s, so a shorter spike can be missed), and whether its table equals
the single-machine one; for Ray, also the time Ray Data's execution took (the rest is
starting Ray and its workers). ``--advantages`` measures ``g2po advantages DIR --out OUT`` the same
way (the files compared). On 2 cores Ray is not faster; the point is the same output in bounded
memory.

Usage: ``python scripts/bench_sweep.py [--runs 4] [--steps 25] [--dir DIR] [--keep]
[--advantages]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def _tree_rss(proc: psutil.Process) -> tuple[int, int]:
    """(RSS of ``proc``, RSS of ``proc`` and every descendant), bytes."""
    try:
        own = proc.memory_info().rss
        children = proc.children(recursive=True)
    except psutil.Error:
        return 0, 0
    total = own
    for child in children:
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return own, total


def measure(command: list[str], env: dict) -> dict:
    """Run ``command``; its wall time, exit status, stdout, and the peak RSS of it alone and
    of it with every process it started."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        ps = psutil.Process(proc.pid)
        while not done.is_set():
            own, total = _tree_rss(ps)
            peaks[0], peaks[1] = max(peaks[0], own), max(peaks[1], total)
            done.wait(0.1)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    return {"wall_s": time.perf_counter() - start, "rc": proc.returncode, "out": out,
            "err": err, "driver_mb": peaks[0] / 2**20, "tree_mb": peaks[1] / 2**20}


def write_sweep(root: Path, runs: int, steps: int, tasks: int, rollouts: int, max_len: int,
                obs_chars: int) -> int:
    from bench_loaders import generate_run

    return sum(generate_run(root / f"run-{i:02d}", steps, tasks, rollouts, max_len, obs_chars)
               for i in range(runs))


def _same_files(a: Path, b: Path) -> bool:
    import pandas as pd

    files = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    if not files or files != sorted(p.relative_to(b) for p in b.rglob("*.parquet")):
        return False
    for f in files:
        try:
            pd.testing.assert_frame_equal(pd.read_parquet(a / f), pd.read_parquet(b / f))
        except AssertionError:
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=25, help="training steps per run")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--max-len", type=int, default=50)
    parser.add_argument("--obs-chars", type=int, default=500)
    parser.add_argument("--dir", type=Path, help="an existing folder of runs, measured as it is")
    parser.add_argument("--keep", action="store_true", help="keep the generated sweep")
    parser.add_argument("--advantages", action="store_true",
                        help="measure g2po advantages too (one Parquet file per run)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="g2po-bench-sweep-"))
    root = args.dir or work / "sweep"
    if args.dir is None:
        t0 = time.perf_counter()
        rows = write_sweep(root, args.runs, args.steps, args.tasks, args.rollouts,
                           args.max_len, args.obs_chars)
        print(f"wrote {args.runs} runs, {rows:,} step rows, in {time.perf_counter() - t0:.1f}"
              f" s: {root}")
    env = {**os.environ, "G2PO_CACHE": str(work / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("RAY_ADDRESS", None)
    g2po = [sys.executable, "-m", "g2po"]
    cases = [("single machine", []), ("Ray, 1 worker", ["--ray", "--ray-workers", "1"]),
             ("Ray, 2 workers", ["--ray", "--ray-workers", "2"])]
    commands = [("triage", [*g2po, "triage", str(root), "--format", "csv", "--no-cache"])]
    if args.advantages:
        commands.append(("advantages", [*g2po, "advantages", str(root), "--out"]))
    try:
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{'command':<11} {'path':<15} {'wall s':>7} {'Ray Data s':>10} {'driver MB':>10} "
              f"{'all MB':>8} same output")
        for name, command in commands:
            reference = None
            for label, extra in cases:
                out_dir = work / f"adv-{label.replace(' ', '').replace(',', '-')}"
                full = [*command, str(out_dir)] if name == "advantages" else command
                got = measure([*full, *extra], env)
                if got["rc"] != 0:
                    print(f"{name:<11} {label:<15} failed ({got['rc']}): {got['err'][-800:]}")
                    continue
                result = out_dir if name == "advantages" else got["out"]
                if reference is None:
                    reference, same = result, "(reference)"
                elif name == "advantages":
                    same = str(_same_files(reference, result))
                else:
                    same = str(result == reference)
                ran = re.search(r"execution finished in ([0-9.]+) seconds", got["err"])
                print(f"{name:<11} {label:<15} {got['wall_s']:7.1f} "
                      f"{float(ran.group(1)) if ran else float('nan'):10.1f} "
                      f"{got['driver_mb']:10.0f} {got['tree_mb']:8.0f} {same}", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
