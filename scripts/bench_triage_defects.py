"""Benchmark: does the groups table point at the groups that need a look? (issues 27, 36)

Writes synthetic runs with known defects, opens each with :func:`loaders.open_log` and runs
the triage exactly as ``g2po triage`` does (:func:`g2po.analysis.triage.triage_log`, default
order), then prints, per run,

- precision@K of the default order, K = the planted defects: the share of the first K rows
  that are planted defects; and how many solved groups (progress, not defects) are among
  them;
- each check's firing rate on the groups that are not planted defects (healthy and solved;
  goal: each <= 10 %, a check said once for the run aside): the share where the check marks
  the group as a defect (a severity above 0 before the run's weighting; with the triage
  before issue 36, its alarm firing and not said run-wide);
- the first screen (the first :data:`FIRST_SCREEN` rows of the default order): how many of
  its rows are groups that are not planted defects, and how many of those the ``unusual``
  check put there (its words the row's reason; goal: at most 10 % of the screen);
- where each planted group ranks, and its reason;

and, over every run, a summary per converged share: precision@K (mean, min over seeds), the
largest firing rate of each check on healthy groups, the unusual check's share of the first
screen.

The environment is deterministic: each task is a small room graph where a (room, action)
leads to one next room (an invalid action leaves the agent where it is); the goal room pays
the success reward, a trap room ends the episode with 0. Healthy groups: 8 rollouts of a
stochastic policy, outcomes mixed. Every step records the advantage a correct G2PO trainer
would (the recomputation, as float32), but on the ``zeroed_credit`` groups. Planted defects
(``--per-kind`` of each):

- ``aliased``: two rooms share one state key ("You are in a dark room."), and the same action
  there leads to different rooms;
- ``collapsed``: 8 identical rollouts onto a losing path (into the trap);
- ``no_signal``: every rollout fails, no invalid action;
- ``penalty_only``: every rollout fails, some actions invalid;
- ``hub``: every invalid action answers "Nothing happens." (one state key for all of them);
- issue 36's three that no check was built for: ``mixed_tasks`` (one group id over two tasks'
  rollouts, 4 and 4), ``history_key`` (a state key that carries the rooms visited so far),
  ``partial`` (a group holding 3 of its 8 rollouts);
- ``zeroed_credit``: healthy rollouts whose recorded advantage is 0 on every step but each
  trajectory's last (SkyRL #1507).

Solved groups (progress, never defects): ``all_success`` (every rollout wins, along different
paths), ``converged`` (8 identical wins by the shortest path). ``--converged 0,0.15,0.3,0.6``
runs the bench once per share of the healthy groups replaced by converged ones (issue 36: a
run where 15 % of groups converged took the planted defects from 10 of the first 10 to 0);
``--seeds 0,1,2`` once per seed.

With ``--step-limit [N]`` the first run of each seed is also cut after N steps (default 5;
``done`` false there, reward 0; planted groups show their defect within 5 steps): a run-wide
defect, which the triage should say once and still rank the local defects first.

Another generator: ``--generator PATH`` (a Python file) or a module name, with either
interface:

- this script's own: ``KINDS`` (the planted defect kinds), ``PROGRESS`` (kinds that are not
  defects), and ``generate(healthy: int, per_kind: int, seed: int, converged: float) ->
  (steps, planted)``: a step table of one training step (the required columns, ``done``,
  ``task``, ``train_step``) and a dict group id → kind (defects and progress kinds; every
  other group is healthy). ``--per-kind`` plants that many of each kind;
- ``scripts/defect_runs_b.py``'s: ``make_run(seed, converged=…, per_kind=…[,
  train_steps=…]) -> (steps, truth)`` (truth: ``group_id``, ``kind``, ``family``: healthy,
  alarm, integrity or recorded) and ``write_run(steps, path, rule=…, format="run")``, the rule
  in ``truth.attrs["run"]``. Its alarm, integrity and recorded-credit kinds are the planted
  defects, ``converged`` its progress; ``--train-steps`` (default 12: 192 groups) sizes its
  runs, ``--healthy`` is unused.

Usage: ``python scripts/bench_triage_defects.py [--healthy 180] [--per-kind 2] [--seeds 0]
[--converged 0,0.15,0.3,0.6] [--step-limit [N]] [--generator PATH] [--train-steps 12]
[--keep DIR]``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KINDS = ("aliased", "collapsed", "no_signal", "penalty_only", "hub", "mixed_tasks",
         "history_key", "partial", "zeroed_credit")
PROGRESS = ("all_success", "converged")
ROOMS = ("entrance", "hall", "corridor", "kitchen", "cellar", "garden")
START, HALL, CORRIDOR, KITCHEN, TRAP, GOAL = range(6)
#: room → {action: next room}; every other direction is invalid (the agent stays).
MOVES = {START: {"go east": HALL, "go south": CORRIDOR},
         HALL: {"go north": KITCHEN, "go west": START, "go east": TRAP},
         CORRIDOR: {"go north": START, "go east": KITCHEN},
         KITCHEN: {"go south": HALL, "go west": CORRIDOR, "go north": GOAL, "go east": TRAP}}
DIRECTIONS = ("go north", "go south", "go east", "go west")
DISTANCE = {START: 3, HALL: 2, CORRIDOR: 2, KITCHEN: 1}
OPTIMAL = {START: "go east", HALL: "go north", KITCHEN: "go north"}
SUCCESS = 10.0
MAX_LEN = 30
#: Planted all-success, aliased and hub groups show their defect within this many steps, so a run
#: cut at ``--step-limit`` (default this) keeps them.
SHORT = 5
#: The rows of the default order a first screen shows.
FIRST_SCREEN = 20


def _rollout(rng: np.random.Generator, *, p_best: float, p_invalid: float,
             avoid_goal: bool = False, optimal: bool = False) -> list[tuple[int, str, bool]]:
    """One episode: (room, action, valid) per step, ending in the goal, the trap or at
    :data:`MAX_LEN` steps."""
    room, out = START, []
    while len(out) < MAX_LEN and room not in (GOAL, TRAP):
        moves = {a: r for a, r in MOVES[room].items() if not (avoid_goal and r == GOAL)}
        best = min(moves, key=lambda a: (DISTANCE.get(moves[a], 0 if moves[a] == GOAL else 9),
                                         a))
        if optimal:
            action = OPTIMAL[room]
        elif rng.random() < p_invalid:
            action = str(rng.choice([d for d in DIRECTIONS if d not in MOVES[room]]
                                    or ["dance"]))
        elif rng.random() < p_best:
            action = best
        else:
            action = str(rng.choice(sorted(moves)))
        valid = action in MOVES[room]
        out.append((room, action, valid))
        room = MOVES[room][action] if valid else room
    return out


#: A losing path: into the trap in two steps.
LOSING = [(START, "go east", True), (HALL, "go east", True)]


def _group(rng: np.random.Generator, kind: str) -> list[list[tuple[int, str, bool]]]:
    """8 rollouts of a group of ``kind`` ("healthy", one of :data:`KINDS` or
    :data:`PROGRESS`); ``mixed_tasks`` and ``partial`` take a healthy group's rollouts."""
    def ends(r: list) -> bool:
        room, action, valid = r[-1]
        return valid and MOVES[room][action] == GOAL

    while True:
        if kind == "converged":
            return [_rollout(rng, p_best=1, p_invalid=0, optimal=True)] * 8
        if kind == "collapsed":
            return [list(LOSING)] * 8
        if kind in ("no_signal", "penalty_only"):
            group = [_rollout(rng, p_best=0.3, p_invalid=0.0 if kind == "no_signal" else 0.2,
                              avoid_goal=True) for _ in range(8)]
            if kind == "no_signal" or any(not v for r in group for _, _, v in r):
                return group
            continue
        group = [_rollout(rng, p_best=0.8 if kind == "all_success" else 0.45,
                          p_invalid=0.25 if kind == "hub" else 0.08) for _ in range(8)]
        wins = sum(ends(r) for r in group)
        if kind == "all_success":
            if wins == 8 and len({tuple(r) for r in group}) > 2 and \
                    max(map(len, group)) <= SHORT:
                return group
        elif 0 < wins < 8 and (kind != "aliased" or _splits(group)) and \
                (kind != "hub" or _hub_sources(group) >= 3):
            return group


def _splits(group: list) -> bool:
    """Both dark rooms left by "go north" within :data:`SHORT` steps (so the aliasing is
    there to see, even in a run cut at that limit)."""
    seen = {room for r in group for room, action, valid in r[:SHORT - 1]
            if valid and action == "go north" and room in (HALL, CORRIDOR)}
    return seen == {HALL, CORRIDOR}


def _hub_sources(group: list) -> int:
    """Rooms (not "Nothing happens." itself) left by an invalid action within :data:`SHORT`
    steps: the hub's distinct sources, even in a run cut at that limit."""
    return len({room for r in group for t, (room, _, valid) in enumerate(r[:SHORT - 1])
                if not valid and (t == 0 or r[t - 1][2])})


def _key(kind: str, slot: int, rollout: list, t: int) -> str:
    """The state key of step ``t`` of ``rollout`` in a group of ``kind``."""
    room, _, _ = rollout[t]
    if kind == "aliased" and room in (HALL, CORRIDOR):
        return f"task {slot}: You are in a dark room."
    if kind == "hub" and t > 0 and not rollout[t - 1][2]:
        return "Nothing happens."
    if kind == "history_key":  # every room so far: each path its own key
        return f"task {slot}: " + " > ".join(ROOMS[r] for r, _, _ in rollout[:t + 1])
    return f"task {slot}: -= {ROOMS[room].title()} =- You are in the {ROOMS[room]}."


def _rows(gid: str, slot: int, kind: str, rollouts: list, first: int = 0) -> list[tuple]:
    rows = []
    for k, rollout in enumerate(rollouts, start=first):
        room, action, valid = rollout[-1]
        won = valid and MOVES[room][action] == GOAL
        trapped = valid and MOVES[room][action] == TRAP
        for t, (_, action, valid) in enumerate(rollout):
            rows.append((gid, f"{gid}/r{k}", t, _key(kind, slot, rollout, t), action,
                         SUCCESS if won else 0.0, valid,
                         (won or trapped) if t == len(rollout) - 1 else False,
                         f"Reach the garden (task {slot})"))
    return rows


def generate(healthy: int, per_kind: int, seed: int, converged: float = 0.0
             ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The step table (one training step) and planted group id → kind (defects and solved
    groups); ``converged``: the share of the healthy groups replaced by converged ones."""
    rng = np.random.default_rng(seed)
    n_converged = int(round(converged * healthy))
    kinds = ["healthy"] * (healthy - n_converged) + ["converged"] * n_converged + \
        [k for k in (*KINDS, "all_success") for _ in range(per_kind)]
    order = rng.permutation(len(kinds))  # planted groups anywhere in the run
    rows, planted = [], {}
    for slot, i in enumerate(order):
        kind = kinds[i]
        gid = f"task-{slot:03d}"
        if kind != "healthy":
            planted[gid] = kind
        group = _group(rng, "healthy" if kind in ("mixed_tasks", "partial", "zeroed_credit")
                       else kind)
        if kind == "partial":
            group = group[:3]
        rows += _rows(gid, slot, kind, group[:4] if kind == "mixed_tasks" else group)
        if kind == "mixed_tasks":  # the other four: another task's rollouts, one group id
            rows += _rows(gid, slot + 1000, kind, _group(rng, "healthy")[:4], first=4)
    steps = pd.DataFrame(rows, columns=["group_id", "traj_id", "t", "state_key", "action",
                                        "episode_reward", "is_action_valid", "done", "task"])
    return steps.assign(train_step=np.int64(0)), planted


def with_recorded(steps: pd.DataFrame, planted: dict[str, str]) -> pd.DataFrame:
    """``steps`` with the advantage a correct G2PO trainer records (the recomputation with the
    default parameters, as float32), 0 on every step but each trajectory's last on the
    ``zeroed_credit`` groups."""
    from g2po.estimators import compute_advantages

    adv = compute_advantages(steps, "g2po")["adv"].to_numpy(np.float32).astype(np.float64)
    last = steps["t"] == steps.groupby("traj_id")["t"].transform("max")
    zeroed = steps["group_id"].map(planted).eq("zeroed_credit") & ~last
    return steps.assign(advantage=np.where(zeroed, 0.0, adv))


def cut_at(steps: pd.DataFrame, limit: int) -> pd.DataFrame:
    """Every episode cut after ``limit`` steps (``done`` false, reward 0 there)."""
    keep = steps[steps["t"] < limit].copy()
    length = steps.groupby("traj_id")["t"].transform("size")
    cut = (length > limit)[keep.index]
    keep.loc[cut, "episode_reward"] = 0.0
    keep.loc[cut & (keep["t"] == limit - 1), "done"] = False
    return keep.reset_index(drop=True)


def _defect_rates(table, triage) -> tuple[dict[str, np.ndarray], set[str]]:
    """Per check kind, (n_rows,) bool where it marks the group as a defect, and the kinds
    said once for the run; for this triage or the one before the check registry."""
    try:
        from g2po.analysis.checks import list_checks
    except ImportError:  # the triage before issue 36: an alarm firing, not said run-wide
        from g2po.analysis.alarms import ALARM_KINDS

        said = {f.kind for f in triage.run_findings(table)}
        return {k: (table[f"alarm_{k}"].to_numpy() > 0) & (k not in said)
                for k in ALARM_KINDS}, said
    from g2po.analysis.findings import recount

    counted = recount(table)
    marks = {c.kind: np.asarray(c.severity(counted, "g2po")) > 0
             for c in list_checks() if c.defect}
    said = {f.kind for f in triage.run_findings(table) if f.level == "defect"}
    return marks, said


def evaluate(path: Path, planted: dict[str, str], label: str, progress: tuple[str, ...]
             ) -> dict:
    """Run the triage as ``g2po triage`` does; print and return the figures."""
    import loaders
    from g2po.analysis import triage

    log = loaders.open_log(path)
    table = triage.triage_log(log, cache=False)
    ranked = triage.sort_groups(table)
    defects = {g for g, k in planted.items() if k not in progress}
    solved = {g for g, k in planted.items() if k in progress}
    k = len(defects)
    first = ranked["group_id"].head(k)
    precision = float(first.isin(list(defects)).mean())
    others = ~table["group_id"].isin(list(defects)).to_numpy()
    marks, said = _defect_rates(table, triage)
    rates = {kind: float(mark[others].mean()) for kind, mark in marks.items()}
    screen = ranked.head(FIRST_SCREEN)
    not_defect = ~screen["group_id"].isin(list(defects))
    by_unusual = not_defect & screen["reason"].astype(str).str.startswith("unusual for this run")
    print(f"\n== {label}: {len(table)} groups, {k} planted defects, {len(solved)} solved ==")
    print(f"precision@{k} of the default order: {precision:.2f}; solved groups among the "
          f"first {k}: {int(first.isin(list(solved)).sum())}")
    print(f"first screen ({len(screen)} rows): {int(not_defect.sum())} not planted, "
          f"{int(by_unusual.sum())} of them there by the unusual check")
    for finding in triage.run_findings(table):
        print(f"said for the run: {finding.text}")
    print("checks said once for the run (defects): " + (", ".join(sorted(said)) or "none"))
    print("share of the other groups (healthy and solved) each check marks as a defect:")
    for kind, rate in rates.items():
        note = "   said once for the run" if kind in said else "   > 10 %" if rate > 0.10 \
            else ""
        print(f"  {kind:24s} {rate:6.1%}{note}")
    rank = {g: i + 1 for i, g in enumerate(ranked["group_id"])}
    reason = ranked.set_index("group_id")["reason"]
    print("planted groups: rank (kind) reason")
    for gid, kind in sorted(planted.items(), key=lambda kv: rank[kv[0]]):
        print(f"  {rank[gid]:4d} ({kind})  {reason[gid]}")
    return {"precision": precision, "k": k, "rates": rates, "run_wide": sorted(said),
            "solved_first": int(first.isin(list(solved)).sum()),
            "screen": len(screen), "screen_others": int(not_defect.sum()),
            "screen_unusual": int(by_unusual.sum())}


def summary(results: list[tuple[str, float, dict]]) -> None:
    """Per converged share, over the seeds: precision@K (mean, min), solved groups among the
    first K, the unusual check's rows on the first screen, and each check's largest firing
    rate on the other groups (a check said once for the run aside)."""
    print("\n== summary over seeds: converged share | precision@K mean (min) | solved in "
          "the first K | first screen: not planted / by unusual | largest rate per check "
          "(not said for the run)")
    shares = sorted({share for _, share, _ in results})
    for share in shares:
        got = [r for _, s, r in results if s == share]
        worst: dict[str, float] = {}
        for r in got:
            for kind, rate in r["rates"].items():
                if kind not in r["run_wide"]:
                    worst[kind] = max(worst.get(kind, 0.0), rate)
        above = ", ".join(f"{k} {v:.1%}" for k, v in worst.items() if v > 0) or "none above 0"
        print(f"  {share:4.0%} | {np.mean([r['precision'] for r in got]):.3f} "
              f"({min(r['precision'] for r in got):.2f}) | "
              f"{sum(r['solved_first'] for r in got)} | "
              f"{sum(r['screen_others'] for r in got)}/{sum(r['screen'] for r in got)} / "
              f"{sum(r['screen_unusual'] for r in got)} | {above}")


def _generator(spec: str | None) -> ModuleType:
    """This script (``None``), a Python file, or an importable module with the interface the
    docstring describes."""
    if spec is None:
        return sys.modules[__name__]
    if spec.endswith(".py"):
        loaded = importlib.util.spec_from_file_location(Path(spec).stem, spec)
        module = importlib.util.module_from_spec(loaded)
        sys.modules[loaded.name] = module
        loaded.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def _truth_run(gen: ModuleType, seed: int, per_kind: int, share: float, folder: Path,
               name: str, train_steps: int) -> tuple[Path, dict[str, str]]:
    """A run of a generator with ``defect_runs_b.py``'s interface, written as a run
    directory, and its planted group id → kind (alarm, integrity and recorded-credit kinds,
    converged)."""
    sized = {"train_steps": train_steps} \
        if "train_steps" in inspect.signature(gen.make_run).parameters else {}
    steps, truth = gen.make_run(seed, converged=share, per_kind=per_kind, **sized)
    path = gen.write_run(steps, folder / name, rule=truth.attrs["run"]["rule"], format="run")
    keep = truth["family"].isin(["alarm", "integrity", "recorded"]) | \
        (truth["kind"] == "converged")
    return path, dict(zip(truth.loc[keep, "group_id"], truth.loc[keep, "kind"], strict=True))


def _own_runs(gen: ModuleType, args: argparse.Namespace, seed: int
              ) -> dict[str, tuple[pd.DataFrame, dict[str, str], float]]:
    """label → (steps, planted, converged share) of a generator with this script's
    interface."""
    runs = {}
    for share in (float(x) for x in args.converged.split(",")):
        steps, planted = gen.generate(args.healthy, args.per_kind, seed, share)
        runs[f"seed {seed}, planted defects, {share:.0%} of healthy groups converged"] = \
            (steps, planted, share)
        if args.step_limit and len(runs) == 1:
            cut = float((steps.groupby("traj_id").size() > args.step_limit).mean())
            runs[f"seed {seed}, the same + a step limit of {args.step_limit} cutting "
                 f"{cut:.0%} of the episodes (run-wide)"] = \
                (cut_at(steps, args.step_limit), planted, -1.0)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--healthy", type=int, default=180)
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--seed", type=int, help="one seed (the same as --seeds N)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, one run each")
    parser.add_argument("--converged", default="0",
                        help="comma-separated shares of the healthy groups that converged, "
                             "one run each (e.g. 0,0.15,0.3,0.6)")
    parser.add_argument("--step-limit", type=int, nargs="?", const=SHORT, metavar="N",
                        help=f"also the first run cut after N steps (default {SHORT}; a "
                             "run-wide defect)")
    parser.add_argument("--generator", help="another generator: a .py file or a module")
    parser.add_argument("--train-steps", type=int, default=12,
                        help="training steps of a make_run generator's runs")
    parser.add_argument("--keep", type=Path, help="write the runs here and keep them")
    args = parser.parse_args(argv)
    gen = _generator(args.generator)
    seeds = [args.seed] if args.seed is not None else [int(x) for x in args.seeds.split(",")]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="g2po-bench-defects-"))
    folder.mkdir(parents=True, exist_ok=True)
    results: list[tuple[str, float, dict]] = []
    for seed in seeds:
        if hasattr(gen, "make_run"):  # defect_runs_b.py's interface: runs of several steps
            for share in (float(x) for x in args.converged.split(",")):
                name = f"run-s{seed}-c{round(share * 100)}"
                path, planted = _truth_run(gen, seed, args.per_kind, share, folder, name,
                                           args.train_steps)
                label = f"{gen.__name__} seed {seed}, {share:.0%} of healthy groups converged"
                results.append((label, share, evaluate(path, planted, label, ("converged",))))
            continue
        for label, (frame, planted, share) in _own_runs(gen, args, seed).items():
            path = folder / f"run-s{seed}-{len(results)}.parquet"
            if gen is sys.modules[__name__]:
                frame = with_recorded(frame, planted)
            frame.to_parquet(path, index=False)
            results.append((label, share, evaluate(path, planted, label,
                                                   tuple(getattr(gen, "PROGRESS", ())))))
    summary([r for r in results if r[1] >= 0])  # the cut runs apart: their own question
    if args.keep is None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
