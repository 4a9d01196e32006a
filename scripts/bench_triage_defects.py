"""Benchmark: does the groups table point at the groups that need a look? (issue 27, item 7)

Writes a synthetic run with known defects, opens it with :func:`loaders.open_log` and runs the
triage exactly as ``g2po triage`` does (:func:`g2po.analysis.triage.triage_log`, default order),
then prints

- precision@K of the default order, K = the planted groups: the share of the first K rows that
  are planted;
- each alarm kind's firing rate on the healthy groups (goal: each <= 10 %);
- where each planted group ranks.

The environment is deterministic: each task is a small room graph where a (room, action) leads
to one next room (an invalid action leaves the agent where it is); the goal room pays the
success reward, a trap room ends the episode with 0. Healthy groups: 8 rollouts of a stochastic
policy, outcomes mixed. Planted groups (``--per-kind`` of each):

- ``aliased``: two rooms share one state key ("You are in a dark room."), and the same action
  there leads to different rooms;
- ``collapsed``: 8 identical rollouts (the optimal path);
- ``no_signal``: every rollout fails, no invalid action;
- ``penalty_only``: every rollout fails, some actions invalid;
- ``hub``: every invalid action answers "Nothing happens." (one state key for all of them);
- ``all_success``: every rollout succeeds, along different paths.

With ``--step-limit [N]`` the whole run is also cut after N steps (default 5; ``done`` false
there, reward 0; planted groups are drawn so that their defect shows within 5 steps): a
run-wide defect, which the triage should say once and still rank the
local defects first.

Usage: ``python scripts/bench_triage_defects.py [--healthy 180] [--per-kind 2] [--seed 0]
[--step-limit [N]] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KINDS = ("aliased", "collapsed", "no_signal", "penalty_only", "hub", "all_success")
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


def _group(rng: np.random.Generator, kind: str) -> list[list[tuple[int, str, bool]]]:
    """8 rollouts of a group of ``kind`` ("healthy" or one of :data:`KINDS`)."""
    def ends(r: list) -> bool:
        room, action, valid = r[-1]
        return valid and MOVES[room][action] == GOAL

    while True:
        if kind == "collapsed":
            return [_rollout(rng, p_best=1, p_invalid=0, optimal=True)] * 8
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


def generate(healthy: int, per_kind: int, seed: int) -> tuple[pd.DataFrame, dict[str, str]]:
    """The step table (one training step) and planted group id → kind."""
    rng = np.random.default_rng(seed)
    kinds = ["healthy"] * healthy + [k for k in KINDS for _ in range(per_kind)]
    order = rng.permutation(len(kinds))  # planted groups anywhere in the run
    rows, planted = [], {}
    for slot, i in enumerate(order):
        kind = kinds[i]
        gid = f"task-{slot:03d}"
        if kind != "healthy":
            planted[gid] = kind
        for k, rollout in enumerate(_group(rng, kind)):
            room, action, valid = rollout[-1]
            won = valid and MOVES[room][action] == GOAL
            trapped = valid and MOVES[room][action] == TRAP
            for t, (room, action, valid) in enumerate(rollout):
                if kind == "aliased" and room in (HALL, CORRIDOR):
                    key = f"task {slot}: You are in a dark room."
                elif kind == "hub" and t > 0 and not rollout[t - 1][2]:
                    key = "Nothing happens."
                else:
                    key = f"task {slot}: -= {ROOMS[room].title()} =- You are in the " \
                          f"{ROOMS[room]}."
                rows.append((gid, f"{gid}/r{k}", t, key, action, SUCCESS if won else 0.0,
                             valid, (won or trapped) if t == len(rollout) - 1 else False,
                             f"Reach the garden (task {slot})"))
    steps = pd.DataFrame(rows, columns=["group_id", "traj_id", "t", "state_key", "action",
                                        "episode_reward", "is_action_valid", "done", "task"])
    return steps.assign(train_step=np.int64(0)), planted


def cut_at(steps: pd.DataFrame, limit: int) -> pd.DataFrame:
    """Every episode cut after ``limit`` steps (``done`` false, reward 0 there)."""
    keep = steps[steps["t"] < limit].copy()
    length = steps.groupby("traj_id")["t"].transform("size")
    cut = (length > limit)[keep.index]
    keep.loc[cut, "episode_reward"] = 0.0
    keep.loc[cut & (keep["t"] == limit - 1), "done"] = False
    return keep.reset_index(drop=True)


def evaluate(path: Path, planted: dict[str, str], label: str) -> dict:
    """Run the triage as ``g2po triage`` does; print and return the figures."""
    import loaders
    from g2po.analysis import triage
    from g2po.analysis.alarms import ALARM_KINDS

    log = loaders.open_log(path)
    table = triage.triage_log(log, cache=False)
    ranked = triage.sort_groups(table)
    k = len(planted)
    is_planted = ranked["group_id"].isin(list(planted)).to_numpy()
    precision = float(is_planted[:k].mean())
    healthy = ~table["group_id"].isin(list(planted)).to_numpy()
    findings = triage.run_findings(table)
    run_wide = {f.kind for f in findings}
    # a run-wide alarm is the run's, said once: not a group's alarm, so not counted here
    rates = {kind: 0.0 if kind in run_wide else
             float((table.loc[healthy, f"alarm_{kind}"] > 0).mean()) for kind in ALARM_KINDS}
    print(f"\n== {label}: {len(table)} groups, {k} planted ==")
    print(f"precision@{k} of the default order: {precision:.2f}")
    for finding in findings:
        print(f"run-wide finding: {finding.text}")
    print("classed run-wide (said once, not a group's alarm): "
          + (", ".join(f"{f.kind} (raw: on {f.groups} of {f.total} groups)" for f in findings)
             or "none"))
    print("alarm firing rate on healthy groups (local firings only):")
    for kind, rate in rates.items():
        note = "   run-wide" if kind in run_wide else "   > 10 %" if rate > 0.10 else ""
        print(f"  {kind:24s} {rate:6.1%}{note}")
    rank = {g: i + 1 for i, g in enumerate(ranked["group_id"])}
    reason = ranked.set_index("group_id")["reason"]
    print("planted groups: rank (kind) reason")
    for gid, kind in sorted(planted.items(), key=lambda kv: rank[kv[0]]):
        print(f"  {rank[gid]:4d} ({kind})  {reason[gid]}")
    return {"precision": precision, "rates": rates, "run_wide": sorted(run_wide)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--healthy", type=int, default=180)
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step-limit", type=int, nargs="?", const=SHORT, metavar="N",
                        help=f"also the run cut after N steps (default {SHORT}; a run-wide "
                             "defect)")
    parser.add_argument("--keep", type=Path, help="write the runs here and keep them")
    args = parser.parse_args(argv)
    steps, planted = generate(args.healthy, args.per_kind, args.seed)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="g2po-bench-defects-"))
    folder.mkdir(parents=True, exist_ok=True)
    runs = {"planted defects": steps}
    if args.step_limit:
        lengths = steps.groupby("traj_id").size()
        share = float((lengths > args.step_limit).mean())
        runs[f"planted defects + a step limit of {args.step_limit} cutting {share:.0%} of the "
             "episodes (run-wide)"] = cut_at(steps, args.step_limit)
    for i, (label, frame) in enumerate(runs.items()):
        path = folder / f"run{i}.parquet"
        frame.to_parquet(path, index=False)
        evaluate(path, planted, label)
    if args.keep is None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
