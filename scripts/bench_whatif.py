"""Benchmark: what if the states merged differently (:mod:`g2po.analysis.whatif`,
``g2po whatif``, the What-if merging page).

Measures, each in a fresh process (no import or cache of an earlier measurement helps):

- one group of about 30 states (8 rollouts of up to 40 steps, keys of ~200 characters):
  :func:`what_if` under a second key (a coarser regex; GiGPO's similarity rule), and the
  node edits :func:`merge_nodes` / :func:`split_node`, best and median of ``--repeats``;
- the run-wide table of the run of ``scripts/bench_loaders.py`` (200 training steps x 16
  tasks x 8 rollouts x up to 50 steps, ~1.2 M step rows, observations of ~500 characters):
  :func:`whatif_log` for a candidate key, streamed step by step.

The machine may be shared: every figure comes with the process's CPU time and the load
average. Usage: ``python scripts/bench_whatif.py [--dir DIR] [--keep] [--repeats N]
[--key KEY ...]`` (``--dir`` an existing run, e.g. one kept by ``bench_loaders.py --keep``,
is measured as it is).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):  # the project, and the benchmarks beside this one
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_triage import _clock, _fmt, _since  # noqa: E402 - the same clock and words

#: Keys compared with the run's exact key: a coarser regex (rooms 10-19 merge with room 1 …)
#: and a value-wise one that changes nothing on these keys (the cost of the comparison).
RUN_KEYS = (r"regex:^\[task \d+\] You are in room \d", "normalized")
GROUP_KEYS = (r"regex:^task \d+ room \d", "similarity:0.95")


def thirty_state_group(seed: int = 1):
    """One synthetic group that visits about 30 states."""
    from g2po.synthetic import synthetic_steps

    steps = synthetic_steps(8 * 40, rollouts=8, max_len=40, states_per_task=30,
                            key_chars=200, seed=seed)
    return steps[steps["group_id"] == steps["group_id"].iloc[0]].reset_index(drop=True)


def measure_group(repeats: int) -> dict:
    """Timings of one group's what-ifs, in this (fresh) process."""
    from g2po.analysis.state_graph import state_graph
    from g2po.analysis.whatif import merge_nodes, split_node, what_if
    from g2po.outcomes import OutcomeRule

    steps, rule = thirty_state_group(), OutcomeRule()
    graph = state_graph(steps, rule=rule)
    out = {"rows": len(steps), "states": graph.n_states}
    fanout = graph.steps.groupby("node")["next_node"].nunique()
    jobs = {key: (lambda key=key: what_if(steps, key, rule=rule)) for key in GROUP_KEYS}
    jobs["merge_nodes(0, 1)"] = lambda: merge_nodes(graph, 0, 1, rule=rule)
    jobs["split_node"] = lambda: split_node(graph, int(fanout.idxmax()), rule=rule)
    for name, job in jobs.items():
        times = []
        for _ in range(repeats):
            start = _clock()
            result = job()
            times.append(_since(start))
        out[name] = {"times": times, **result.summary()}
    return out


def measure_run(path: Path, key: str) -> dict:
    """The run-wide table of one key, in this (fresh) process."""
    import loaders
    from g2po.analysis.whatif import whatif_log

    log = loaders.open_log(path)
    seen: list[int] = []
    start = _clock()
    table = whatif_log(log, key, progress=lambda done, total: seen.append(done))
    out = _since(start)
    out.update(rows=int(table["steps"].sum()), groups=len(table),
               train_steps=table["train_step"].nunique(), progress_calls=len(seen),
               groups_changed=int((table["changed"] > 0).sum()),
               sign_flips=int(table["sign_flips"].sum()))
    return out


def _run(*args: str) -> dict:
    result = subprocess.run([sys.executable, __file__, "--measure", *args], check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    import bench_loaders

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_loaders.add_run_options(parser, "an existing run, or where to write one")
    parser.add_argument("--repeats", type=int, default=9,
                        help="repeats of each group measurement (best and median shown)")
    parser.add_argument("--runs", type=int, default=2,
                        help="run-wide measurements of each key (each a fresh process)")
    parser.add_argument("--key", action="append", help="run-wide candidate keys (repeat; "
                                                       f"default: {', '.join(RUN_KEYS)})")
    parser.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure:
        kind, *rest = args.measure
        result = measure_group(int(rest[0])) if kind == "group" else \
            measure_run(Path(rest[0]), rest[1])
        print(json.dumps(result))
        return 0

    group = _run("group", str(args.repeats))
    print(f"one group: {group['rows']} step rows, {group['states']} states "
          f"(exact key), best / median of {args.repeats}")
    for name in (*GROUP_KEYS, "merge_nodes(0, 1)", "split_node"):
        m = group[name]
        wall = sorted(t["wall_s"] for t in m["times"])
        print(f"  {name:<30} {wall[0]:6.3f} / {wall[len(wall) // 2]:.3f} s   "
              f"({m['changed']} steps changed, {m['sign_flips']} sign flips, "
              f"nodes {m['nodes_before']} → {m['nodes_after']}; first: "
              f"{_fmt(m['times'][0])})")

    root = Path(tempfile.mkdtemp(prefix="g2po-bench-whatif-"))
    run = args.dir if args.dir is not None else root / "run"
    try:
        if not (run / "run.json").exists():
            start = time.perf_counter()
            bench_loaders.generate_run(run, args.steps, args.tasks, args.rollouts,
                                       args.max_len, args.obs_chars)
            print(f"generated the run in {time.perf_counter() - start:.1f} s: {run}")
        for key in args.key or RUN_KEYS:
            results = [_run("run", str(run), key) for _ in range(args.runs)]
            first = results[0]
            print(f"whole run, key {key!r} against 'exact': {first['rows']:,} step rows, "
                  f"{first['groups']:,} groups, {first['train_steps']} training steps; "
                  f"{first['groups_changed']:,} groups changed, {first['sign_flips']:,} "
                  "sign flips")
            for i, m in enumerate(results):
                print(f"  #{i + 1}  {_fmt(m)}")
    finally:
        if args.dir is None and args.keep:
            print(f"run kept at {run}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
