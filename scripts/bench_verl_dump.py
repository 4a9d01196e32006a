"""Benchmark: a verl rollout dump of a whole run, opened the way the Run overview opens it.

Generates a ``trainer.rollout_data_dir`` dump shaped like verl 0.9.1's agent-loop output
(``_write_generations``: one ``json.dumps(entry, ensure_ascii=False)`` line per agent turn with
``input``, ``output``, ``gts``, ``score``, ``step``, ``uid`` = ``{uid}_{session}_{turn}``, rows
sorted by uid, session and turn; the final score copied onto every turn; no
``is_action_valid``), with prompts in the paper's agent format (Qwen's template decoded without
special tokens: the task, the last two observations and actions, the current observation, ~30
admissible actions), ~2.3 kB a line. Defaults: 150 training steps x 16 tasks x 8 rollouts x
up to 50 turns, about 1 M lines and 2.4 GB. Then, each in a fresh process (so that its peak
memory is the reader's own):

- first open, no cache: open the dump, ``log.summary()``, the groups and task labels of every
  step (what the Run overview and the group picker need) (target <= 5 s);
- later open, the cache built: the same (target <= 0.5 s);
- after one step file changed (a live run adds files; here one is appended to): the same;
- peak resident memory of each, against the size of one step file and of the whole dump;
- ``g2po validate`` of the dump (every line read and checked), in its own process.

Usage: ``python scripts/bench_verl_dump.py [--dir DIR] [--keep] [--repeat N]`` (``--measure
DIR`` measures an existing dump; ``--no-validate`` skips the validate run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_OBJECTS = ("apple", "bread", "butterknife", "cellphone", "creditcard", "cup", "dishsponge",
            "egg", "fork", "kettle", "knife", "ladle", "lettuce", "mug", "pan", "peppershaker",
            "plate", "pot", "potato", "saltshaker", "soapbottle", "spatula", "spoon", "tomato")
_PLACES = ("cabinet", "countertop", "drawer", "fridge", "garbagecan", "microwave", "shelf",
           "sinkbasin", "stoveburner", "toaster", "diningtable", "coffeemachine")
_TASKS = ("pick_and_place", "pick_clean_then_place", "pick_heat_then_place",
          "pick_cool_then_place", "look_at_obj_in_light", "pick_two_obj_and_place")


def _room(rng: np.random.Generator, place: str) -> str:
    things = ", ".join(f"a {rng.choice(_OBJECTS)} {rng.integers(1, 4)}"
                       for _ in range(int(rng.integers(2, 7))))
    return f"You arrive at {place}. On the {place}, you see {things}."


def _world(task_seed: int, rooms: int = 30) -> tuple[str, str, list[str], list[list[str]]]:
    """A task: its name (the ``gts``), its instruction, the observation of each room and
    the admissible actions there."""
    rng = np.random.default_rng(task_seed)
    kind = str(rng.choice(_TASKS))
    obj, place = str(rng.choice(_OBJECTS)), str(rng.choice(_PLACES))
    name = f"{kind}-{obj.title()}-None-{place.title()}-{task_seed % 400}"
    instruction = f"put a {obj} in {place}."
    places = [f"{p} {k}" for p in _PLACES for k in (1, 2, 3)][:rooms]
    observations = [_room(rng, p) for p in places]
    admissible = [[f"go to {p}" for p in places[:24]] +
                  [f"take {rng.choice(_OBJECTS)} {k} from {places[r]}" for k in (1, 2)] +
                  ["inventory", "look", f"examine {places[r]}"] for r in range(rooms)]
    return name, instruction, observations, admissible


def _prompt(instruction: str, observation: str, admissible: list[str],
            history: list[tuple[str, str]]) -> str:
    from g2po.agent_format import build_prompt

    user = build_prompt(instruction, observation, admissible, history)
    return f"system\n{SYSTEM}\nuser\n{user}\nassistant\n"


def step_lines(global_step: int, tasks: int, rollouts: int, max_turns: int,
               seed: int = 0) -> list[bytes]:
    """The lines of one ``{global_step}.jsonl``, as verl writes them."""
    rng = np.random.default_rng([seed, global_step])
    entries: list[tuple[str, int, int, dict]] = []
    for _ in range(tasks):
        task_seed = int(rng.integers(0, 10_000))
        name, instruction, observations, admissible = _world(task_seed)
        uid = str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | int(rng.integers(0, 2**63)),
                            version=4))
        for session in range(rollouts):
            won = bool(rng.random() < 0.4)
            turns = int(rng.integers(max(1, max_turns * 3 // 5), max_turns + 1)) if won \
                else max_turns
            room = 0
            history: list[tuple[str, str]] = []
            for turn in range(turns):
                options = admissible[room]
                action = str(options[int(rng.integers(0, len(options)))])
                thought = " ".join(rng.choice(_OBJECTS, size=int(rng.integers(28, 56))))
                output = f"<think>I should look for the {thought}.</think><action>{action}</action>"
                entries.append((uid, session, turn, {
                    "input": _prompt(instruction, observations[room], options, history),
                    "output": output,
                    "gts": name,
                    "score": 10.0 if won else 0.0,
                    "step": global_step,
                    "uid": f"{uid}_{session}_{turn}",
                }))
                history.append((observations[room], action))
                if action.startswith("go to "):
                    room = int(rng.integers(0, len(observations)))
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    return [(json.dumps(e[3], ensure_ascii=False) + "\n").encode() for e in entries]


def _write_steps(args: tuple[Path, list[int], int, int, int, int]) -> tuple[int, int]:
    folder, steps, tasks, rollouts, max_turns, seed = args
    lines = size = 0
    for s in steps:
        data = step_lines(s, tasks, rollouts, max_turns, seed)
        (folder / f"{s}.jsonl").write_bytes(b"".join(data))
        lines += len(data)
        size += sum(map(len, data))
    return lines, size


def generate_dump(folder: Path, steps: int, tasks: int, rollouts: int, max_turns: int,
                  seed: int = 0, workers: int = 1) -> tuple[int, int]:
    """Write ``1.jsonl`` … ``{steps}.jsonl`` into ``folder``; returns (lines, bytes)."""
    from concurrent.futures import ProcessPoolExecutor

    folder.mkdir(parents=True, exist_ok=True)
    chunks = [(folder, list(range(1 + i, steps + 1, workers)), tasks, rollouts, max_turns, seed)
              for i in range(workers)]
    if workers == 1:
        results = [_write_steps(chunks[0])]
    else:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_write_steps, chunks))
    return sum(r[0] for r in results), sum(r[1] for r in results)


def peak_rss_mb() -> float:
    """Peak resident memory of this process (``VmHWM``: its own, not its parent's)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its finished children (the scan's workers)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def measure(path: Path) -> dict:
    """Runs in a fresh process: what the Run overview and the group picker read, timed."""
    start = time.perf_counter()
    import loaders

    t_import = time.perf_counter() - start
    rss_imports = peak_rss_mb()
    cpu0 = _cpu()
    load0 = os.getloadavg()[0]
    start = time.perf_counter()
    log = loaders.open_log(path)
    steps = log.train_steps()
    summary = log.summary()
    metrics = log.metrics()
    last = steps[-1]
    groups = log.groups(last)
    picker = log.group_summary(last)
    t_open = time.perf_counter() - start
    cpu1 = _cpu()
    reason = log.report.assumed.get("is_action_valid")
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "train_steps": len(steps), "rows": int(summary["n_steps"].sum()),
        "n_traj": int(summary["n_traj"].sum()), "groups_last": len(groups),
        "labels": int(picker["task"].notna().sum()) if "task" in picker.columns else 0,
        "invalid_rate_unknown": bool(summary["invalid_rate"].isna().all()),
        "unknown_reason": reason, "metrics_columns": len(metrics.columns),
        "import_s": t_import, "open_s": t_open,
        "cpu_self_s": cpu1[0] - cpu0[0], "cpu_workers_s": cpu1[1] - cpu0[1],
        "load_before": load0, "load_after": os.getloadavg()[0],
        "rss_imports_mb": rss_imports, "peak_rss_mb": peak_rss_mb(), "worker_peak_rss_mb": kids,
    }


def _fresh(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True,
                          env=env)


def _measure_fresh(path: Path, env: dict) -> dict:
    result = _fresh([__file__, "--measure", str(path)], env)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _validate(path: Path, env: dict) -> dict:
    """``g2po validate`` of the dump in a fresh process: wall time, CPU, peak memory."""
    code = ("import json, resource, sys, time; from g2po.cli import main; t = time.perf_counter();"
            " rc = main(['validate', sys.argv[1]]); s = resource.getrusage(resource.RUSAGE_SELF);"
            " k = resource.getrusage(resource.RUSAGE_CHILDREN);"
            " print(json.dumps({'rc': rc, 'wall_s': time.perf_counter() - t,"
            " 'cpu_s': s.ru_utime + s.ru_stime + k.ru_utime + k.ru_stime,"
            " 'peak_rss_mb': s.ru_maxrss / 1024, 'worker_peak_rss_mb': k.ru_maxrss / 1024}))")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                            text=True, env=env)
    out = json.loads(result.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - start
    out["tail"] = result.stdout.strip().splitlines()[:-1][-6:]
    return out


def _line(label: str, m: dict, target: str) -> str:
    cpu = m["cpu_self_s"] + m["cpu_workers_s"]
    return (f"  {label:<28}{m['open_s']:>7.2f} s   (target {target}; CPU {cpu:.2f} s: this "
            f"process {m['cpu_self_s']:.2f}, workers {m['cpu_workers_s']:.2f}; load "
            f"{m['load_before']:.1f} → {m['load_after']:.1f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=172)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--max-turns", type=int, default=50)
    parser.add_argument("--dir", type=Path, help="write (or reuse) the dump here")
    parser.add_argument("--keep", action="store_true", help="keep the generated dump")
    parser.add_argument("--repeat", type=int, default=1, help="measure this many times")
    parser.add_argument("--no-validate", action="store_true")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0

    root = Path(tempfile.mkdtemp(prefix="g2po-bench-")) if args.dir is None else args.dir
    dump = root / "dump" if args.dir is None else root
    cache = Path(tempfile.mkdtemp(prefix="g2po-bench-cache-"))
    env = {**os.environ, "G2PO_CACHE": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        if not any(dump.glob("*.jsonl")):
            start = time.perf_counter()
            generate_dump(dump, args.steps, args.tasks, args.rollouts, args.max_turns,
                          workers=max(1, min(4, os.cpu_count() or 1)))
            print(f"generated in {time.perf_counter() - start:.0f} s")
        files = sorted(dump.glob("*.jsonl"), key=lambda p: int(p.stem))
        sizes = [p.stat().st_size for p in files]
        print(f"dump: {len(files)} step files, {sum(sizes) / 1e9:.2f} GB, largest file "
              f"{max(sizes) / 2**20:.1f} MiB; {os.cpu_count()} CPUs")
        for run in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            first = _measure_fresh(dump, env)
            later = _measure_fresh(dump, env)
            line = json.loads(files[-1].read_bytes().split(b"\n", 1)[0])
            line["uid"] = "0" * 32 + "_0_0"  # a step file rewritten: one trajectory more
            with open(files[-1], "ab") as f:
                f.write((json.dumps(line, ensure_ascii=False) + "\n").encode())
            changed = _measure_fresh(dump, env)
            with open(files[-1], "rb+") as f:  # and back
                f.truncate(sizes[-1])
            if run == 0:
                print(f"  lines {first['rows']:,}, trajectories {first['n_traj']:,}, "
                      f"steps {first['train_steps']}; last step: {first['groups_last']} groups, "
                      f"{first['labels']} labelled by gts")
                print(f"  invalid-action rate unknown: {first['invalid_rate_unknown']} "
                      f"({first['unknown_reason']})")
                print(f"  imports (once per process)  {first['import_s']:>7.2f} s")
            print(f"run {run + 1}:")
            print(_line("first open (no cache)", first, "<= 5 s"))
            print(_line("later open (cache)", later, "<= 0.5 s"))
            print(_line("one file changed", changed, "~ one file"))
            print(f"  peak RSS: first open {first['peak_rss_mb']:.0f} MiB (imports "
                  f"{first['rss_imports_mb']:.0f}), each worker {first['worker_peak_rss_mb']:.0f}"
                  f" MiB; later open {later['peak_rss_mb']:.0f} MiB")
            assert first["rows"] == later["rows"] == changed["rows"] - 1
        if not args.no_validate:
            v = _validate(dump, env)
            print(f"  g2po validate               {v['wall_s']:>7.1f} s   (rc {v['rc']}, CPU "
                  f"{v['cpu_s']:.1f} s, peak RSS {v['peak_rss_mb']:.0f} MiB, workers "
                  f"{v['worker_peak_rss_mb']:.0f} MiB; process {v['process_s']:.1f} s)")
            for line in v["tail"]:
                print(f"    | {line}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if args.dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.keep:
            print(f"dump kept at {dump}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
