"""Benchmark: the pages that look at a whole run over training, on the loaders' scale run.

Writes the run of ``scripts/bench_loaders.py`` (200 training steps x 16 tasks x 8 rollouts x up
to 50 steps, ~1.2 M step rows, observations of ~500 characters), with two changes a state's
history needs: each task keeps its observations at every training step and is named by a
``task`` column (its group id still changes every step, as in verl), and every training step
logs ~40 training metrics in the usual namespaces (``actor/``, ``adv/``, ``g2po/``,
``timing_s/``, ``val-core/``, …). Then, in a fresh process, it measures:

- training curves: read ``metrics.jsonl``, group the scalars, build the series and the figure
  of 6 metrics (smoothed), as the page does; and the whole page's script run (AppTest, the
  sidebar included), first (cold caches) and again (warm);
- a state's history over all 200 training steps: match the task across steps from the
  footers, read one group per step, one G2PO call, the four figures; and the page's script
  run, first and again.

Target: each page draws in <= 1 s. Usage: ``python scripts/bench_history.py [--dir DIR]
[--keep]`` (``--measure DIR`` measures an existing run).
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

import numpy as np

from g2po.outcomes import OutcomeRule

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):  # the project, and bench_loaders beside this one
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
METRICS = ["rollout/success_rate", "actor/pg_loss", "actor/kl_loss", "actor/grad_norm",
           "adv/ec/std", "g2po/td_error_abs_mean"]


def training_metrics(step: int, rng: np.random.Generator) -> dict[str, float]:
    """~40 scalars a trainer logs per step, in its namespaces."""
    decay = np.exp(-step / 80)
    out = {f"actor/{k}": float(v) for k, v in {
        "pg_loss": 0.1 * decay + 0.02 * rng.normal(), "kl_loss": 0.001 * step,
        "ppo_kl": 1e-4 * rng.random(), "pg_clipfrac": 0.05 * rng.random(),
        "grad_norm": 1 + rng.random(), "lr": 1e-6, "entropy": 2 - step / 200}.items()}
    for part in ("total", "ep", "nc", "ec"):
        for stat in ("mean", "std", "min", "max"):
            out[f"adv/{part}/{stat}"] = float(rng.normal())
    for name in ("merge_rate", "singleton_node_share", "td_error_abs_mean", "nodes_per_group",
                 "invalid_rate"):
        out[f"g2po/{name}"] = float(rng.random())
    for name in ("gen", "update_actor", "ref", "adv", "step"):
        out[f"timing_s/{name}"] = float(5 * rng.random())
    if step % 10 == 0:
        out["val-core/bench/reward/mean@1"] = float(step / 200 + 0.05 * rng.normal())
    out["response_length/mean"] = float(200 + 20 * rng.normal())
    return out


def generate_run(path: Path, steps: int, tasks: int, rollouts: int, max_len: int,
                 obs_chars: int) -> int:
    import bench_loaders as bench

    from loaders import RunWriter

    states = 40
    vocab = [text for task in range(tasks) for text in bench._world(task, states, obs_chars)]
    writer = RunWriter(path, {"env": "bench", "model": "none", "estimator": "g2po",
                              "config": {"success_reward": 10.0}})
    rng = np.random.default_rng(0)
    rows = 0
    for s in range(1, steps + 1):
        frame = bench.generate_step(s, tasks, rollouts, max_len, obs_chars, states)
        stable = frame["state_key"].cat.rename_categories(vocab)  # the same words every step
        local = frame["group_id"].cat.codes.to_numpy()
        frame = frame.assign(state_key=stable, observation=stable,
                             task=np.array([f"task-{k}" for k in range(tasks)])[local])
        writer.write_step(s, frame, training_metrics(s, rng))
        rows += len(frame)
    return rows


def _app_run(page: str, run: Path, warm: Path, repeat: int = 2) -> list[float]:
    """Seconds of the page's script runs in one AppTest session: first (cold caches), then
    again. What a server pays once, at its start, is paid beforehand by the same page on a
    tiny run (``warm``): AppTest's scan of every installed package for components (~3 s here),
    Streamlit's first-use imports (its emoji table …) and the app's page modules."""
    from streamlit.testing.v1 import AppTest

    from tests.app.builders import entry

    AppTest.from_function(entry, kwargs={"page": page, "argv": ["--log", str(warm)]},
                          default_timeout=120).run()
    at = AppTest.from_function(entry, kwargs={"page": page, "argv": ["--log", str(run),
                                                                     "--refresh", "0"]},
                               default_timeout=120)
    times = []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        at.run()
        times.append((time.perf_counter() - start, time.process_time() - cpu))
        if at.exception:
            raise RuntimeError(f"{page}: {at.exception}")
    return times


def measure(run: Path) -> dict:
    """Runs in a fresh process. Modules are imported first (the app's server imports them at
    start, see ``app/main.py``), so the figures are the pages' own work on cold caches."""
    import plotly.graph_objects  # noqa: F401
    import streamlit.testing.v1  # noqa: F401

    import app.shell  # noqa: F401
    import app.views.curves  # noqa: F401
    import app.views.state_history  # noqa: F401
    import loaders
    from app.charts import RUN_PALETTE, history_figure, metric_figure
    from g2po.analysis.history import history_of, metric_namespaces, metric_series, state_table
    from loaders.across_steps import load_groups_coded, task_index

    out: dict = {}
    log = loaders.open_log(run)
    cpu = time.process_time()
    start = time.perf_counter()
    metrics = log.metrics()
    groups = metric_namespaces(metrics)
    series = metric_series({"bench": metrics}, METRICS, smoothing=0.6)
    figures = [metric_figure(series, m, {"bench": RUN_PALETTE[0]}, smoothed=True)[0]
               for m in METRICS]
    payload = sum(len(f.to_json()) for f in figures)
    out["curves_compute_s"] = time.perf_counter() - start
    out["curves_compute_cpu_s"] = time.process_time() - cpu
    out["n_metrics"] = sum(len(v) for v in groups.values())
    out["n_namespaces"] = len(groups)
    out["curves_json_bytes"] = payload

    cpu = time.process_time()
    start = time.perf_counter()
    index = task_index(log)
    out["task_index_s"] = time.perf_counter() - start
    task = index.tasks()[0]
    pairs = index.groups_of(task)
    start = time.perf_counter()
    steps, keys = load_groups_coded(log, zip(pairs["train_step"], pairs["group_id"],
                                             strict=True))
    t_load = time.perf_counter() - start
    table = state_table(steps, keys, rule=OutcomeRule())
    key = str(table["key"].iloc[0])  # the most visited state of the first step: the start
    history = history_of(table, key)
    figs = [history_figure(history, {"visits": "visits"}, "v", "bars"),
            history_figure(history, {"value": "V"}, "V"),
            history_figure(history, {"value_var": "var"}, "var"),
            history_figure(history, {"adv_mean": "A", "adv_nc_mean": "A^NC"}, "A")]
    for f in figs:
        f.to_json()
    out["history_load_s"] = t_load
    out["history_compute_s"] = time.perf_counter() - start - t_load
    out["history_total_s"] = out["task_index_s"] + time.perf_counter() - start
    out["history_total_cpu_s"] = time.process_time() - cpu
    out["history_steps"] = int(len(history))
    out["history_rows"] = int(len(steps))
    out["history_reached"] = int((history["visits"] > 0).sum())

    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        generate_run(warm, 2, 2, 4, 10, 100)
        out["curves_page_s"] = _app_run("curves", run, warm)
        out["history_page_s"] = _app_run("state_history", run, warm)
    return out


def _page_line(times: list[list[float]]) -> str:
    (wall0, cpu0), (wall1, cpu1) = times[0], times[1]
    return (f"  page script run, first / again          {wall0:>7.3f} / {wall1:.3f} s   "
            f"(CPU {cpu0:.3f} / {cpu1:.3f} s; target <= 1 s)")


def main(argv: list[str] | None = None) -> int:
    import bench_loaders

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_loaders.add_run_options(parser, "write the run here (default: a temp dir)")
    parser.add_argument("--measure", type=Path, help="measure an existing run only")
    args = parser.parse_args(argv)

    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    root = Path(tempfile.mkdtemp(prefix="g2po-bench-")) if args.dir is None else args.dir
    run = root / "run" if args.dir is None else root
    try:
        start = time.perf_counter()
        if (run / "run.json").exists():  # --dir of an earlier --keep: measure it again
            import loaders

            rows = int(loaders.open_log(run).summary()["n_steps"].sum())
        else:
            rows = generate_run(run, args.steps, args.tasks, args.rollouts, args.max_len,
                                args.obs_chars)
        t_gen = time.perf_counter() - start
        result = subprocess.run([sys.executable, __file__, "--measure", str(run)], check=True,
                                capture_output=True, text=True, cwd=ROOT)
        m = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"run: {args.steps} training steps x {args.tasks} tasks x {args.rollouts} rollouts "
              f"x up to {args.max_len} steps: {rows:,} step rows (written in {t_gen:.0f} s)")
        print(f"training curves: {m['n_metrics']} metrics in {m['n_namespaces']} namespaces")
        print(f"  read + group + series + {len(METRICS)} smoothed figures "
              f"{m['curves_compute_s']:>7.3f} s   (CPU {m['curves_compute_cpu_s']:.3f} s)")
        print(_page_line(m["curves_page_s"]))
        print(f"state over training: one state of one task over {m['history_steps']} training "
              f"steps ({m['history_rows']:,} rows read, reached at {m['history_reached']})")
        print(f"  match the task across steps (footers)   {m['task_index_s']:>7.3f} s")
        print(f"  read one group per step                 {m['history_load_s']:>7.3f} s")
        print(f"  G2PO over all of them + 4 figures       {m['history_compute_s']:>7.3f} s")
        print(f"  total                                   {m['history_total_s']:>7.3f} s   "
              f"(CPU {m['history_total_cpu_s']:.3f} s)")
        print(_page_line(m["history_page_s"]))
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.keep:
            print(f"run kept at {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
