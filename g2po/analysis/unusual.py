"""What is unusual for this run: each group scored against the run's other groups, so that a
defect no check names still rises.

The measures are the groups table's (:func:`g2po.analysis.triage.triage_groups`: rollouts,
steps, state nodes, merge rate, invalid rate, reward spread, lengths, …) and three cheap ones
from the step table (:func:`step_features`: distinct start states, branching, distinct paths).
Each group is compared with its *peers* (:func:`unusual_groups`): the groups of the nearest
training steps (a window of at least ``window_groups`` groups, so a run that learns is compared
with itself at the same stage, never its late steps with its early ones) that have the same
outcome (none, some or every rollout succeeded, so a solved task is compared with solved
tasks, and a task solved along one path with tasks *converged* so); where fewer than
:data:`MIN_PEERS` share the outcome, with the whole window, and then only on the measures its
outcome does not set (:data:`OUTCOME_SETS`: the rewards' spread, the credit, cuts, lengths and
paths differ between won, lost and mixed groups by what winning and losing are; a group's size,
starts and invalid rate do not), so a solved group among failing ones is no news.

A measure's robust z-score is (value − peers' median) / scale, the scale being the peers'
1.4826 · median absolute deviation, but at least the measure's floor (:class:`Measure`: an
absolute one, and one relative to the median), so that a measure every peer has alike (every
group 8 rollouts) still scores a group that differs, by how much it differs. A group's
``unusual`` score is its largest |z|; it fires when that reaches :data:`THRESHOLD`, with
``severity`` = 1 − THRESHOLD / score (0 below), and the measures past the threshold, largest
first, as its reason (value and the peers' usual value), and the fix of the first.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Measure", "MEASURES", "THRESHOLD", "MIN_PEERS", "UNUSUAL_COLUMNS", "OUTCOME_SETS",
           "STEP_MEASURES", "WINDOW_GROUPS", "path_features", "step_features", "score_groups",
           "unusual_groups", "unusual_severity", "run_findings"]


@dataclass(frozen=True)
class Measure:
    """One measure a group is compared on.

    name : column of the feature table; words : how the reason names it; floor, rel : the
    smallest scale a z-score divides by is max(floor, rel · |median|); fix : what to look at
    when it is the group's most unusual measure.
    """

    name: str
    words: str
    floor: float
    rel: float
    fix: str


#: The measures, in the order reasons list ties.
MEASURES: tuple[Measure, ...] = (
    Measure("rollouts", "rollouts", 0.25, 0.05,
            "a group with another number of rollouts than its peers: a partial group, or two "
            "groups under one id; check how rollouts are given their group id"),
    Measure("start_states", "start states", 0.1, 0.1,
            "the rollouts do not share one initial state: the group id may mix tasks"),
    Measure("mean_length", "mean length", 0.5, 0.25,
            "rollouts of another length than their peers': check the step limit and the "
            "task"),
    Measure("length_spread", "length spread", 0.25, 0.25,
            "rollouts of very unequal lengths: step-row statistics weight the long ones more"),
    Measure("merge_rate", "merge rate", 0.05, 0.0,
            "states merge unlike their peers': check the state key (history carried in it, "
            "or a key shared by different states)"),
    Measure("branching", "branching", 0.25, 0.2,
            "the graph branches unlike its peers': check the state key and the actions"),
    Measure("distinct_paths", "distinct paths", 0.1, 0.0,
            "rollouts repeat each other unlike their peers': duplicated trajectories, or a "
            "policy collapsed on this task"),
    Measure("invalid_rate", "invalid rate", 0.05, 0.0,
            "invalid actions unlike their peers': check the action parser on this task"),
    Measure("reward_std", "reward spread", 1e-9, 0.25,
            "rewards spread unlike their peers': check the reward of this task"),
    Measure("truncated_share", "truncated share", 0.1, 0.0,
            "rollouts cut at the step limit unlike their peers'"),
    Measure("zero_adv_share", "zero-advantage share", 0.1, 0.0,
            "credit vanishes on this group's steps unlike its peers'"),
    Measure("adv_abs_mean", "mean |A|", 0.05, 0.25,
            "credit of another size than its peers': check the rewards and the state key"),
)
#: The measures a group's outcome sets by itself: its rewards' spread and the credit (mixed
#: outcomes against all won or all lost), its cuts (a cut rollout lost), its lengths, paths and
#: graph (wins are short, a converged policy takes one path, failures wander). A group compared
#: with peers of other outcomes (too few share its own) is not scored on them: only on its size,
#: its starts and its invalid rate.
OUTCOME_SETS = ("reward_std", "zero_adv_share", "adv_abs_mean", "truncated_share",
                "mean_length", "length_spread", "distinct_paths", "merge_rate", "branching")
#: A group whose largest |z| reaches this fires.
THRESHOLD = 5.0
#: A group's peers are the groups of the nearest training steps, at least this many.
WINDOW_GROUPS = 40
#: The measures read from the step rows (:func:`path_features`), not the groups table.
STEP_MEASURES = ("start_states", "branching", "distinct_paths")
#: Fewer peers with the group's outcome than this: the whole window is its peers.
MIN_PEERS = 8
#: Groups fewer than this in a window: nothing is said (too few to tell what is usual).
MIN_WINDOW = 8
UNUSUAL_COLUMNS = ["train_step", "group_id", "unusual", "severity", "reason", "fix",
                   "measure", "value", "usual", *(f"z_{m.name}" for m in MEASURES)]


def path_features(group: np.ndarray, traj: np.ndarray, node: np.ndarray, action: np.ndarray,
                  t: np.ndarray, next_row: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
    """The measures of :data:`STEP_MEASURES`, each (n_groups,), from the step rows' integer
    codes, each (n_steps,) int64 in any row order: ``group`` (0 … n_groups-1), ``traj``
    (global over groups), ``node`` (a state, never shared by two groups), ``action``, ``t``
    and ``next_row`` (the row of the trajectory's next step, -1 on its last). Vectorised, no
    sort: a rollout's path is compared by two sums of its (state, action) codes weighted by
    random integers per step index, exact in float64 whatever the row order."""
    if not len(group):
        return {"start_states": np.zeros(n_groups, np.int64), "branching": np.ones(n_groups),
                "distinct_paths": np.zeros(n_groups)}
    has = next_row >= 0
    width = np.int64(int(node.max()) + 1)
    edges = pd.unique(node[has] * width + node[next_row[has]])  # hashed: no sort
    node_group = np.zeros(int(width), dtype=np.int64)
    node_group[node] = group
    n_edges = np.bincount(node_group[edges // width], minlength=n_groups)
    n_sources = np.bincount(node_group[pd.unique(edges // width)], minlength=n_groups)
    starts = pd.unique(node[t == 0])
    n_traj = int(traj.max()) + 1
    code = ((node * 1_000_003 + action) % 1_048_573 + 1).astype(np.float64)  # < 2^20
    rng = np.random.default_rng(0)
    span = int(t.max()) + 1
    sums = [np.bincount(traj, weights=code * rng.integers(1, 1 << 20, span)[t],
                        minlength=n_traj) for _ in range(2)]  # < 2^53 below 2^13 steps
    length = np.bincount(traj, minlength=n_traj)
    traj_group = np.zeros(n_traj, dtype=np.int64)
    traj_group[traj] = group
    live = length > 0
    paths = pd.DataFrame({"g": traj_group[live], "a": sums[0][live], "b": sums[1][live],
                          "n": length[live]})
    n_paths = np.bincount(paths.drop_duplicates()["g"], minlength=n_groups)
    rollouts = np.bincount(traj_group[live], minlength=n_groups)
    return {"start_states": np.bincount(node_group[starts], minlength=n_groups),
            "branching": np.where(n_sources > 0, n_edges / np.maximum(n_sources, 1), 1.0),
            "distinct_paths": n_paths / np.maximum(rollouts, 1)}


def step_features(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per group of ``steps`` (``train_step`` where present, ``group_id``) with the
    measures the groups table lacks (:func:`path_features`): ``start_states`` (distinct state
    keys at t = 0), ``branching`` (distinct (state, next state) pairs per state left by a
    step, 1 on a chain) and ``distinct_paths`` (distinct (state, action) sequences per
    rollout). Vectorised; the state keys are compared exactly."""
    keys = [c for c in ("train_step", "group_id") if c in steps.columns]
    group = steps.groupby(keys, sort=True, observed=True).ngroup().to_numpy().astype(np.int64)
    traj = steps.groupby([*keys, "traj_id"], sort=True, observed=True).ngroup().to_numpy() \
        .astype(np.int64)
    state = pd.factorize(steps["state_key"])[0].astype(np.int64)
    node = pd.factorize(group * np.int64(max(int(state.max(initial=0)) + 1, 1)) + state)[0]
    action = pd.factorize(steps["action"])[0].astype(np.int64)
    t = steps["t"].to_numpy(dtype=np.int64)
    order = np.lexsort((t, traj))
    next_row = np.full(len(t), -1, dtype=np.int64)
    follows = traj[order][1:] == traj[order][:-1]
    next_row[order[:-1][follows]] = order[1:][follows]
    n_groups = int(group.max()) + 1 if len(group) else 0
    first = np.full(n_groups, len(group), dtype=np.int64)
    np.minimum.at(first, group, np.arange(len(group)))
    return steps[keys].iloc[first].reset_index(drop=True).assign(
        **path_features(group, traj, node.astype(np.int64), action, t, next_row, n_groups))


def _features(groups: pd.DataFrame, extra: pd.DataFrame | None) -> pd.DataFrame:
    """The measures of each row of the groups table (NaN where a measure is not known: a
    column the table lacks, or a step-table measure without the step table)."""

    def column(name: str) -> np.ndarray:
        return groups[name].to_numpy(dtype=np.float64) if name in groups.columns \
            else np.full(len(groups), np.nan)

    rollouts = column("rollouts")
    mean_length = column("steps") / np.maximum(rollouts, 1)
    out = pd.DataFrame({m.name: column(m.name) for m in MEASURES}, index=groups.index)
    out["mean_length"] = mean_length
    out["length_spread"] = (column("longest") - column("shortest")) / np.maximum(mean_length,
                                                                                 1e-9)
    if extra is not None:
        keys = [c for c in ("train_step", "group_id") if c in groups.columns
                and c in extra.columns]
        joined = groups[keys].merge(extra, on=keys, how="left")
        for col in STEP_MEASURES:
            out[col] = joined[col].to_numpy(dtype=np.float64)
    return out[[m.name for m in MEASURES]]


def _windows(steps: np.ndarray, size: int) -> dict[int, np.ndarray]:
    """Training step → its window: the rows (of ``steps``, (n,) int64) of the nearest
    training steps, widened evenly until it holds at least ``size`` rows (or all)."""
    distinct, counts = np.unique(steps, return_counts=True)
    return {int(distinct[j]): distinct[lo:hi] for j, (lo, hi) in enumerate(_spans(counts, size))}


def _spans(counts: np.ndarray, size: int) -> list[tuple[int, int]]:
    """For each training step (``counts``: its groups, steps in order), the [lo, hi) span of
    steps of its window (:func:`_windows`)."""
    cum = np.r_[0, np.cumsum(counts)]
    out = []
    for j in range(len(counts)):
        lo, hi = j, j + 1
        while cum[hi] - cum[lo] < size and (lo > 0 or hi < len(counts)):
            lo, hi = max(lo - 1, 0), min(hi + 1, len(counts))
        out.append((lo, hi))
    return out


def score_groups(groups: pd.DataFrame, steps: pd.DataFrame | None = None, *,
                 window_groups: int = WINDOW_GROUPS, threshold: float = THRESHOLD
                 ) -> pd.DataFrame:
    """:func:`unusual_groups`' columns, one row per row of ``groups``, in its order (index
    0 … n-1); the measures of :data:`STEP_MEASURES` are read from ``groups`` where it has
    them (the triage's ``unusual`` check measures them per batch), else from ``steps``."""
    extra = step_features(steps) if steps is not None else None
    x = _features(groups, extra).to_numpy(dtype=np.float64)
    n, m = x.shape
    step = groups["train_step"].to_numpy(dtype=np.int64) if "train_step" in groups.columns \
        else np.zeros(n, dtype=np.int64)
    success = groups["success_rate"].to_numpy(dtype=np.float64) \
        if "success_rate" in groups.columns else np.full(n, 0.5)
    outcome = np.where(success <= 0, 0, np.where(success >= 1, 2, 1))
    names = [ms.name for ms in MEASURES]
    if "distinct_paths" in names:  # solved along one path: converged, its own outcome
        paths = x[:, names.index("distinct_paths")]
        rollouts = x[:, names.index("rollouts")]
        outcome = np.where((outcome == 2) & (paths * rollouts <= 1.0 + 1e-9), 3, outcome)
    median, scale = _peer_scales(x, step, outcome, window_groups)
    with np.errstate(all="ignore"):
        z = (x - median) / scale
    z = np.where(np.isfinite(z), z, 0.0)
    top = np.abs(z).argmax(axis=1) if m else np.zeros(n, dtype=np.int64)
    score = np.abs(z)[np.arange(n), top]
    severity = unusual_severity(score, threshold)
    reasons = np.full(n, "", dtype=object)
    for i in np.flatnonzero(severity > 0):  # the others have no measure past the threshold
        reasons[i] = _reason(x[i], z[i], median[i], threshold)
    keys = [c for c in ("train_step", "group_id") if c in groups.columns]
    out = groups[keys].reset_index(drop=True).assign(
        unusual=score, severity=severity, reason=reasons,
        fix=np.where(severity > 0, np.array([ms.fix for ms in MEASURES], dtype=object)[top],
                     ""),
        measure=np.array(names, dtype=object)[top] if m else np.zeros(0, dtype=object),
        value=x[np.arange(n), top], usual=median[np.arange(n), top],
        **{f"z_{ms.name}": z[:, j] for j, ms in enumerate(MEASURES)})
    return out[[c for c in UNUSUAL_COLUMNS if c in out.columns]]


def unusual_severity(score: np.ndarray, threshold: float = THRESHOLD) -> np.ndarray:
    """(n,) 1 − threshold / score where the largest |z| ``score`` reaches the threshold, else
    0: a group twice as far out as the threshold gets 0.5."""
    score = np.asarray(score, dtype=np.float64)
    return np.where(score >= threshold, 1.0 - threshold / np.maximum(score, threshold), 0.0)


def _peer_scales(x: np.ndarray, step: np.ndarray, outcome: np.ndarray, window_groups: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(median, scale), each (n, n_measures): each group's peers' median and the scale its
    z-scores divide by (NaN where its window is too small to tell, or the measure unknown)."""
    n, m = x.shape
    names = [ms.name for ms in MEASURES]
    set_by_outcome = np.isin(names, OUTCOME_SETS)
    median = np.full((n, m), np.nan)
    scale = np.full((n, m), np.nan)
    floor = np.array([ms.floor for ms in MEASURES])
    rel = np.array([ms.rel for ms in MEASURES])
    known = ~np.isnan(x).all(axis=0)  # a measure no group has (a column the table lacks)
    order = np.argsort(step, kind="stable")  # each window a slice of the groups by step
    xs, os_ = x[order][:, known], outcome[order]
    counts = np.unique(step, return_counts=True)[1]
    cum = np.r_[0, np.cumsum(counts)]
    full = np.full(m, np.nan)
    for j, (lo, hi) in enumerate(_spans(counts, window_groups)):
        lo, hi = cum[lo], cum[hi]
        if hi - lo < MIN_WINDOW:
            continue
        here = order[cum[j]:cum[j + 1]]
        window = os_[lo:hi]
        for o in np.unique(outcome[here]):
            same = window == o
            few = same.sum() < MIN_PEERS
            med, mad = _median_mad(xs[lo:hi] if few else xs[lo:hi][same])
            if few and not same.all():  # compared with other outcomes: what it sets is no news
                med = np.where(set_by_outcome[known], np.nan, med)
            rows = here[outcome[here] == o]
            full[known] = med
            median[rows] = full
            full[known] = np.fmax(np.fmax(mad, floor[known]), rel[known] * np.abs(med))
            scale[rows] = full
    return median, scale


def _median_mad(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column medians of ``a`` and 1.4826 · their median absolute deviations, NaN-aware only
    where ``a`` holds a NaN (np.nanmedian is slow on small arrays)."""
    if not np.isnan(a).any():
        med = _sorted_median(a)
        return med, 1.4826 * _sorted_median(np.abs(a - med))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a measure none of them has: NaN
        med = np.nanmedian(a, axis=0)
        return med, 1.4826 * np.nanmedian(np.abs(a - med), axis=0)


def _sorted_median(a: np.ndarray) -> np.ndarray:
    """Column medians of ``a`` (no NaN), by one sort: np.median's per-call overhead is most
    of the cost on a window's few dozen rows."""
    ordered = np.sort(a, axis=0)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2.0


def unusual_groups(groups: pd.DataFrame, steps: pd.DataFrame | None = None, *,
                   window_groups: int = WINDOW_GROUPS, threshold: float = THRESHOLD
                   ) -> pd.DataFrame:
    """Each group of a groups table (:data:`g2po.analysis.triage.TRIAGE_COLUMNS`) scored
    against its peers; ``steps``, the step table it was made from, adds the measures of
    :func:`step_features` (the triage's own table has them already). Returns
    :data:`UNUSUAL_COLUMNS`, most unusual first: ``unusual`` (largest |z|), ``severity``,
    ``reason``, ``fix``, the top ``measure`` with its ``value`` and the peers' ``usual``
    (median), and ``z_<measure>`` for every measure.

    Examples
    --------
    >>> table = pd.DataFrame({"train_step": 0, "group_id": [f"g{i}" for i in range(12)],
    ...     "rollouts": [8] * 11 + [3], "steps": [40] * 11 + [15], "shortest": 4,
    ...     "longest": 6, "success_rate": 0.5})
    >>> out = unusual_groups(table)
    >>> out.loc[0, ["group_id", "measure", "reason"]].tolist()
    ['g11', 'rollouts', "rollouts 3 (peers' usual 8)"]
    >>> int((out["severity"] > 0).sum())
    1
    """
    out = score_groups(groups, steps, window_groups=window_groups, threshold=threshold)
    out = out.sort_values(["severity", "unusual"], ascending=False, kind="stable")
    return out.reset_index(drop=True)


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def _reason(x: np.ndarray, z: np.ndarray, median: np.ndarray, threshold: float) -> str:
    """The measures past the threshold, most unusual first, each with the peers' usual."""
    past = np.flatnonzero(np.abs(z) >= threshold)
    past = past[np.argsort(-np.abs(z[past]), kind="stable")]
    return "; ".join(f"{MEASURES[j].words} {_number(x[j])} (peers' usual "
                     f"{_number(median[j])})" for j in past[:3])


def run_findings(unusual: pd.DataFrame) -> list[str]:
    """The run's words: how many groups stand out, and on which measures most often."""
    fired = unusual[unusual["severity"] > 0]
    if fired.empty:
        return []
    by = fired["measure"].value_counts()
    words = {ms.name: ms.words for ms in MEASURES}
    parts = ", ".join(f"{words[k]} {n:,}" for k, n in by.items())
    return [f"{len(fired):,} of {len(unusual):,} groups stand out from their peers "
            f"(by their most unusual measure: {parts})"]
