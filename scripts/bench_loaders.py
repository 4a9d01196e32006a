"""Benchmark: open a large run directory without loading its rows.

Generates a run of ``--steps`` training steps x ``--tasks`` tasks x ``--rollouts`` rollouts of
up to ``--max-len`` agent steps (defaults: 200 x 16 x 8 x 50, about 1.2 M step rows, with
observations of ~500 characters), written one training step at a time with
:class:`loaders.RunWriter`. Then, in a fresh process so that its peak memory is the reader's
own, it measures:

- open + list training steps + list every step's groups + per-step summaries (target <= 3 s),
- loading one group of one training step (target <= 0.2 s; first load and median of 20),
- peak resident memory, against the run's size on disk and in memory.

Usage: ``python scripts/bench_loaders.py [--dir DIR] [--keep]`` (``--measure DIR`` runs only
the measuring half on an existing run).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

_WORDS = np.array(("the a red small old wooden brass key door table shelf drawer cabinet lamp "
                   "book apple knife mug towel window north south east west floor wall corner "
                   "under behind next to on in near you see here there is are nothing closed "
                   "open").split())


def _world(task: int, states: int, obs_chars: int) -> list[str]:
    """Observation text of each state of one task, ~``obs_chars`` characters each."""
    rng = np.random.default_rng(task)
    texts = []
    for s in range(states):
        words = " ".join(rng.choice(_WORDS, size=obs_chars // 4))
        texts.append(f"[task {task}] You are in room {s}. {words}"[:obs_chars])
    return texts


def generate_step(train_step: int, tasks: int, rollouts: int, max_len: int, obs_chars: int,
                  states: int = 40) -> pd.DataFrame:
    """One training step's step rows, vectorised: random walks over each task's rooms.

    Failed rollouts run to ``max_len`` steps (the step limit); successful ones stop earlier.
    """
    rng = np.random.default_rng(train_step)
    n_traj = tasks * rollouts
    success = rng.random(n_traj) < 0.3
    lengths = np.where(success, rng.integers(max_len * 3 // 5, max_len + 1, n_traj), max_len)
    traj = np.repeat(np.arange(n_traj), lengths)
    starts = np.cumsum(lengths) - lengths
    t = np.arange(len(traj)) - np.repeat(starts, lengths)
    task_of = traj // rollouts
    invalid = rng.random(len(traj)) < 0.1
    move = np.where(invalid | (t == 0), 0, rng.integers(1, 4, size=len(traj)))
    pos = np.cumsum(move)
    pos -= np.repeat(pos[starts], lengths)
    state = pos % states
    task_ids = train_step * tasks + np.arange(tasks)
    vocab = np.array([text for task in task_ids for text in _world(int(task), states, obs_chars)],
                     dtype=object)
    obs = pd.Categorical.from_codes(task_of * states + state, categories=vocab)
    action_names = np.array([f"go to room {k}" for k in range(8)] + ["open box", "look"],
                            dtype=object)
    act = np.where(invalid, 9, rng.integers(0, 9, size=len(traj)))
    responses = np.array([f"<think>I should {a} next, it looks promising.</think>"
                          f"<action>{a}</action>" for a in action_names], dtype=object)
    last = t == np.repeat(lengths - 1, lengths)
    reward = np.where(success, 10.0, 0.0)[traj]
    return pd.DataFrame({
        "group_id": pd.Categorical.from_codes(task_of, [f"task-{i}" for i in task_ids]),
        "traj_id": pd.Categorical.from_codes(traj % rollouts, [f"r{i}" for i in range(rollouts)]),
        "t": t.astype(np.int64),
        "state_key": obs,
        "observation": obs,
        "action": pd.Categorical.from_codes(act, action_names),
        "response": pd.Categorical.from_codes(act, responses),
        "episode_reward": reward,
        "is_action_valid": ~invalid,
        "step_reward": np.where(last, reward, 0.0),
        "done": last,
        "won": success[traj] & last,
        "env": "bench",
    })


def generate_run(path: Path, steps: int, tasks: int, rollouts: int, max_len: int,
                 obs_chars: int) -> int:
    from loaders import RunWriter

    writer = RunWriter(path, {"env": "bench", "model": "none", "estimator": "g2po",
                              "config": {"success_reward": 10.0, "tasks": tasks,
                                         "rollouts": rollouts, "max_len": max_len}})
    rows = 0
    for s in range(1, steps + 1):
        frame = generate_step(s, tasks, rollouts, max_len, obs_chars)
        writer.write_step(s, frame, {"train/loss": float(np.sin(s))})
        rows += len(frame)
    return rows


def peak_rss_mb() -> float:
    """Peak resident memory of this process. ``VmHWM`` belongs to the process's own address
    space; ``ru_maxrss`` would carry over the parent's peak through fork and exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: Path) -> dict:
    """Runs in a fresh process: the reader's timings and its peak memory."""
    from loaders import open_log

    rss_start = peak_rss_mb()
    start = time.perf_counter()
    log = open_log(path)
    train_steps = log.train_steps()
    groups = {s: log.groups(s) for s in train_steps}
    summary = log.summary()
    t_open = time.perf_counter() - start

    middle = train_steps[len(train_steps) // 2]
    start = time.perf_counter()
    first = log.load_group(middle, groups[middle][0])
    t_first = time.perf_counter() - start
    rng = np.random.default_rng(0)
    times = []
    for _ in range(20):
        s = int(rng.choice(train_steps))
        g = str(rng.choice(groups[s]))
        start = time.perf_counter()
        log.load_group(s, g)
        times.append(time.perf_counter() - start)
    peak = peak_rss_mb()  # browsing only; the step loaded below is for the size estimate
    one_step = log.load_step(middle)
    step_bytes = int(one_step.memory_usage(deep=True).sum())
    return {
        "train_steps": len(train_steps),
        "groups": sum(len(g) for g in groups.values()),
        "rows": int(summary["n_steps"].sum()),
        "mean_reward_first": float(summary["mean_reward"].iloc[0]),
        "open_list_summary_s": t_open,
        "load_group_first_s": t_first,
        "load_group_median_s": float(np.median(times)),
        "load_group_max_s": float(np.max(times)),
        "group_rows": len(first),
        "in_memory_bytes_estimate": step_bytes * len(train_steps),
        "rss_after_imports_mb": rss_start,
        "peak_rss_mb": peak,
    }


def _disk_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def add_run_options(parser: argparse.ArgumentParser, dir_help: str) -> None:
    """The shape of the generated run (the ALFWorld-recipe scale by default), as every run
    benchmark takes it."""
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--max-len", type=int, default=50)
    parser.add_argument("--obs-chars", type=int, default=500)
    parser.add_argument("--dir", type=Path, help=dir_help)
    parser.add_argument("--keep", action="store_true", help="keep the generated run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser, "write the run here (default: a temp dir)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0

    root = Path(tempfile.mkdtemp(prefix="g2po-bench-")) if args.dir is None else args.dir
    run = root / "run" if args.dir is None else root
    try:
        start = time.perf_counter()
        rows = generate_run(run, args.steps, args.tasks, args.rollouts, args.max_len,
                            args.obs_chars)
        t_gen = time.perf_counter() - start
        result = subprocess.run([sys.executable, __file__, "--measure", str(run)],
                                check=True, capture_output=True, text=True)
        m = json.loads(result.stdout.strip().splitlines()[-1])
        disk = _disk_size(run)
        print(f"run: {args.steps} training steps x {args.tasks} tasks x {args.rollouts} "
              f"rollouts x up to {args.max_len} steps, observations ~{args.obs_chars} chars")
        print(f"  step rows                            {rows:>8,}")
        print(f"  groups                               {m['groups']:>8,}")
        print(f"  generated + written in               {t_gen:>8.1f} s")
        print(f"  size on disk                         {disk / 2**20:>8.1f} MiB")
        print(f"  size in memory (whole run, est.)     "
              f"{m['in_memory_bytes_estimate'] / 2**20:>8.0f} MiB")
        rows_in_group = f"load one group ({m['group_rows']} rows), first"
        print(f"  open + list steps/groups + summaries {m['open_list_summary_s']:>8.3f} s"
              "   (target <= 3 s)")
        print(f"  {rows_in_group:<37}{m['load_group_first_s']:>8.3f} s   (target <= 0.2 s)")
        print(f"  load one group, median / max of 20   {m['load_group_median_s']:>8.3f} / "
              f"{m['load_group_max_s']:.3f} s")
        print(f"  peak RSS of the reader               {m['peak_rss_mb']:>8.0f} MiB"
              f"   (of which imports: {m['rss_after_imports_mb']:.0f} MiB)")
        assert m["rows"] == rows, "summaries disagree with the rows written"
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.keep:
            print(f"run kept at {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
