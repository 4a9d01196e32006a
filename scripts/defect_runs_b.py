"""A second generator of runs with known defects (issue 36, item 6), written apart from the
detection code: it knows the step table's columns and nothing of any check's thresholds.

Worlds (one per task, drawn from the task's seed), unlike ``bench_triage_defects.py``'s room
graph:

- ``dag``: 8-14 places joined forward by 2-3 exits each ("go left", "go right", …), so paths
  merge; one goal, one or two pits (the episode ends, lost);
- ``grid``: a 3-5 × 3-5 grid of cells, moves north/south/east/west, walls at the border, one
  pit; cells are revisited (cycles);
- ``tree``: a tree of depth 3-4 and 2-3 doors per room, "go back" to the parent, one leaf the
  goal and the others dead ends, half of them pits.

Rollouts: at each step the policy writes an invalid command with a small probability (the
state stays), else takes a shortest-path exit with its skill, else a random exit. The skill
rises over the run's training steps (a run that learns). An episode ends at the goal (won), in
a pit (lost) or at the run's step limit (cut: ``done`` false, lost). Rewards on one of three
scales: ``binary10`` (10 / 0), ``binary1`` (1 / 0) or ``score`` (a won episode scores
0.85-1.0, a lost one 0.7 × its progress toward the goal; success is a score of at least 0.8:
:func:`outcome_rule`). Group sizes 4, 8 or 16. Healthy groups have mixed outcomes;
``converged`` groups (a share of the run's healthy groups, more of them late in the run) are
``group_size`` identical shortest wins: healthy too.

Planted kinds (:data:`KINDS`), each a group of the run:

- alarm kinds: ``aliased`` (two places share one observation, and one exit name there leads
  to two places), ``collapsed_losing`` (every rollout the same walk into a pit),
  ``no_signal`` (every rollout lost, equal rewards, no invalid command), ``penalty_only`` (the
  same with invalid commands), ``hub`` (every invalid command answers "Nothing happens.", one
  observation for all of them), ``truncation`` (most rollouts cut at the step limit),
  ``no_merging`` (an observation that never repeats: a turn counter and a request id in it);
- integrity kinds: ``mixed_tasks`` (one group id over the rollouts of two tasks),
  ``history_key`` (the state key carries the path so far), ``partial_group`` (3 of 8
  rollouts, 2 of 4, 6 of 16), ``duplicate_rows`` (one rollout again under a new trajectory
  id; with :func:`write_run`'s table formats its rows also appear twice verbatim, which a
  loader drops and reports), ``length_weighted`` (short wins beside long losses, in a pit or
  cut at the limit, so step-row statistics and trajectory statistics disagree);
- recorded-credit kinds, on healthy data: the ``advantage`` column is the run estimator's
  recomputation (:func:`g2po.estimators.estimate`: a correct trainer, stored as float32) on
  every other group and broken here: ``rec_zeroed`` (0 on every step but each trajectory's
  last, as SkyRL #1507), ``rec_broadcast`` (each trajectory's last value on all its steps),
  ``rec_misaligned`` (the group's values shifted by one row), ``rec_sign`` (negated),
  ``rec_other_estimator`` (computed with GiGPO, or G2PO in a GiGPO run).

Interface: :func:`make_run` ``(seed, …) -> (steps, truth)`` (truth: ``train_step``,
``group_id``, ``kind``, ``family``), :func:`outcome_rule` (the run's rule by its reward
scale) and :func:`write_run` (a run directory or a CSV / JSONL / Parquet table that
:func:`loaders.open_log` reads, with the rule and the estimator in ``run.json``).

Usage: ``python scripts/defect_runs_b.py OUT [--seed 0] [--format run|csv|jsonl|parquet]``
writes one run and its truth (``OUT.truth.csv``); ``scripts/bench_recorded.py`` measures the
recorded-credit audit and the unusual score on such runs.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from g2po.outcomes import OutcomeRule  # noqa: E402

ALARM_KINDS = ("aliased", "collapsed_losing", "no_signal", "penalty_only", "hub",
               "truncation", "no_merging")
INTEGRITY_KINDS = ("mixed_tasks", "history_key", "partial_group", "duplicate_rows",
                   "length_weighted")
RECORDED_KINDS = ("rec_zeroed", "rec_broadcast", "rec_misaligned", "rec_sign",
                  "rec_other_estimator")
KINDS = ALARM_KINDS + INTEGRITY_KINDS + RECORDED_KINDS
GRAPHS = ("dag", "grid", "tree")
SCALES = ("binary10", "binary1", "score")
_FAMILY = {**dict.fromkeys(ALARM_KINDS, "alarm"), **dict.fromkeys(INTEGRITY_KINDS, "integrity"),
           **dict.fromkeys(RECORDED_KINDS, "recorded"), "healthy": "healthy",
           "converged": "healthy"}
_NONSENSE = ("dance", "look around carefully", "take the sword", "open sesame", "(no action)")
_EXITS = ("go left", "go right", "go straight", "climb up", "crawl through")


@dataclass
class World:
    """One task: observation of each place, its exits {action: place}, goal, pits, start."""

    obs: list[str]
    moves: list[dict[str, int]]
    goal: int
    pits: frozenset[int]
    start: int = 0

    def distance(self, targets: set[int], avoid: frozenset[int] = frozenset()) -> np.ndarray:
        """(places,) steps to the nearest of ``targets`` (inf where unreachable)."""
        back: list[list[int]] = [[] for _ in self.obs]
        for place, exits in enumerate(self.moves):
            for nxt in exits.values():
                back[nxt].append(place)
        dist = np.full(len(self.obs), np.inf)
        queue = deque(targets)
        for t in targets:
            dist[t] = 0
        while queue:
            place = queue.popleft()
            for prev in back[place]:
                if dist[prev] == np.inf and prev not in avoid:
                    dist[prev] = dist[place] + 1
                    queue.append(prev)
        return dist


def _dag(rng: np.random.Generator, tag: str) -> World:
    n = int(rng.integers(8, 15))
    pits = frozenset(int(p) for p in rng.choice(np.arange(2, n - 1), rng.integers(1, 3),
                                                 replace=False))
    moves: list[dict[str, int]] = []
    for i in range(n):
        if i == n - 1 or i in pits:
            moves.append({})
            continue
        ahead = np.arange(i + 1, min(n, i + 6))
        targets = rng.choice(ahead, min(len(ahead), int(rng.integers(2, 4))), replace=False)
        names = rng.permutation(_EXITS)[:len(targets)]
        moves.append({str(a): int(t) for a, t in zip(names, targets, strict=True)})
    obs = [f"[{tag}] You reach place {i}: " + ("a bright hall with a chest." if i == n - 1
                                                else "a pit gapes below you." if i in pits
                                                else f"paths lead on ({len(moves[i])}).")
           for i in range(n)]
    return World(obs, moves, n - 1, pits)


def _grid(rng: np.random.Generator, tag: str) -> World:
    w, h = int(rng.integers(3, 6)), int(rng.integers(3, 6))
    goal = w * h - 1
    pit = int(rng.integers(1, goal))
    steps = {"go north": (0, -1), "go south": (0, 1), "go east": (1, 0), "go west": (-1, 0)}
    moves = []
    for c in range(w * h):
        x, y = c % w, c // w
        moves.append({} if c in (goal, pit) else
                     {a: (y + dy) * w + x + dx for a, (dx, dy) in steps.items()
                      if 0 <= x + dx < w and 0 <= y + dy < h})
    obs = [f"[{tag}] Cell {c % w},{c // w} of a {w}x{h} field." for c in range(w * h)]
    return World(obs, moves, goal, frozenset({pit}))


def _tree(rng: np.random.Generator, tag: str) -> World:
    depth, width = int(rng.integers(3, 5)), int(rng.integers(2, 4))
    parent, level = [-1], [0]
    moves: list[dict[str, int]] = [{}]
    frontier = [0]
    while frontier:
        node = frontier.pop(0)
        if level[node] == depth:
            continue
        for k in range(width):
            child = len(parent)
            parent.append(node)
            level.append(level[node] + 1)
            moves.append({"go back": node})
            moves[node][f"take door {k + 1}"] = child
            frontier.append(child)
    leaves = [i for i in range(len(parent)) if level[i] == depth]
    goal = int(rng.choice(leaves))
    pits = frozenset(i for i in leaves if i != goal and rng.random() < 0.5)
    for i in (goal, *pits):
        moves[i] = {}
    obs = [f"[{tag}] Room {i} on floor {level[i]}." for i in range(len(parent))]
    return World(obs, moves, goal, pits)


_BUILD = {"dag": _dag, "grid": _grid, "tree": _tree}
#: A valid command that changes nothing, offered in every place that has exits.
LOOK = "look around"


def make_world(rng: np.random.Generator, graph: str, tag: str) -> World:
    """A world of kind ``graph`` whose goal is reachable from the start; every place with
    exits also offers :data:`LOOK` (a valid command that leaves the agent there)."""
    while True:
        world = _BUILD[graph](rng, tag)
        if np.isfinite(world.distance({world.goal})[world.start]):
            for place, exits in enumerate(world.moves):
                if exits:
                    exits[LOOK] = place
            return world


def _rollout(world: World, rng: np.random.Generator, *, skill: float, invalid: float,
             limit: int, mode: str = "policy", wander: int = 0) -> tuple[list, str]:
    """(place, action, valid, next place) per step and how it ended: ``won``, ``lost`` (a pit
    or no exit left) or ``cut``. Modes: ``policy``, ``optimal`` (shortest, no invalid),
    ``losing`` (straight into the nearest pit), ``avoid`` (never onto the goal), ``wander``
    (roam, never onto the goal or a pit); with ``wander`` > 0, that many steps of roaming,
    then ``losing``."""
    to_goal = world.distance({world.goal})
    to_pit = world.distance(set(world.pits)) if world.pits else to_goal
    place, out = world.start, []
    while len(out) < limit:
        exits = dict(world.moves[place])
        if not exits:
            break
        now = "wander" if len(out) < wander else ("losing" if wander else mode)
        if now in ("avoid", "wander"):
            kept = {a: p for a, p in exits.items()
                    if p != world.goal and (now == "avoid" or p not in world.pits)}
            exits = kept or exits
            if not kept and now == "wander":
                now = "losing"
        if now not in ("optimal", "losing") and rng.random() < invalid:
            out.append((place, str(rng.choice(_NONSENSE)), False, place))
            continue
        names = sorted(exits)
        if now == "optimal" or (now == "policy" and rng.random() < skill):
            action = min(names, key=lambda a: (to_goal[exits[a]], a))
        elif now == "losing":
            action = min(names, key=lambda a: (to_pit[exits[a]], a))
        else:
            action = str(rng.choice(names))
        out.append((place, action, True, exits[action]))
        place = exits[action]
        if place == world.goal or place in world.pits:
            break
    end = "won" if place == world.goal else "lost" if place in world.pits or \
        not world.moves[place] else "cut"
    return out, end


def outcome_rule(scale: str) -> OutcomeRule:
    """The run's outcome rule for its reward scale (:data:`SCALES`)."""
    if scale == "binary10":
        return OutcomeRule(success_reward=10.0)
    if scale == "binary1":
        return OutcomeRule(success_reward=1.0)
    return OutcomeRule(success_reward=1.0, success_threshold=0.8)


def _reward(world: World, walk: list, end: str, scale: str, rng: np.random.Generator,
            flat: bool) -> float:
    if scale != "score":
        return (10.0 if scale == "binary10" else 1.0) if end == "won" else 0.0
    if end == "won":
        return round(float(rng.uniform(0.85, 1.0)), 3)
    if flat:
        return 0.0
    dist = world.distance({world.goal})
    last = walk[-1][3] if walk else world.start
    progress = 1.0 - min(dist[last], dist[world.start]) / max(dist[world.start], 1)
    return round(0.7 * float(progress), 3)


@dataclass
class _Spec:
    graph: str
    scale: str
    size: int
    limit: int
    skill: float


def _walks(kind: str, world: World, spec: _Spec, rng: np.random.Generator
           ) -> list[tuple[list, str]] | None:
    """The group's rollouts for ``kind``, or None when this draw does not show it."""
    n, limit = spec.size, spec.limit
    roll = {"skill": spec.skill, "invalid": 0.05, "limit": limit}
    if kind == "converged":
        return [_rollout(world, rng, **roll, mode="optimal")] * n
    if kind == "collapsed_losing":
        walk = _rollout(world, rng, **roll, mode="losing")
        return [walk] * n if world.pits and walk[1] == "lost" else None
    if kind in ("no_signal", "penalty_only"):
        roll["invalid"] = 0.0 if kind == "no_signal" else 0.2
        walks = [_rollout(world, rng, **roll, mode="avoid") for _ in range(n)]
        invalid = any(not v for w, _ in walks for _, _, v, _ in w)
        return walks if all(e != "won" for _, e in walks) and \
            (kind == "no_signal" or invalid) else None
    if kind == "truncation":
        walks = [_rollout(world, rng, **{**roll, "skill": 0.05}, mode="wander")
                 for _ in range(n)]
        return walks if sum(e == "cut" for _, e in walks) > n // 2 else None
    if kind == "length_weighted":  # long losses (a pit, or cut at the limit), short wins
        long = max(1, n // 4)
        walks = [_rollout(world, rng, **roll, mode="losing", wander=max(limit - 6, 4))
                 for _ in range(long)]
        walks += [_rollout(world, rng, **{**roll, "skill": 0.95}) for _ in range(n - long)]
        lengths = [len(w) for w, _ in walks]
        return walks if all(e != "won" for _, e in walks[:long]) and \
            sum(e == "won" for _, e in walks[long:]) >= n // 2 and \
            min(lengths[:long]) >= 2 * max(lengths[long:]) else None
    if kind == "hub":
        roll["invalid"] = 0.3
    count = max(2, round(n * 3 / 8)) if kind == "partial_group" else n
    walks = [_rollout(world, rng, **roll) for _ in range(count)]
    wins = sum(e == "won" for _, e in walks)
    if not 0 < wins < count:
        return None
    if kind == "duplicate_rows":
        walks.append(walks[int(rng.integers(count))])
    return walks


def _aliased(world: World, walks: list) -> dict[int, str] | None:
    """Two visited places that share an exit name leading to two places: their observation
    made one. None when the walks have no such pair."""
    used: dict[str, set[int]] = {}
    for walk, _ in walks:
        for place, action, valid, _ in walk:
            if valid and action != LOOK:
                used.setdefault(action, set()).add(place)
    for action, places in sorted(used.items()):
        places = sorted(places)
        for i, u in enumerate(places):
            for v in places[i + 1:]:
                if world.moves[u][action] != world.moves[v][action]:
                    return {u: "You are somewhere dark.", v: "You are somewhere dark."}
    return None


def _group_rows(kind: str, spec: _Spec, rng: np.random.Generator, gid: str, task: str
                ) -> list[tuple]:
    """The step rows of one group: (traj_id, t, state_key, action, reward, valid, done,
    task)."""
    for _ in range(200):
        world = make_world(rng, spec.graph, task)
        walks = _walks(kind, world, spec, rng)
        if walks is None:
            continue
        alias = _aliased(world, walks) if kind == "aliased" else {}
        if alias is None:
            continue
        worlds = [world] * len(walks)
        if kind == "mixed_tasks":
            other = make_world(rng, spec.graph, task + "-b")
            half = len(walks) // 2
            more = [_rollout(other, rng, skill=spec.skill, invalid=0.05, limit=spec.limit)
                    for _ in range(len(walks) - half)]
            walks, worlds = walks[:half] + more, worlds[:half] + [other] * len(more)
        break
    else:
        raise RuntimeError(f"no draw showed {kind!r} in 200 tries")
    flat = kind in ("no_signal", "penalty_only", "collapsed_losing", "truncation")
    rows = []
    for k, ((walk, end), w) in enumerate(zip(walks, worlds, strict=True)):
        reward = _reward(w, walk, end, spec.scale, rng, flat)
        if kind in ("collapsed_losing", "converged") and k:
            reward = rows[0][4]  # identical rollouts, identical outcomes
        history: list[str] = []
        for t, (place, action, valid, _) in enumerate(walk):
            key = alias.get(place, w.obs[place])
            if kind == "hub" and t and not walk[t - 1][2]:
                key = "Nothing happens."
            history.append(key)
            if kind == "history_key":
                key = " > ".join(history)
            elif kind == "no_merging":
                key = f"{key} (turn {t}, request {rng.integers(1 << 40):x})"
            rows.append((f"{gid}/r{k}", t, key, action, reward, valid,
                         end != "cut" and t == len(walk) - 1, task))
    return rows


def make_run(seed: int, *, train_steps: int = 6, groups_per_step: int = 16,
             group_size: int | None = None, graph: str | None = None,
             scale: str | None = None, converged: float | None = None,
             per_kind: int = 1, kinds: tuple[str, ...] = KINDS, estimator: str = "g2po",
             limit: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run: its step table (with the recorded ``advantage``) and the truth, one row per
    group (``train_step``, ``group_id``, ``kind``: ``healthy``, ``converged`` or one of
    :data:`KINDS`, and its ``family``: healthy, alarm, integrity or recorded). Unset choices
    are drawn from ``seed``: the graph (:data:`GRAPHS`), reward scale (:data:`SCALES`), group
    size (4, 8, 16), the share of healthy groups that converged (0-0.6) and the step limit
    (12-30); ``truth.attrs["run"]`` holds them, with the ``estimator`` and the outcome
    ``rule``."""
    rng = np.random.default_rng(seed)
    graph = graph or str(rng.choice(GRAPHS))
    scale = scale or str(rng.choice(SCALES))
    size = group_size or int(rng.choice([4, 8, 16]))
    converged = float(rng.uniform(0, 0.6)) if converged is None else converged
    limit = limit or int(rng.integers(12, 31))
    planted = [k for k in kinds for _ in range(per_kind)]
    slots = train_steps * groups_per_step
    if len(planted) > slots // 2:
        raise ValueError(f"{len(planted)} planted groups need at least {2 * len(planted)} "
                         "groups in the run")
    kind_of = np.array(["healthy"] * slots, dtype=object)
    kind_of[rng.choice(slots, len(planted), replace=False)] = planted
    step_of = np.arange(slots) // groups_per_step
    free = np.flatnonzero(kind_of == "healthy")
    weight = (step_of[free] + 1.0) / (step_of[free] + 1.0).sum()  # more converge late
    n_conv = int(round(converged * len(free)))
    kind_of[rng.choice(free, n_conv, replace=False, p=weight)] = "converged"
    rows, truth = [], []
    for slot in range(slots):
        step = int(step_of[slot])
        skill = 0.3 + 0.45 * step / max(train_steps - 1, 1)
        spec = _Spec(graph, scale, size, limit, skill)
        gid = f"s{step}-task{slot % groups_per_step:02d}"
        for row in _group_rows(str(kind_of[slot]), spec, rng, gid, f"task{seed}-{slot}"):
            rows.append((step, gid, *row))
        truth.append((step, gid, kind_of[slot], _FAMILY[kind_of[slot]]))
    steps = pd.DataFrame(rows, columns=["train_step", "group_id", "traj_id", "t", "state_key",
                                        "action", "episode_reward", "is_action_valid", "done",
                                        "task"])
    truth = pd.DataFrame(truth, columns=["train_step", "group_id", "kind", "family"])
    rule = outcome_rule(scale)
    steps["advantage"], changed = recorded_advantage(steps, truth, rule, estimator)
    nil = truth["family"].eq("recorded") & ~changed
    truth.loc[nil, ["kind", "family"]] = ["healthy", "healthy"]  # its record is right after all
    truth.attrs["run"] = {"graph": graph, "scale": scale, "group_size": size,
                          "converged": converged, "limit": limit, "estimator": estimator,
                          "rule": rule}
    return steps, truth


def recorded_advantage(steps: pd.DataFrame, truth: pd.DataFrame, rule: OutcomeRule,
                       estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """What a trainer with ``estimator`` (default parameters, ``rule``) records, (n,) float32
    values as float64, broken on the groups of a recorded-credit kind as :data:`RECORDED_KINDS`
    say; and (n_groups,) bool per row of ``truth``: whether breaking changed a value by more
    than 1e-6 (a plant that changes nothing is no defect)."""
    from g2po.estimators import estimate
    from g2po.params import G2POParams

    params = G2POParams()
    adv = estimate(steps, estimator, **params.for_estimator(estimator, rule))[0]["adv"]
    out = np.asarray(adv, dtype=np.float32).astype(np.float64)
    other = "gigpo" if estimator != "gigpo" else "g2po"
    key = (steps["train_step"].astype(str) + "|" + steps["group_id"]).to_numpy()
    changed = np.zeros(len(truth), dtype=bool)
    for i, row in enumerate(truth.itertuples(index=False)):
        if row.family != "recorded":
            continue
        rows = np.flatnonzero(key == f"{row.train_step}|{row.group_id}")
        rows = rows[np.lexsort((steps["t"].to_numpy()[rows],
                                steps["traj_id"].to_numpy()[rows]))]
        traj = steps["traj_id"].to_numpy()[rows]
        last = np.r_[traj[1:] != traj[:-1], True]
        values = out[rows]
        if row.kind == "rec_zeroed":
            broken = np.where(last, values, 0.0)
        elif row.kind == "rec_broadcast":
            broken = pd.Series(values[last], index=traj[last]).loc[traj].to_numpy()
        elif row.kind == "rec_misaligned":
            broken = np.roll(values, 1)
        elif row.kind == "rec_sign":
            broken = -values
        else:
            broken = estimate(steps.iloc[rows], other,
                              **params.for_estimator(other, rule))[0]["adv"]
        broken = np.asarray(broken, dtype=np.float32).astype(np.float64)
        changed[i] = bool(np.abs(broken - values).max() > 1e-6)
        out[rows] = broken
    return out, changed


def write_run(steps: pd.DataFrame, path: str | Path, *, rule: OutcomeRule,
              estimator: str = "g2po", format: str = "run",
              truth: pd.DataFrame | None = None) -> Path:
    """Write ``steps`` where :func:`loaders.open_log` reads it: a run directory (``run.json``
    with the rule and the estimator, one step file per training step) or one CSV / JSONL /
    Parquet table. In a table, the rows of the copied rollout of each ``duplicate_rows``
    group of ``truth`` (its last) are written twice (verbatim duplicates, which a loader
    drops and reports)."""
    from loaders import RunWriter, write_csv

    path = Path(path)
    if format == "run":
        writer = RunWriter(path, {"env": "defect_runs_b", "estimator": estimator,
                                  "success_reward": rule.success_reward,
                                  "success_threshold": rule.success_threshold})
        for step, rows in steps.groupby("train_step", sort=True):
            writer.write_step(int(step), rows)
        return path
    if truth is not None:
        dup = truth.loc[truth["kind"] == "duplicate_rows", ["train_step", "group_id"]]
        number = steps["traj_id"].str.rpartition("/r")[2].astype(int)
        last = number == number.groupby([steps["train_step"], steps["group_id"]]
                                        ).transform("max")
        planted = steps.set_index(["train_step", "group_id"]).index.isin(
            pd.MultiIndex.from_frame(dup))
        steps = pd.concat([steps, steps[last & planted]], ignore_index=True)
    if format == "csv":
        write_csv(steps, path)
    elif format == "jsonl":
        steps.to_json(path, orient="records", lines=True)
    elif format == "parquet":
        steps.to_parquet(path, index=False)
    else:
        raise ValueError(f"unknown format {format!r}: run, csv, jsonl or parquet")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the run directory or table to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=["run", "csv", "jsonl", "parquet"], default="run")
    parser.add_argument("--estimator", default="g2po")
    args = parser.parse_args(argv)
    steps, truth = make_run(args.seed, estimator=args.estimator)
    run = truth.attrs["run"]
    write_run(steps, args.out, rule=run["rule"], estimator=args.estimator,
              format=args.format, truth=truth)
    truth.to_csv(f"{args.out}.truth.csv", index=False)
    print(f"{args.out}: {len(steps):,} rows, {len(truth)} groups "
          f"({int((truth['family'] != 'healthy').sum())} planted), {run['graph']} worlds, "
          f"{run['scale']} rewards, groups of {run['group_size']}; truth in "
          f"{args.out}.truth.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
