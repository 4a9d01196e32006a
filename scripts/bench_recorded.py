"""Benchmark: the recorded-credit audit and the unusual score on the second generator's runs
(``scripts/defect_runs_b.py``, written apart from the detection code), and the audit's time on
a 1.2 M-row run.

For each run (worlds, reward scales, group sizes, converged shares and estimators vary), the
run is written as a run directory or a table, opened with :func:`loaders.open_log` and read
whole, then

- **recorded credit** (:func:`g2po.analysis.recorded.audit_recorded`, the run's estimator from
  its manifest): precision@K of the order by severity, K = the groups whose recorded advantage
  was broken; the share of the other groups (healthy, converged, and those planted with a data
  defect but recorded correctly) on which a finding fires, by kind; whether each broken group
  gets the kind that names its breakage;
- **unusual** (:func:`g2po.analysis.unusual.unusual_groups` on
  :func:`g2po.analysis.triage.triage_groups`' table and the step table): precision@K, K = the
  groups planted with a data defect (alarm and integrity kinds; a broken record leaves the
  data healthy), by (severity, score); the share of healthy and of converged groups that
  fire; which planted kinds fire; and, on ``--healthy-runs`` runs with nothing planted, the
  share of groups that fire.

``--time`` instead times the audit on a synthetic run of ``--rows`` rows (default 1.2 M;
:func:`g2po.synthetic.synthetic_steps`, 200 training steps, recorded = G2PO's recomputation as
float32, 20 groups broken so that the fit runs): in memory, with and without the fit, best /
median of ``--repeat``; ``g2po audit RUN --format csv`` end to end on the run written as a
run directory; and the whole-run groups table (:func:`g2po.analysis.triage.triage_log`, a
fresh process each, first time and opened again from its cache) of that run and of the same
run without its advantage column: the recorded-credit check's cost is the difference.

Usage: ``python scripts/bench_recorded.py [--runs 9] [--seed 0]`` or
``python scripts/bench_recorded.py --time [--rows 1200000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import defect_runs_b as gen  # noqa: E402

#: The kind a broken record should be given.
NAMES = {"rec_zeroed": "zeroed", "rec_broadcast": "broadcast", "rec_misaligned": "misaligned",
         "rec_sign": "negated", "rec_other_estimator": "other_estimator"}
#: The runs measured, in turn: (graph, reward scale, group size, converged share, estimator,
#: written as).
PLANS = [("dag", "binary10", 8, 0.0, "g2po", "run"), ("grid", "binary1", 16, 0.3, "g2po", "csv"),
         ("tree", "score", 4, 0.6, "g2po", "parquet"), ("grid", "score", 8, 0.15, "gigpo", "run"),
         ("tree", "binary10", 16, 0.45, "g2po", "run"), ("dag", "binary1", 4, 0.3, "grpo", "jsonl"),
         ("tree", "binary1", 8, 0.0, "gigpo", "run"), ("dag", "score", 16, 0.6, "g2po", "run"),
         ("grid", "binary10", 4, 0.3, "g2po", "parquet")]


def precision_at_k(planted: pd.Series) -> tuple[float, int]:
    """Share of the first K groups that are ``planted`` (in ranking order), K = all planted."""
    k = int(planted.sum())
    return (float(planted.head(k).mean()) if k else float("nan")), k


def measure_run(i: int, seed: int, folder: Path) -> dict:
    from g2po.analysis.recorded import audit_recorded
    from g2po.analysis.triage import triage_groups
    from g2po.analysis.unusual import unusual_groups
    from g2po.params import G2POParams
    from loaders import open_log

    graph, scale, size, converged, estimator, fmt = PLANS[i % len(PLANS)]
    kinds = tuple(k for k in gen.KINDS if not (k == "rec_broadcast" and estimator == "grpo"))
    steps, truth = gen.make_run(seed + i, graph=graph, scale=scale, group_size=size,
                                converged=converged, estimator=estimator, kinds=kinds)
    path = folder / (f"run{i}" if fmt == "run" else f"run{i}.{fmt}")
    rule = truth.attrs["run"]["rule"]
    gen.write_run(steps, path, rule=rule, estimator=estimator, format=fmt, truth=truth)
    log = open_log(path, outcome={"success_reward": rule.success_reward,
                                  "success_threshold": rule.success_threshold})
    frame = log.load()
    if "train_step" not in frame:
        frame = frame.assign(train_step=0)
    key = ["train_step", "group_id"]
    truth = truth.set_index(key)

    found = audit_recorded(frame, rule=log.rule(), params=G2POParams(), estimator=estimator)
    groups = found.groups.set_index(key)
    fam = truth["family"].reindex(groups.index)
    broken = fam == "recorded"
    p_rec, k_rec = precision_at_k(broken)
    others = groups[~broken]
    named = (groups.loc[broken, "kind"] ==
             truth.loc[groups.index[broken], "kind"].map(NAMES)).to_numpy()

    table = triage_groups(frame, rule=log.rule())
    unusual = unusual_groups(table, frame).set_index(key)
    ufam = truth["family"].reindex(unusual.index)
    data_defect = ufam.isin(["alarm", "integrity"])
    p_un, k_un = precision_at_k(data_defect)
    conv = truth["kind"].reindex(unusual.index) == "converged"
    healthy = (ufam == "healthy") & ~conv
    caught = truth["kind"].reindex(unusual.index)[data_defect & (unusual["severity"] > 0)]
    return {
        "plan": f"{graph}/{scale}/N={size}/conv {converged:.0%}/{estimator}/{fmt}",
        "groups": len(groups), "rec_p": p_rec, "rec_k": k_rec,
        "rec_named": int(named.sum()), "rec_others": len(others),
        "rec_others_fired": int((others["kind"] != "").sum()),
        "rec_fired_kinds": others.loc[others["kind"] != "", "kind"].value_counts().to_dict(),
        "un_p": p_un, "un_k": k_un,
        "un_healthy": int(healthy.sum()), "un_healthy_fired":
            int((healthy & (unusual["severity"] > 0)).sum()),
        "un_conv": int(conv.sum()), "un_conv_fired": int((conv & (unusual["severity"] > 0)).sum()),
        "un_caught": sorted(caught.tolist()),
        "un_fired_measures": unusual.loc[healthy & (unusual["severity"] > 0), "measure"]
        .value_counts().to_dict(),
    }


def healthy_runs(runs: int, seed: int) -> list[tuple[int, int]]:
    """(groups that fire, groups) of the unusual score on ``runs`` runs with nothing planted
    (converged shares included)."""
    from g2po.analysis.triage import triage_groups
    from g2po.analysis.unusual import unusual_groups

    out = []
    for i in range(runs):
        graph, scale, size, converged, _, _ = PLANS[i % len(PLANS)]
        steps, truth = gen.make_run(seed + 200 + i, graph=graph, scale=scale, group_size=size,
                                    converged=converged, kinds=(), train_steps=10)
        found = unusual_groups(triage_groups(steps, rule=truth.attrs["run"]["rule"]), steps)
        out.append((int((found["severity"] > 0).sum()), len(found)))
    return out


def report(runs: int, seed: int, healthy_only: int = 6) -> int:
    from loaders import LoadWarning

    warnings.simplefilter("ignore", LoadWarning)  # the verbatim duplicates planted in tables
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            row = measure_run(i, seed, Path(tmp))
            rows.append(row)
            print(f"run {i}: {row['plan']}, {row['groups']} groups")
            print(f"  recorded: precision@{row['rec_k']} {row['rec_p']:.2f}, named "
                  f"{row['rec_named']}/{row['rec_k']}; fires on {row['rec_others_fired']} of "
                  f"{row['rec_others']} other groups {row['rec_fired_kinds'] or ''}")
            print(f"  unusual: precision@{row['un_k']} {row['un_p']:.2f}; fires on "
                  f"{row['un_healthy_fired']}/{row['un_healthy']} healthy "
                  f"{row['un_fired_measures'] or ''}, {row['un_conv_fired']}/{row['un_conv']} "
                  f"converged; caught {', '.join(row['un_caught'])}")
    total = pd.DataFrame(rows)
    print("\n== over all runs")
    print(f"recorded credit: precision@K mean {total['rec_p'].mean():.3f} (min "
          f"{total['rec_p'].min():.2f}); broken groups named by their kind "
          f"{total['rec_named'].sum()}/{total['rec_k'].sum()}; fires on "
          f"{total['rec_others_fired'].sum()} of {total['rec_others'].sum()} other groups "
          f"({total['rec_others_fired'].sum() / total['rec_others'].sum():.1%})")
    healthy, fired = total["un_healthy"].sum(), total["un_healthy_fired"].sum()
    conv, conv_fired = total["un_conv"].sum(), total["un_conv_fired"].sum()
    print(f"unusual: precision@K mean {total['un_p'].mean():.3f} (min {total['un_p'].min():.2f}"
          f"); fires on {fired}/{healthy} healthy groups ({fired / max(healthy, 1):.1%}), "
          f"{conv_fired}/{conv} converged ({conv_fired / max(conv, 1):.1%})")
    quiet = healthy_runs(healthy_only, seed)
    print(f"unusual on runs with nothing planted ({len(quiet)} runs, 10 training steps × 16 "
          f"groups): fires on {sum(f for f, _ in quiet)} of {sum(n for _, n in quiet)} groups")
    caught = pd.Series([k for row in rows for k in row["un_caught"]]).value_counts()
    planted = len(rows)
    kinds = gen.ALARM_KINDS + gen.INTEGRITY_KINDS
    print("unusual, planted data defects that fire (of " + str(planted) + " runs each): "
          + ", ".join(f"{k} {int(caught.get(k, 0))}" for k in kinds))
    return 0


def _synthetic(rows: int) -> pd.DataFrame:
    from g2po.estimators import compute_advantages
    from g2po.synthetic import synthetic_steps

    steps = synthetic_steps(rows, seed=1)
    steps["train_step"] = (pd.factorize(steps["group_id"])[0] * 200
                           // steps["group_id"].nunique()).astype(np.int64)
    adv = compute_advantages(steps, "g2po")["adv"].to_numpy(np.float32).astype(np.float64)
    broken = steps["group_id"].isin(steps["group_id"].unique()[::max(1, steps["group_id"]
                                                                     .nunique() // 20)][:20])
    adv[broken.to_numpy()] *= -1
    return steps.assign(advantage=adv)


def timing(rows: int, repeat: int) -> int:
    from g2po.analysis.recorded import audit_recorded
    from g2po.outcomes import OutcomeRule
    from g2po.params import G2POParams
    from loaders import RunWriter

    print(f"load average {os.getloadavg()[0]:.1f}; building {rows:,} rows …")
    steps = _synthetic(rows)
    print(f"{len(steps):,} rows, {steps['group_id'].nunique():,} groups, "
          f"{steps['train_step'].nunique()} training steps")
    for fit in (False, True):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            found = audit_recorded(steps, rule=OutcomeRule(), params=G2POParams(), fit=fit)
            times.append(time.perf_counter() - start)
        print(f"audit_recorded in memory, fit={fit}: best {min(times):.2f} s, median "
              f"{statistics.median(times):.2f} s ({len(found.findings)} groups with findings)")
    with tempfile.TemporaryDirectory() as tmp:
        writer = RunWriter(Path(tmp) / "run", {"estimator": "g2po",
                                               "config": {"success_reward": 10.0}})
        for step, part in steps.groupby("train_step", sort=True):
            writer.write_step(int(step), part)
        times = []
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "g2po", "audit", str(Path(tmp) / "run"),
                            "--format", "csv"], check=True, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        print(f"g2po audit RUN --format csv (process start and imports included): best "
              f"{min(times):.2f} s, median {statistics.median(times):.2f} s; load average "
              f"{os.getloadavg()[0]:.1f}")
        plain = RunWriter(Path(tmp) / "plain", {"estimator": "g2po",
                                                "config": {"success_reward": 10.0}})
        for step, part in steps.drop(columns="advantage").groupby("train_step", sort=True):
            plain.write_step(int(step), part)
        for name, label in (("plain", "without an advantage column"),
                            ("run", "with the recorded advantage (its check audits it)")):
            got = [_triage_times(Path(tmp) / name, Path(tmp) / f"cache-{name}-{i}")
                   for i in range(repeat)]
            first = sorted(g["first"] for g in got)
            again = sorted(g["again"] for g in got)
            print(f"triage_log of the run {label}: first best {first[0]:.2f} s, median "
                  f"{statistics.median(first):.2f} s; cached best {again[0]:.3f} s, median "
                  f"{statistics.median(again):.3f} s ({got[0]['fired']} groups where the "
                  f"recorded credit differs); load average {os.getloadavg()[0]:.1f}")
    return 0


_TRIAGE_TIMES = """
import json, sys, time
import loaders
from g2po.analysis.triage import triage_log
log = loaders.open_log(sys.argv[1])
start = time.perf_counter()
table = triage_log(log, cache=sys.argv[2])
first = time.perf_counter() - start
start = time.perf_counter()
triage_log(loaders.open_log(sys.argv[1]), cache=sys.argv[2])
print(json.dumps({"first": first, "again": time.perf_counter() - start,
                  "fired": int((table["alarm_recorded_credit"] > 0).sum())}))
"""


def _triage_times(run: Path, cache: Path) -> dict:
    """:func:`triage_log` of ``run`` in a fresh process: the first time (an empty cache) and
    opened again (from the cache), wall seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _TRIAGE_TIMES, str(run), str(cache)],
                         check=True, env=env, capture_output=True, text=True).stdout
    import json

    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=len(PLANS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--healthy-runs", type=int, default=6,
                        help="runs with nothing planted, for the unusual score's firing rate")
    parser.add_argument("--time", action="store_true", help="time the audit instead")
    parser.add_argument("--rows", type=int, default=1_200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.time:
        return timing(args.rows, args.repeat)
    return report(args.runs, args.seed, args.healthy_runs)


if __name__ == "__main__":
    sys.exit(main())
