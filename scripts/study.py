"""The study of docs/study.md: GRPO, GiGPO and G2PO, each with the invalid-action penalty
p = 0.1 and with p = 0, five paired seeds, the tiny model on a TextWorld game with dead ends
(``textworld:coin_collector-level102``), success measured on held-out games.

Every run is a plain ``g2po train --backend local`` (resumable: rerunning the script continues
unfinished runs and skips finished ones), followed by a held-out evaluation of its last
checkpoint (``heldout.json`` in the run directory); the initial model is evaluated once per seed
(``init-sS/heldout.json``). The report reads the run directories with the loaders, as the app
does, and asks ``g2po triage`` for its view of every run.

Usage (from the repository root)::

    nohup nice -n 19 .venv/bin/python scripts/study.py --out runs/study > /tmp/study.log 2>&1 &
    .venv/bin/python scripts/study.py --out runs/study --report-only     # tables and figure
    .venv/bin/python scripts/study.py --evaluate runs/study/g2po-s0 --seed 0  # one evaluation

The report writes ``docs/study/results.csv`` (one row per run and update),
``docs/study/heldout.csv`` (one row per run), ``docs/study/triage.csv`` (one row per run),
``docs/study/summary.md`` (the tables) and ``docs/study/success.png`` (the figure).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: Arm label -> (estimator, invalid-action penalty p). ``grpo_steps`` is GRPO as verl-agent
#: trains it (one row per step, score R - p * invalid normalised over the group's rows), the
#: GRPO that takes the penalty; the library's trajectory-level ``grpo`` has none.
ARMS = {
    "grpo": ("grpo_steps", 0.1),
    "gigpo": ("gigpo", 0.1),
    "g2po": ("g2po", 0.1),
    "grpo_p0": ("grpo_steps", 0.0),
    "gigpo_p0": ("gigpo", 0.0),
    "g2po_p0": ("g2po", 0.0),
}
SEEDS = (0, 1, 2, 3, 4)
#: The training settings every arm shares (everything else is TrainConfig's default).
SETTINGS = {
    "env": "textworld:coin_collector-level102",
    "model": "tiny",
    "total_steps": 30,
    "max_steps": 8,
    "tasks_per_step": 4,
    "rollouts_per_task": 8,
    "lr": 1e-3,
}
#: Training games (task seeds 0-15), set as a configuration override.
TASK_POOL = 16
#: Held-out games: task seeds HELDOUT_SEED .. HELDOUT_SEED + HELDOUT_TASKS - 1, never trained on.
HELDOUT_SEED, HELDOUT_TASKS, HELDOUT_ROLLOUTS = 1000, 32, 4
#: Updates averaged at the end of a run for the training-success column.
LAST = 10
SMOOTH = 3


def run_dir(root: Path, arm: str, seed: int) -> Path:
    return root / f"{arm}-s{seed}"


def command(out: Path, arm: str, seed: int, settings: dict) -> list[str]:
    """The ``g2po train`` command of one run."""
    estimator, penalty = ARMS[arm]
    cmd = [sys.executable, "-m", "g2po", "train", "--backend", "local",
           "--estimator", estimator, "--seed", str(seed), "--out", str(out),
           "--threads", "1", "--no-progress"]
    for key, value in settings.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    return cmd + [f"task_pool={TASK_POOL}", f"invalid_penalty={penalty}"]


def evaluate(model: str | Path, seed: int, settings: dict) -> dict:
    """Success of ``model`` (a checkpoint folder, or ``tiny``: the initial model) on the
    held-out games, each played HELDOUT_ROLLOUTS times at the training temperature."""
    import torch
    from transformers.utils import logging as hf_logging

    from g2po.envs import env_family
    from g2po.rollouts import collect_groups
    from g2po.trainers.models import load_policy

    hf_logging.disable_progress_bar()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    family = env_family(settings["env"])
    policy = load_policy(str(model), env=settings["env"], device="cpu")
    steps, stats = collect_groups(
        family, family.tasks(HELDOUT_TASKS, HELDOUT_SEED), policy,
        group_size=HELDOUT_ROLLOUTS, max_steps=settings["max_steps"])
    per_traj = steps.groupby("traj_id").agg(won=("won", "max"), length=("t", "size"))
    won = per_traj["won"].astype(bool)
    return {"model": str(model), "seed": seed, "episodes": len(per_traj),
            "success": float(won.mean()),
            "invalid_rate": float(1.0 - steps["is_action_valid"].mean()),
            "length": float(per_traj["length"].mean()),
            "length_won": float(per_traj.loc[won, "length"].mean()) if won.any() else None,
            "env_errors": len(stats["env_errors"])}


def _finished(out: Path, settings: dict) -> bool:
    from loaders import open_run

    return (out / "run.json").is_file() and \
        len(open_run(out).train_steps()) >= settings["total_steps"]


def _last_checkpoint(out: Path) -> Path:
    from g2po.trainers.checkpoint import checkpoint_folder, latest_checkpoint

    found = latest_checkpoint(checkpoint_folder(out))
    if found is None:
        raise SystemExit(f"{out}: no checkpoint to evaluate")
    return found.path


def _eval_command(target: Path, seed: int, model: str | None = None) -> list[str]:
    cmd = [sys.executable, __file__, "--evaluate", str(target), "--seed", str(seed)]
    return cmd + (["--model", model] if model else [])


def jobs_todo(root: Path, settings: dict, arms, seeds) -> list[tuple[str, list[list[str]]]]:
    """(name, commands) of every job left: per seed the initial model's evaluation, then each
    arm's training and evaluation (seed by seed, so a cut study has whole seeds)."""
    todo = []
    for seed in seeds:
        init = root / f"init-s{seed}"
        if not (init / "heldout.json").is_file():
            todo.append((init.name, [_eval_command(init, seed, settings["model"])]))
        for arm in arms:
            out = run_dir(root, arm, seed)
            if (out / "heldout.json").is_file():
                continue
            cmds = [] if _finished(out, settings) else [command(out, arm, seed, settings)]
            todo.append((out.name, cmds + [_eval_command(out, seed)]))
    return todo


def run_all(root: Path, jobs: int, settings: dict, arms, seeds) -> None:
    """Run every job not finished yet, ``jobs`` at a time (each a chain of commands)."""
    todo = jobs_todo(root, settings, arms, seeds)
    if todo:  # games and the model once, before parallel jobs would race to make them
        from g2po.envs import env_family
        from g2po.trainers.models import model_path

        family = env_family(settings["env"])
        family.tasks(TASK_POOL, 0)
        family.tasks(HELDOUT_TASKS, HELDOUT_SEED)
        model_path(settings["model"], env=settings["env"])
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    running: list[tuple[subprocess.Popen, str, list[list[str]]]] = []
    while todo or running:
        while todo and len(running) < jobs:
            name, cmds = todo.pop(0)
            print(f"{time.strftime('%H:%M:%S')} start {name}: "
                  f"{' '.join(cmds[0][1:])}", flush=True)
            running.append((_start(root, name, cmds[0], env), name, cmds[1:]))
        time.sleep(5)
        for item in list(running):
            proc, name, rest = item
            if proc.poll() is None:
                continue
            running.remove(item)
            if proc.returncode != 0:
                print(f"{time.strftime('%H:%M:%S')} FAILED {name}: exit {proc.returncode} "
                      f"(see {root / (name + '.log')})", flush=True)
            elif rest:
                running.append((_start(root, name, rest[0], env), name, rest[1:]))
            else:
                print(f"{time.strftime('%H:%M:%S')} done  {name}", flush=True)


def _start(root: Path, name: str, cmd: list[str], env: dict) -> subprocess.Popen:
    with open(root / f"{name}.log", "a") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)


def collect(root: Path, arms, seeds) -> pd.DataFrame:
    """One row per run and update: success rate, invalid rate, mean length, seconds."""
    from loaders import open_run

    frames = []
    for arm in arms:
        for seed in seeds:
            out = run_dir(root, arm, seed)
            if not (out / "run.json").is_file():
                continue
            run = open_run(out)
            metrics = run.metrics()
            cols = [c for c in ("train_step", "time/step_s", "time/rollout_s", "time/update_s",
                                "time/advantages_s") if c in metrics.columns]
            frame = run.summary().merge(metrics[cols], on="train_step", how="left")
            frame.insert(0, "seed", seed)
            frame.insert(0, "arm", arm)
            frames.append(frame)
    if not frames:
        raise SystemExit(f"{root}: no study runs found")
    return pd.concat(frames, ignore_index=True)


def collect_heldout(root: Path, arms, seeds) -> pd.DataFrame:
    """One row per evaluated model: the initial model per seed (arm ``init``) and every run."""
    rows = []
    for arm in ("init", *arms):
        for seed in seeds:
            path = root / f"{arm}-s{seed}" / "heldout.json"
            if path.is_file():
                rows.append({"arm": arm, **json.loads(path.read_text())})
    return pd.DataFrame(rows)


def triage_view(root: Path, arms, seeds) -> pd.DataFrame:
    """Per run, what ``g2po triage`` says: the share of groups it flags (a defect of their own:
    ``n_alarms`` > 0, a check that has a severity on the group and is not said once for the
    run; such a check keeps a small, weighed severity, so ``severity`` > 0 alone would count
    it), over the whole run and over its last LAST updates, its most common reason, and the
    alarms it says once for the whole run (firing on most groups)."""
    rows = []
    for arm in arms:
        estimator = "grpo" if ARMS[arm][0].startswith("grpo") else "g2po"
        for seed in seeds:
            out = run_dir(root, arm, seed)
            if not (out / "run.json").is_file():
                continue
            text = subprocess.run(
                [sys.executable, "-m", "g2po", "triage", str(out), "--format", "csv",
                 "--estimator", estimator, "--param", f"penalty={ARMS[arm][1]}"],
                capture_output=True, text=True, check=True).stdout
            groups = pd.read_csv(io.StringIO(text))
            run_wide = groups["run_wide"].astype(object).fillna("").astype(str)
            flagged = groups["n_alarms"] > 0
            late = groups["train_step"] > groups["train_step"].max() - LAST
            reasons = groups["reason"].astype(object).fillna("").astype(str)
            said_once = sorted({k.strip() for kinds in run_wide for k in kinds.split(",")
                                if k.strip()})
            kind = reasons[flagged].str.split(":").str[0].value_counts()
            rows.append({"arm": arm, "seed": seed, "groups": len(groups),
                         "flagged": float(flagged.mean()),
                         "flagged_last": float(flagged[late].mean()),
                         "top_reason": kind.index[0] if len(kind) else "",
                         "top_reason_share": float(kind.iloc[0] / len(groups))
                         if len(kind) else 0.0,
                         "run_wide": " ".join(said_once)})
    return pd.DataFrame(rows)


def _pm(values: pd.Series, scale: float = 100) -> str:
    values = values.dropna() * scale
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.1f} ± {sd:.1f}"


def _paired(heldout: pd.DataFrame, a: str, b: str) -> str:
    """Held-out success of arm ``a`` minus arm ``b`` on the same seeds: mean ± sd (points),
    seeds where a > b / a < b, and the two-sided sign-test p (ties dropped)."""
    from math import comb

    wide = heldout.pivot_table(index="seed", columns="arm", values="success")
    if a not in wide or b not in wide:
        return f"| {a} − {b} | – | – | – |"
    diff = (wide[a] - wide[b]).dropna() * 100
    up, down = int((diff > 0).sum()), int((diff < 0).sum())
    n = up + down
    p = min(1.0, 2 * sum(comb(n, k) for k in range(min(up, down) + 1)) / 2 ** n) if n else 1.0
    sd = diff.std(ddof=1) if len(diff) > 1 else 0.0
    return (f"| {a} − {b} | {diff.mean():+.1f} ± {sd:.1f} | {up} / {down} of {len(diff)} | "
            f"{p:.3f} |")


#: The comparisons docs/study.md declares before the run.
COMPARISONS = (("g2po", "grpo"), ("g2po", "gigpo"), ("gigpo", "grpo"),
               ("grpo_p0", "grpo"), ("gigpo_p0", "gigpo"), ("g2po_p0", "g2po"),
               ("g2po_p0", "grpo_p0"), ("g2po_p0", "gigpo_p0"), ("gigpo_p0", "grpo_p0"))


def tables(results: pd.DataFrame, heldout: pd.DataFrame, triage: pd.DataFrame,
           arms) -> str:
    """The summary tables in markdown (mean ± sd over seeds; paired differences)."""
    lines = ["| arm | seeds | held-out success (%) | held-out invalid (%) | held-out length "
             "(won episodes) | training success, last 10 updates (%) | triage: groups "
             "flagged, all / last 10 updates (%) | triage: said once for the run (runs) |",
             "|---|---|---|---|---|---|---|---|"]
    for arm in ("init", *arms):
        ho = heldout[heldout["arm"] == arm]
        if ho.empty:
            continue
        runs = results[results["arm"] == arm]
        if runs.empty:
            train = "–"
        else:
            last = runs["train_step"].max() - LAST
            train = _pm(runs[runs["train_step"] > last].groupby("seed")["success_rate"].mean())
        tri = triage[triage["arm"] == arm] if not triage.empty else triage
        flagged = f"{_pm(tri['flagged'])} / {_pm(tri['flagged_last'])}" if len(tri) else "–"
        once = tri["run_wide"].fillna("").str.split().explode().dropna() if len(tri) else None
        once = ", ".join(f"{k} ({n})" for k, n in once[once != ""].value_counts()
                         .sort_index().items()) if once is not None and len(once) else "–"
        lines.append(f"| {arm} | {len(ho)} | {_pm(ho['success'])} | {_pm(ho['invalid_rate'])} "
                     f"| {_pm(ho['length_won'], 1)} | {train} | {flagged} | {once} |")
    lines += ["", "| paired difference (held-out success) | mean ± sd (points) | seeds a > b / "
              "a < b | sign test p |", "|---|---|---|---|"]
    lines += [_paired(heldout, a, b) for a, b in COMPARISONS]
    return "\n".join(lines)


def plot(results: pd.DataFrame, arms, path: Path) -> None:
    """Training success and invalid-action rate against updates: mean over seeds (smoothed over
    SMOOTH updates) with the seeds' range shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"grpo": "#7f7f7f", "gigpo": "#1f77b4", "g2po": "#d62728"}
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), constrained_layout=True)
    panels = ((axes[0], "success_rate", "success rate (training rollouts) (%)", 100),
              (axes[1], "invalid_rate", "invalid-action rate (%)", 100),
              (axes[2], "mean_length", "episode length (steps; cut at max_steps)", 1))
    for ax, column, label, scale in panels:
        for arm in arms:
            runs = results[results["arm"] == arm]
            if runs.empty:
                continue
            wide = runs.pivot_table(index="train_step", columns="seed", values=column)
            smooth = wide.rolling(SMOOTH, min_periods=1).mean()
            mean = smooth.mean(axis=1)
            color = colors[arm.removesuffix("_p0")]
            ax.plot(mean.index, mean.to_numpy() * scale, label=f"{arm} ({wide.shape[1]} seeds)",
                    color=color, linewidth=2, linestyle="--" if arm.endswith("_p0") else "-")
            ax.fill_between(mean.index, smooth.min(axis=1) * scale,
                            smooth.max(axis=1) * scale, color=color, alpha=0.1, linewidth=0)
        ax.set_xlabel("update (training step)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"tiny model on {SETTINGS['env']}: mean of seeds, {SMOOTH}-update moving "
                 "average, shaded: range over seeds; dashed: p = 0", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(root: Path, docs: Path, arms, seeds) -> str:
    results = collect(root, arms, seeds)
    heldout = collect_heldout(root, arms, seeds)
    triage = triage_view(root, arms, seeds)
    out = docs / "study"
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "results.csv", index=False, float_format="%.6g")
    heldout.to_csv(out / "heldout.csv", index=False, float_format="%.6g")
    triage.to_csv(out / "triage.csv", index=False, float_format="%.6g")
    text = tables(results, heldout, triage, arms)
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    plot(results, arms, out / "success.png")
    timing = results[[c for c in results.columns if c.startswith("time/")]].mean()
    print(text)
    print("mean seconds per update:", timing.round(3).to_dict())
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/study", help="folder of the run directories")
    parser.add_argument("--docs", default="docs", help="where study/ (csv, tables, figure) goes")
    parser.add_argument("--jobs", type=int, default=2, help="jobs run at once")
    parser.add_argument("--steps", type=int,
                        help=f"updates per run (default {SETTINGS['total_steps']})")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--report-only", action="store_true", help="no training, report only")
    parser.add_argument("--evaluate", metavar="DIR",
                        help="evaluate one run's last checkpoint on the held-out games "
                             "(with --model: that model), writing DIR/heldout.json")
    parser.add_argument("--model", help="with --evaluate: the model to evaluate")
    parser.add_argument("--seed", type=int, default=0, help="with --evaluate: sampling seed")
    args = parser.parse_args(argv)
    settings = dict(SETTINGS)
    if args.steps:
        settings["total_steps"] = args.steps
    if args.evaluate:
        target = Path(args.evaluate)
        target.mkdir(parents=True, exist_ok=True)
        result = evaluate(args.model or _last_checkpoint(target), args.seed, settings)
        (target / "heldout.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result))
        return 0
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        run_all(root, args.jobs, settings, args.arms, args.seeds)
    report(root, Path(args.docs), args.arms, args.seeds)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
