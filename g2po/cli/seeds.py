"""``g2po seeds``: run K seeds of a preset per estimator, then Table 1's summary.

A preset is either a configuration file of the local trainer (YAML/JSON, as ``g2po train
--config``) or a shell script of the verl backend (``examples/verl/*.sh``, which take ``OUT``
from the environment and Hydra overrides as arguments). Each (estimator, seed) trains into
``OUT/<estimator>-s<seed>`` (its validation run beside it, ``…-s<seed>-val``); a run that is
already there resumes (finished ones end at once). The summary reads each run's last
validation (:func:`g2po.evaluation.evaluation_metrics` on its rows, under the run's recorded
outcome rule), or with ``--best`` its best validation by success, and writes
``OUT/results.csv`` (one row per run), ``OUT/summary.csv`` (mean, std, standard error, seed
count and one run's validation noise per estimator and metric) and ``OUT/summary.md`` (Table
1's layout: mean ± std (SE) in percent per task type and overall, WebShop's score and success;
under each table the validation noise and, with ``--best``, how far the best of N validations
is biased high), and prints the markdown.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

__all__ = ["add_parser", "run_name", "parse_run_name", "seed_results", "write_summary"]

_NAME_RE = re.compile(r"^(?P<estimator>.+)-s(?P<seed>\d+)$")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "seeds", help="train K seeds of a preset per estimator and summarise as Table 1",
        description="Train K seeds of a preset for each estimator, then write Table 1's "
        "summary (validation success per ALFWorld task type and overall, WebShop's score; "
        "mean ± std over seeds) to OUT/summary.md and OUT/summary.csv. Example: g2po seeds "
        "--preset my_alfworld.yaml --estimators g2po,grpo,gigpo --seeds 5 --out runs/table1. "
        "The preset needs validation: val_tasks > 0 (local) or trainer.test_freq > 0 (verl).")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="overrides for every run: TrainConfig keys (a .yaml/.json preset) or "
                   "Hydra overrides (a .sh preset)")
    p.add_argument("--preset", help="a local trainer configuration (.yaml, .yml, .json) or a "
                   "verl launch script (.sh, e.g. examples/verl/alfworld_g2po_qwen2.5_1.5b.sh)")
    p.add_argument("--out", required=True, help="folder of the runs and the summary")
    p.add_argument("--seeds", type=int, default=3, help="seeds per estimator (default 3)")
    p.add_argument("--first-seed", type=int, default=0, help="the first seed (default 0)")
    p.add_argument("--estimators", default="g2po",
                   help="comma-separated estimators (default g2po), e.g. g2po,grpo,gigpo")
    p.add_argument("--summary-only", action="store_true",
                   help="train nothing: summarise the runs already in --out")
    p.add_argument("--best", action="store_true",
                   help="summarise each run's best validation by success instead of its last "
                   "(as papers often report; the summary says how far that is biased high)")
    p.set_defaults(func=_seeds, intermixed="overrides")


def run_name(estimator: str, seed: int) -> str:
    """The folder of one run: ``g2po-s3``."""
    return f"{estimator}-s{seed}"


def parse_run_name(name: str) -> tuple[str, int] | None:
    """``(estimator, seed)`` of a run folder named by :func:`run_name`, else None.

    >>> parse_run_name("gigpo-s12"), parse_run_name("g2po-s3-val"), parse_run_name("notes")
    (('gigpo', 12), None, None)
    """
    m = _NAME_RE.match(name)
    return (m["estimator"], int(m["seed"])) if m else None


def _train_local(preset: Path, overrides: list[str], estimator: str, seed: int,
                 out: Path) -> None:
    from g2po.trainers import train
    from g2po.trainers.config import load_config

    config = load_config(preset, [*overrides, f"estimator={estimator}", f"seed={seed}"])
    if not config.val_tasks:
        raise ValueError(f"{preset}: the preset validates nothing (val_tasks = 0); set "
                         "val_tasks (and val_env) so that each run has a validation to summarise")
    train(config, out, log=lambda line: print(line, file=sys.stderr, flush=True))


def _train_verl(preset: Path, overrides: list[str], estimator: str, seed: int,
                out: Path) -> None:
    import os
    import subprocess

    from g2po.trainers.verl_backend.settings import verl_estimator_name

    command = ["bash", str(preset), *overrides,
               f"algorithm.adv_estimator={verl_estimator_name(estimator)}",
               f"data.seed={seed}", f"actor_rollout_ref.rollout.seed={seed}",
               f"trainer.experiment_name={run_name(estimator, seed)}"]
    print("g2po seeds: " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, env={**os.environ, "OUT": str(out)}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{preset} for {run_name(estimator, seed)} failed (exit "
                           f"{done.returncode}); its output is above")


def _validation_metrics(val, step: int, rule, env: str) -> dict[str, float]:
    from g2po.evaluation import evaluation_metrics

    return evaluation_metrics(val.load_step(step), rule, env=env or None)


def _run_row(val, best: bool) -> dict[str, object] | None:
    """One run's summarised validation: the last, or with ``best`` the best by success (the
    first of equals), with the number of validations and the best step's expected bias
    (:func:`g2po.evaluation.best_step_bias` at the run's mean success and its panel's
    episodes)."""
    from g2po.evaluation import best_step_bias, metric_name
    from g2po.outcomes import OutcomeRule
    from loaders.log import manifest_rule

    steps = val.train_steps()
    if not steps:
        return None
    env = str(val.manifest.get("env") or "")
    rule = manifest_rule(val.manifest) or OutcomeRule()
    if not best:
        return {"env": env, "val_step": steps[-1],
                **_validation_metrics(val, steps[-1], rule, env)}
    every = {s: _validation_metrics(val, s, rule, env) for s in steps}
    success = metric_name("success")
    chosen = max(steps, key=lambda s: (every[s][success], -s))
    mean = sum(m[success] for m in every.values()) / len(every)
    episodes = int(min(m[metric_name("episodes")] for m in every.values()))
    return {"env": env, "val_step": chosen, "n_validations": len(steps),
            "best_bias": best_step_bias(mean, episodes, len(steps)), **every[chosen]}


def seed_results(folder: str | Path, *, best: bool = False):
    """One row per run in ``folder`` (named by :func:`run_name`) that has a validation run:
    ``env``, ``estimator``, ``seed``, ``run``, ``val_step`` (the last step validated after, or
    with ``best`` the best one by success, then also ``n_validations`` and ``best_bias``) and
    its evaluation metrics."""
    import pandas as pd

    from g2po.evaluation import validation_dir
    from loaders import open_run
    from loaders.rundir import MANIFEST

    rows = []
    for path in sorted(Path(folder).iterdir()):
        named = parse_run_name(path.name)
        val_dir = validation_dir(path)
        if named is None or not (val_dir / MANIFEST).is_file():
            continue
        row = _run_row(open_run(val_dir), best)
        if row is not None:
            rows.append({"estimator": named[0], "seed": named[1], "run": str(path), **row})
    if not rows:
        raise ValueError(f"{folder}: no run named ESTIMATOR-sSEED with a validation run "
                         "(ESTIMATOR-sSEED-val) to summarise")
    table = pd.DataFrame(rows)
    return table[["env", *[c for c in table.columns if c != "env"]]]


def write_summary(folder: str | Path, *, best: bool = False) -> str:
    """Write ``results.csv``, ``summary.csv`` and ``summary.md`` into ``folder``; returns the
    markdown."""
    from g2po.evaluation import seed_table, summary_markdown

    folder = Path(folder)
    results = seed_results(folder, best=best)
    results.to_csv(folder / "results.csv", index=False)
    seed_table(results).to_csv(folder / "summary.csv", index=False)
    text = summary_markdown(results)
    which = "best" if best else "last"
    (folder / "summary.md").write_text(
        f"# Validation over seeds ({which} validation of each run; mean ± std (SE), %)\n\n"
        + text, encoding="utf-8")
    return text


def _seeds(args: argparse.Namespace) -> int:
    out = Path(args.out)
    bad = [w for w in args.overrides if "=" not in w]
    if bad:
        raise ValueError(f"expected KEY=VALUE overrides, got {', '.join(map(repr, bad))}")
    if not args.summary_only:
        if not args.preset:
            raise ValueError("--preset is required (or --summary-only to summarise --out)")
        preset = Path(args.preset)
        if not preset.is_file():
            raise ValueError(f"{preset}: no such preset file")
        if args.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
        estimators = [e.strip() for e in args.estimators.split(",") if e.strip()]
        if not estimators:
            raise ValueError("--estimators names no estimator")
        launch = _train_verl if preset.suffix == ".sh" else _train_local
        out.mkdir(parents=True, exist_ok=True)
        for estimator in estimators:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                print(f"g2po seeds: {run_name(estimator, seed)}", file=sys.stderr, flush=True)
                launch(preset, list(args.overrides), estimator, seed,
                       out / run_name(estimator, seed))
    print(write_summary(out, best=args.best), end="")
    return 0
