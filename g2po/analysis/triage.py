"""The groups table: one row per group of a run, with what is wrong with it, to find the groups
that need a look among hundreds.

:func:`triage_groups` computes it for a step table of any number of groups (one training step
or many) from one G2PO and one GRPO call (:func:`g2po.analysis.alarms.group_signals`, the same
code the group explorer's alarms come from), vectorised over every group at once.
:func:`triage_log` does it for a whole log, training step by training step, with a progress
callback and an on-disk cache keyed by each step file's identity (path, size, modification
time), the G2PO parameters and the outcome rule, so a run opened again is read from the cache
and a step file that changed is computed again.

Columns (:data:`TRIAGE_COLUMNS`):

- ``train_step``, ``group_id``; ``task``: the log's ``task`` column (verl's ``gts`` where the
  loader maps it there), else the group id;
- ``rollouts``, ``steps``; ``success_rate`` (by the rule); ``reward_mean``, ``reward_std``
  (over the rollouts, population std);
- ``zero_adv_share``: the share of steps whose G2PO advantage is ~0
  (:data:`g2po.analysis.alarms.ZERO_ADV`); ``adv_abs_mean``, ``adv_ec_abs_mean``: mean |A| and
  mean |A^EC|;
- ``state_nodes``, ``merge_rate`` (1 − nodes / steps), ``max_value_var`` (the largest node
  value variance);
- ``invalid_rate`` (invalid steps / steps, as the run summaries count it), ``truncated_share``
  (trajectories cut at the step limit, by the rule);
- ``no_signal`` / ``no_signal_grpo``: every G2PO / GRPO advantage of the group is ~0;
- ``n_alarms``: how many kinds of alarm fire on the group, not counting the run's findings
  (:func:`run_findings`); ``alarm_<kind>``: each alarm's raw count (0: it does not fire), kinds
  as :data:`g2po.analysis.alarms.ALARM_KINDS`, run-wide or not; ``run_wide``: the kinds that
  fire here but are findings about the run (said once, not the group's alarms), comma-separated;
- ``shortest`` / ``longest``: the group's shortest and longest rollout (steps);
  ``undone_at_longest``: its failed rollouts of the longest length whose ``done`` the log does
  not give (summed over a run, :func:`truncation_hint` tells a step limit the log does not
  state, as ``g2po validate`` does);
- ``sign_disagree_share``: the share of steps G2PO and GRPO give opposite signs (information,
  which step-level credit is expected to produce: no alarm);
- ``adv_min`` / ``adv_max``: G2PO's smallest and largest advantage; ``aliased_evidence``: the
  group's most-taken split, "'key' + action → next (5×) | other (3×)"; ``hub_evidence``: its
  biggest hub; ``aliased_share`` / ``hub_share``: the share of G2PO's advantage mass (Σ |A|)
  on steps at those nodes;
- ``severity`` (0 … 1) and ``reason``: how much of the group's credit rests on its worst defect
  for the chosen estimator, and that defect in one phrase (:func:`assess`); alarms that fire on
  most of the run are findings about the run (:func:`run_findings`), said once, and left out of
  the severity so the groups that differ from the rest still come first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from g2po.analysis.alarms import (
    ALARM_KINDS,
    ALARM_TITLES,
    ZERO_ADV,
    group_signals,
    short_text,
    split_phrase,
)
from g2po.analysis.history import VALUE_WISE_STRATEGIES
from g2po.analysis.labels import distinguishing_labels, lead_with_difference
from g2po.cache import atomic_file, user_cache_dir
from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule, TruncationHint, flag_values, truncation_from_counts
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.state_keys import resolve_state_key

__all__ = ["TRIAGE_COLUMNS", "ALARM_COLUMNS", "READ_COLUMNS", "triage_groups", "triage_log",
           "filter_groups", "sort_groups", "step_shares", "cache_dir", "default_sort", "assess",
           "run_findings", "Finding", "ESTIMATORS", "truncation_hint", "brief_view"]

#: Alarm count columns, one per kind.
ALARM_COLUMNS = [f"alarm_{kind}" for kind in ALARM_KINDS]
TRIAGE_COLUMNS = ["train_step", "group_id", "task", "severity", "reason", "rollouts", "steps",
                  "success_rate",
                  "reward_mean", "reward_std", "zero_adv_share", "adv_abs_mean",
                  "adv_ec_abs_mean", "state_nodes", "merge_rate", "max_value_var",
                  "invalid_rate", "truncated_share", "shortest", "longest", "undone_at_longest",
                  "no_signal", "no_signal_grpo", "n_alarms",
                  "run_wide", *ALARM_COLUMNS, "sign_disagree_share", "adv_min", "adv_max",
                  "aliased_evidence", "aliased_share", "hub_evidence", "hub_share"]
#: The estimators a group's severity can be judged for (:func:`assess`).
ESTIMATORS = {"g2po": "G2PO", "grpo": "GRPO"}
#: An alarm firing on at least this share of a run's groups (and on at least
#: :data:`RUN_WIDE_MIN` groups) is a finding about the run (:func:`run_findings`).
RUN_WIDE_SHARE = 0.5
RUN_WIDE_MIN = 4
#: The columns of a training step the table needs (those a log has are read; the training
#: step itself is known).
READ_COLUMNS = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
                "is_action_valid", "done", "task"]
#: Bump when the table's meaning changes: cached tables of another version are not used.
TRIAGE_VERSION = 4


def _short_codes(codes: np.ndarray) -> pd.Series:
    """Integer codes as short strings in the step table's text dtype, made by Arrow (no
    Python string per row, and no long observation copied); a negative code (a Categorical's
    missing value) stays missing, so validation still names the row."""
    codes = np.asarray(codes, dtype=np.int64)
    return pa.array(codes, mask=codes < 0).cast(pa.string()).to_pandas()


def _coded(steps: pd.DataFrame, state_key: str) -> tuple[pd.DataFrame, str]:
    """``steps`` with Categorical ``state_key`` / ``action`` columns (run directories read them
    as Parquet dictionaries) replaced by short codes, the state-key strategy applied to the
    distinct keys only where it maps each key on its own; returns the frame and the strategy
    left to apply."""
    changes = {}
    keys = steps["state_key"]
    if isinstance(keys.dtype, pd.CategoricalDtype):
        name = str(state_key).partition(":")[0] if isinstance(state_key, str) else None
        codes = keys.cat.codes.to_numpy().astype(np.int64)
        if name == "exact":  # one code per distinct key already
            changes["state_key"] = _short_codes(codes).array
        elif name in VALUE_WISE_STRATEGIES:
            distinct = pd.Series(np.asarray(keys.cat.categories, dtype=object))
            canonical = pd.Series(resolve_state_key(state_key)(
                distinct, np.zeros(len(distinct), np.int64))).astype(str)
            merged, _ = pd.factorize(canonical, sort=False)
            changes["state_key"] = _short_codes(np.where(codes < 0, -1, merged[codes])).array
            state_key = "exact"
        else:
            changes["state_key"] = np.asarray(keys.astype(object))
    action = steps["action"]
    if isinstance(action.dtype, pd.CategoricalDtype):
        changes["action"] = _short_codes(action.cat.codes.to_numpy()).array
    return (steps.assign(**changes) if changes else steps), state_key


def triage_groups(
    steps: pd.DataFrame,
    *,
    rule: OutcomeRule,
    params: G2POParams = DEFAULT_PARAMS,
    stochastic: bool = False,
    estimator: str = "g2po",
) -> pd.DataFrame:
    """One row per group of ``steps`` (:data:`TRIAGE_COLUMNS`, sorted by training step and
    group id), under the G2PO ``params`` and the run's outcome ``rule``; ``stochastic``
    declares the environment random (no aliasing alarm), ``estimator`` is the one whose
    signal the severity judges (:func:`assess`).

    Examples
    --------
    >>> steps = pd.DataFrame({"group_id": ["g", "g", "h", "h"], "traj_id": ["a", "b"] * 2,
    ...     "t": 0, "state_key": "s", "action": "go", "episode_reward": [0.0, 0.0, 10.0, 0.0],
    ...     "is_action_valid": True})
    >>> table = triage_groups(steps, rule=OutcomeRule())
    >>> table[["group_id", "success_rate", "no_signal", "alarm_no_signal"]]
      group_id  success_rate  no_signal  alarm_no_signal
    0        g           0.0       True                2
    1        h           0.5      False                0
    """
    if steps.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in TRIAGE_COLUMNS})
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; one of {', '.join(ESTIMATORS)}")
    return assess(_group_rows(steps, rule=rule, params=params, stochastic=stochastic,
                              text=_text_lookup([steps])), estimator)


_TextLookup = Callable[[str, np.ndarray], list[str]]


def _text_lookup(parts: Sequence[Mapping[str, pd.Series]]) -> _TextLookup:
    """(column, positional rows of the parts' concatenation) → the rows' text, read from each
    part's own column (a frame, or a dict of its ``state_key`` and ``action``): the few rows
    an evidence phrase quotes, without carrying every row's text (a run directory's
    Categorical observations) through the batch."""
    ends = np.cumsum([len(p["state_key"]) for p in parts])

    def text(column: str, rows: np.ndarray) -> list[str]:
        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(ends, rows, side="right")
        out = np.empty(len(rows), dtype=object)
        for i in np.unique(which):
            at = which == i
            taken = parts[i][column].array.take(rows[at] - (ends[i - 1] if i else 0))
            out[at] = [str(v) for v in np.asarray(taken, dtype=object)]
        return out.tolist()
    return text


def _group_rows(steps: pd.DataFrame, *, rule: OutcomeRule, params: G2POParams,
                stochastic: bool, text: _TextLookup) -> pd.DataFrame:
    """:func:`triage_groups` before :func:`assess` (severity, reason, ``n_alarms`` and
    ``run_wide`` are judged over the whole run, not over one batch of it); ``text`` reads
    the state keys and actions the evidence quotes (:func:`_text_lookup`)."""
    steps, state_key = _coded(steps, params.state_key)
    sig = group_signals(steps, rule=rule, params=replace(params, state_key=state_key),
                        stochastic=stochastic)
    ix, cols = sig.ix, sig.g2po
    G = ix.n_groups
    first = np.full(G, ix.n_steps, dtype=np.int64)
    np.minimum.at(first, ix.group, np.arange(ix.n_steps, dtype=np.int64))
    group_id = steps["group_id"].to_numpy()[first]
    train_step = steps["train_step"].to_numpy(dtype=np.int64)[first] \
        if "train_step" in steps.columns else np.zeros(G, dtype=np.int64)
    task = group_id
    if "task" in steps.columns:
        given = steps["task"].to_numpy(dtype=object)[first]
        task = np.where(pd.isna(given), group_id, given)

    n_steps = np.bincount(ix.group, minlength=G)
    rollouts = np.bincount(ix.traj_group, minlength=G)

    def per_step_mean(values: np.ndarray) -> np.ndarray:
        return np.bincount(ix.group, weights=np.asarray(values, dtype=np.float64),
                           minlength=G) / np.maximum(n_steps, 1)

    def per_traj_mean(values: np.ndarray) -> np.ndarray:
        return np.bincount(ix.traj_group, weights=np.asarray(values, dtype=np.float64),
                           minlength=G) / np.maximum(rollouts, 1)

    last = np.flatnonzero(ix.next_row < 0)  # each trajectory's last step
    length = np.zeros(ix.n_traj, dtype=np.int64)
    length[ix.traj[last]] = ix.length[last]
    done = np.full(ix.n_traj, np.nan)
    if "done" in steps.columns:
        done[ix.traj[last]] = flag_values(steps["done"])[last]
    shortest = np.full(G, np.iinfo(np.int64).max)
    longest = np.zeros(G, dtype=np.int64)
    np.minimum.at(shortest, ix.traj_group, length)
    np.maximum.at(longest, ix.traj_group, length)
    undone = (length == longest[ix.traj_group]) & np.isnan(done) & \
        ~rule.success(ix.traj_reward)
    reward_mean = per_traj_mean(ix.traj_reward)
    reward_var = per_traj_mean((ix.traj_reward - reward_mean[ix.traj_group]) ** 2)
    node_var = sig.by_node("node_value_var")
    max_var = np.zeros(G)
    np.maximum.at(max_var, ix.node_group, node_var)
    n_states = np.bincount(ix.node_group, minlength=G)
    counts = np.column_stack([sig.counts[k] for k in ALARM_KINDS])
    adv = cols["adv"]
    adv_min = np.full(G, np.inf)
    adv_max = np.full(G, -np.inf)
    np.minimum.at(adv_min, ix.group, adv)
    np.maximum.at(adv_max, ix.group, adv)
    mass = np.bincount(ix.group, weights=np.abs(adv), minlength=G)

    def mass_share(nodes: np.ndarray) -> np.ndarray:
        on = np.bincount(ix.group, weights=np.abs(adv) * nodes[ix.node], minlength=G)
        return np.where(mass > 0, on / np.maximum(mass, 1e-300), 0.0)

    aliased_evidence = np.full(G, "", dtype=object)
    if sig.counts["aliased"].any() and len(sig.splits):
        splits = sig.splits  # sorted by group, the group's most-taken pair first
        first = splits["_pair"].to_numpy() == \
            splits.groupby("group", sort=False)["_pair"].transform("first").to_numpy()
        shown = splits[first]
        group_of, row, count = (shown[c].to_numpy() for c in ("group", "row", "count"))
        starts = np.flatnonzero(np.r_[True, group_of[1:] != group_of[:-1]])
        quoted = text("state_key", np.r_[shown["next_row"].to_numpy(), row[starts]])
        nexts, keys = quoted[:len(shown)], quoted[len(shown):]
        actions = text("action", row[starts])
        for i, (a, b) in enumerate(zip(starts, [*starts[1:], len(shown)], strict=True)):
            aliased_evidence[group_of[a]] = split_phrase(keys[i], actions[i], nexts[a:b],
                                                         count[a:b])
    hub_evidence = np.full(G, "", dtype=object)
    if sig.hub.any():
        hubs = np.flatnonzero(sig.hub)
        hubs = hubs[np.lexsort((-sig.in_sources[hubs], ix.node_group[hubs]))]
        hubs = hubs[np.r_[True, ix.node_group[hubs][1:] != ix.node_group[hubs][:-1]]]
        first_row = np.full(ix.n_nodes, -1, dtype=np.int64)
        first_row[ix.node[::-1]] = np.arange(ix.n_steps - 1, -1, -1)
        for h, key in zip(hubs, text("state_key", first_row[hubs]), strict=True):
            hub_evidence[ix.node_group[h]] = (
                f"'{short_text(key)}' reached from {sig.in_sources[h]} states, "
                f"{sig.invalid_arrival_share[h]:.0%} through invalid actions")
    table = pd.DataFrame({
        "severity": 0.0, "reason": "", "run_wide": "",
        "train_step": train_step,
        "group_id": pd.array(group_id, dtype=object),
        "task": pd.array(task, dtype=object),
        "rollouts": rollouts.astype(np.int64),
        "steps": n_steps.astype(np.int64),
        "success_rate": per_traj_mean(rule.success(ix.traj_reward)),
        "reward_mean": reward_mean,
        "reward_std": np.sqrt(reward_var),
        "zero_adv_share": per_step_mean(np.abs(cols["adv"]) <= ZERO_ADV),
        "adv_abs_mean": per_step_mean(np.abs(cols["adv"])),
        "adv_ec_abs_mean": per_step_mean(np.abs(cols["adv_ec"])),
        "state_nodes": n_states.astype(np.int64),
        "merge_rate": merge_rate(n_states, n_steps),
        "max_value_var": max_var,
        "invalid_rate": per_step_mean(ix.invalid),
        "truncated_share": per_traj_mean(sig.truncated),
        "shortest": shortest, "longest": longest,
        "undone_at_longest": np.bincount(ix.traj_group, weights=undone, minlength=G
                                         ).astype(np.int64),
        "no_signal": sig.zero["g2po"],
        "no_signal_grpo": sig.zero["grpo"],
        "n_alarms": (counts > 0).sum(axis=1).astype(np.int64),
        **{col: counts[:, i] for i, col in enumerate(ALARM_COLUMNS)},
        "sign_disagree_share": per_step_mean(sig.opposite),
        "adv_min": adv_min, "adv_max": adv_max,
        "aliased_evidence": pd.array(aliased_evidence, dtype=object),
        "aliased_share": mass_share(sig.aliased & ~sig.hub),
        "hub_evidence": pd.array(hub_evidence, dtype=object),
        "hub_share": mass_share(sig.hub),
    })
    return table[TRIAGE_COLUMNS]


# -- severity, reasons and the run's findings ------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """An alarm that fires on most of a run's groups: a property of the run, said once.

    kind : the alarm kind; groups : how many groups it fires on, of ``total``;
    text : what it is, its likely cause and the fix, in two or three sentences.
    """

    kind: str
    groups: int
    total: int
    text: str


_FINDING_TEXT = {
    "truncation": "episodes are cut at the step limit and valued as failures. Likely cause: a "
                  "step limit shorter than the task needs. Fix: say how the log marks the "
                  "limit (the sidebar's outcome rule, or --truncate-at N), or raise the limit. "
                  "Where the limit is the task's own budget (running out of steps is failing "
                  "the task), the cut episodes are failures and nothing needs fixing.",
    "aliased": "the same (state key, action) leads on to different next states. Likely cause: "
               "a state key that leaves out something every state carries (the inventory, "
               "what was said). Fix: another state key (the sidebar's State key, --state-key "
               "regex:…), or declare the environment stochastic if it is.",
    "hub": "states reached from many others (\"Nothing happens.\") merge unrelated situations. "
           "Fix: a state key that keeps the location (--state-key regex:…).",
    "no_merging": "almost no two steps share a state key, so G2PO's node terms are empty. "
                  "Likely cause: the key holds the history or a step counter. Fix: the "
                  "normalized or a regex state key.",
    "no_signal": "groups give no training signal. Likely cause: a success reward the rewards "
                 "never reach. Fix: the outcome rule's success reward (--success-reward).",
    "penalty_amplification": "every rollout gets the same reward, so the invalid-action "
                             "penalty is the only signal. Check the success reward, or use "
                             "mode = mean_norm / a smaller penalty.",
    "all_success": "every rollout succeeds: the tasks are too easy to teach anything.",
    "collapsed": "every rollout of a group is the same: the policy has collapsed.",
}


def run_findings(table: pd.DataFrame) -> list[Finding]:
    """The alarms firing on at least :data:`RUN_WIDE_SHARE` of the table's groups (and on at
    least :data:`RUN_WIDE_MIN`): findings about the run, each with its likely cause and fix."""
    total = len(table)
    out = []
    for kind in ALARM_KINDS:
        n = int((table[f"alarm_{kind}"].to_numpy() > 0).sum()) if total else 0
        if n >= RUN_WIDE_MIN and n >= RUN_WIDE_SHARE * total:
            text = _no_signal_text(table) if kind == "no_signal" else _FINDING_TEXT[kind]
            out.append(Finding(kind, n, total,
                               f"{ALARM_TITLES[kind]} on {n} of {total} groups: {text}"))
    return out


def _no_signal_text(table: pd.DataFrame) -> str:
    """The no-signal finding with the cause its groups show: a success reward no rollout of the
    run reaches, or (where some do) groups the policy has solved, or cannot solve yet."""
    success = table["success_rate"].to_numpy(float)
    if not np.nanmax(success, initial=0.0) > 0:
        return _FINDING_TEXT["no_signal"]
    fires = table["alarm_no_signal"].to_numpy() > 0
    solved, failed = int((success[fires] == 1).sum()), int((success[fires] == 0).sum())
    cause = ("tasks the policy has solved (a run that learned them, or tasks too easy)"
             if solved >= failed else "tasks the policy cannot solve yet")
    return (f"groups give no training signal ({solved} where every rollout succeeded, {failed} "
            f"where every rollout failed). Likely cause: {cause}; rollouts do reach the "
            "success reward in other groups, so it is not the outcome rule. Fix: a task pool "
            "of harder (or easier) tasks, or more rollouts per task.")


def assess(table: pd.DataFrame, estimator: str = "g2po",
           exclude: Iterable[str] | None = None) -> pd.DataFrame:
    """The table with ``severity`` and ``reason`` for ``estimator`` (one of
    :data:`ESTIMATORS`): each group's worst defect, not counting the kinds in ``exclude``
    (default: the run's findings, :func:`run_findings`, so a run-wide alarm does not rank);
    ``n_alarms`` counts the other kinds only, ``run_wide`` names the excluded ones firing on
    the group (their raw counts stay in ``alarm_<kind>``, so assessing again gives the same).

    Severity is how much of the group's credit rests on the defect: 1 where the estimator
    gets nothing to learn from (no signal; every rollout the same, so any advantage is an
    artifact), 0.9 where the invalid-action penalty is the only signal, 0.6 for an all-success
    group under G2PO (its edge term ranks steps by depth alone), the share of G2PO's |A| on the
    aliased states (not hubs) or the hubs (at least 0.05 when the alarm fires), half the share
    of cut rollouts for truncation, 0.5 for no merging."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; one of {', '.join(ESTIMATORS)}")
    skip = {f.kind for f in run_findings(table)} if exclude is None else set(exclude)
    n = len(table)
    name = ESTIMATORS[estimator]
    raw = {k: table[f"alarm_{k}"].to_numpy() > 0 for k in ALARM_KINDS}
    fires = {k: raw[k] & (k not in skip) for k in ALARM_KINDS}
    n_alarms = np.sum([fires[k] for k in ALARM_KINDS], axis=0, dtype=np.int64) if n else \
        np.zeros(0, dtype=np.int64)
    run_wide = np.full(n, "", dtype=object)
    for k in (k for k in ALARM_KINDS if k in skip):
        run_wide = np.where(raw[k], np.where(run_wide == "", k, run_wide + ", " + k), run_wide)
    zero = table["no_signal" if estimator == "g2po" else "no_signal_grpo"].to_numpy(bool) & \
        ("no_signal" not in skip)
    rollouts = table["rollouts"].to_numpy()
    lo, hi = table["adv_min"].to_numpy(), table["adv_max"].to_numpy()
    g2po = estimator == "g2po"

    def spread(i: int) -> str:
        return f"A from {lo[i]:+.2f} to {hi[i]:+.2f}"

    def why_zero(i: int) -> str:
        if table["reward_std"].iat[i] > 0:
            return "no step's score differs from its reference"
        return f"all {rollouts[i]} rollouts got reward {table['reward_mean'].iat[i]:g}" + \
            (", no invalid action" if table["invalid_rate"].iat[i] == 0 else "")

    candidates = [  # (severity per row, reason of row i), worst kind first on equal severity
        (np.where(fires["collapsed"], 1.0, 0.0),
         lambda i: f"collapsed: {rollouts[i]} identical rollouts" +
         (f" (G2PO's {spread(i)} is the discount's artifact)" if g2po and hi[i] > lo[i]
          else "")),
        (np.where(zero, 1.0, 0.0), lambda i: f"no signal under {name}: {why_zero(i)}"),
        (np.where(fires["penalty_amplification"] & ~zero, 0.9, 0.0),
         lambda i: f"penalty is the only signal: {spread(i)}"),
        (np.where(fires["all_success"] & ~zero & g2po, 0.6, 0.0),
         lambda i: f"all {rollouts[i]} succeeded: G2PO ranks steps by depth alone, "
                   f"{spread(i)}"),
        (np.where(fires["aliased"], np.maximum(table["aliased_share"].to_numpy(), 0.05), 0.0),
         lambda i: f"key merges states: {table['aliased_evidence'].iat[i]}"),
        (np.where(fires["hub"], np.maximum(table["hub_share"].to_numpy(), 0.05), 0.0),
         lambda i: f"hub: {table['hub_evidence'].iat[i]}"),
        (np.where(fires["truncation"], 0.5 * table["truncated_share"].to_numpy(), 0.0),
         lambda i: f"{table['alarm_truncation'].iat[i]} of {rollouts[i]} rollouts cut at the "
                   "step limit"),
        (np.where(fires["no_merging"], 0.5, 0.0),
         lambda i: f"no merging: merge rate {table['merge_rate'].iat[i]:.0%}"),
    ]
    sev = np.column_stack([c[0] for c in candidates]) if n else np.zeros((0, len(candidates)))
    worst = np.argmax(sev, axis=1) if n else np.zeros(0, dtype=np.int64)
    severity = sev[np.arange(n), worst] if n else np.zeros(0)
    others = (sev > 0).sum(axis=1) - (severity > 0)
    reason = [candidates[w][1](i) + (f" (+{others[i]} more)" if others[i] else "")
              if severity[i] > 0 else "" for i, w in enumerate(worst)]
    return table.assign(severity=severity, reason=pd.array(reason, dtype=object),
                        n_alarms=n_alarms, run_wide=pd.array(run_wide, dtype=object))


def truncation_hint(table: pd.DataFrame, rule: OutcomeRule) -> TruncationHint | None:
    """Failures of the table's groups that look cut at a step limit the log does not state
    (:func:`g2po.outcomes.detect_truncation`, from the per-group counts, so the whole run is
    judged without reading it again); None when ``rule`` already has a ``truncate_at``."""
    if rule.truncate_at is not None or table.empty:
        return None
    longest = table["longest"].to_numpy(dtype=np.int64)
    top = int(longest.max())
    rollouts = table["rollouts"].to_numpy(dtype=np.int64)
    failures = np.rint(rollouts * (1 - table["success_rate"].to_numpy(dtype=np.float64)))
    return truncation_from_counts(
        top, int(table["undone_at_longest"].to_numpy()[longest == top].sum()),
        int(failures.sum()), int(rollouts.sum()),
        bool((table["shortest"].to_numpy() == top).all()))


def brief_view(table: pd.DataFrame, *, id_limit: int = 20,
               task_limit: int = 28) -> tuple[pd.DataFrame, str]:
    """The columns to scan first, for a terminal, and the start every group id shares.

    ``step`` (only when the table spans several training steps); ``group``: the part of the
    id that tells it apart (:func:`lead_with_difference`, as the app's tables show ids);
    ``task``: short tasks (verl's ``gts``) as they are, long ones (a TextWorld intro
    paragraph) by the words that tell them apart (:func:`distinguishing_labels`), left out
    when every row has the same task or no task but its group id; ``severity``; ``success``;
    ``reason``. Text as the log gave it (a terminal escapes it)."""
    ids = table["group_id"].astype(str).tolist()
    short, prefix = lead_with_difference(ids, limit=id_limit)
    out = {}
    if table["train_step"].nunique() > 1:
        out["step"] = table["train_step"].to_numpy()
    out["group"] = short
    tasks = table["task"].astype(str)
    distinct = list(dict.fromkeys(tasks))
    if len(distinct) > 1 and not (tasks.to_numpy() == np.asarray(ids, dtype=object)).all():
        long = [t for t in distinct if len(" ".join(t.split())) > task_limit]
        names = dict(zip(long, distinguishing_labels(long, limit=task_limit), strict=True))
        out["task"] = [names.get(t) or " ".join(t.split()) for t in tasks]
    out["severity"] = [f"{v:.2f}" for v in table["severity"].to_numpy(dtype=np.float64)]
    out["success"] = [f"{v:.0%}" for v in table["success_rate"].to_numpy(dtype=np.float64)]
    out["reason"] = table["reason"].astype(str).to_numpy()
    return pd.DataFrame(out, index=table.index), prefix


# -- the table's uses ------------------------------------------------------------------------

def default_sort() -> list[tuple[str, bool]]:
    """The table's default order, worst first: by severity (:func:`assess`), then most kinds
    of alarm, then the most steps — training step and group id only as the last resort
    ((column, descending) pairs)."""
    return [("severity", True), ("n_alarms", True), ("steps", True),
            ("train_step", False), ("group_id", False)]


def sort_groups(table: pd.DataFrame, by: str | None = None,
                descending: bool | None = None) -> pd.DataFrame:
    """The table sorted by column ``by`` (default: :func:`default_sort`); numbers and flags
    largest first unless ``descending`` is False, text A to Z unless it is True; ties keep
    training step and group order. Raises ``KeyError`` naming the columns on an unknown one."""
    if by is None:
        keys = default_sort()
    else:
        if by not in table.columns:
            raise KeyError(f"no column {by!r} to sort by; columns: {', '.join(table.columns)}")
        text = table[by].dtype == object or pd.api.types.is_string_dtype(table[by].dtype)
        keys = [(by, (not text) if descending is None else descending),
                ("train_step", False), ("group_id", False)]
    keys = [(c, d) for i, (c, d) in enumerate(keys)
            if c in table.columns and c not in [k for k, _ in keys[:i]]]
    return table.sort_values([c for c, _ in keys], ascending=[not d for _, d in keys],
                             kind="stable").reset_index(drop=True)


def filter_groups(table: pd.DataFrame, *, alarms: Iterable[str] = (),
                  task: str | None = None, min_success: float | None = None,
                  max_success: float | None = None,
                  train_steps: Iterable[int] | None = None) -> pd.DataFrame:
    """The rows where any of ``alarms`` fires (kinds of :data:`ALARM_KINDS`, or
    ``no_signal_g2po`` / ``no_signal_grpo`` for the estimator's own flag), whose task or group
    id contains ``task`` (case-insensitive), whose success rate lies in
    [``min_success``, ``max_success``], at ``train_steps``. Raises ``KeyError`` on an unknown
    alarm kind."""
    keep = np.ones(len(table), dtype=bool)
    alarms = list(alarms)
    if alarms:
        hit = np.zeros(len(table), dtype=bool)
        for kind in alarms:
            if kind == "no_signal_g2po":
                hit |= table["no_signal"].to_numpy(dtype=bool)
            elif kind == "no_signal_grpo":
                hit |= table["no_signal_grpo"].to_numpy(dtype=bool)
            elif kind in ALARM_KINDS:
                hit |= table[f"alarm_{kind}"].to_numpy() > 0
            else:
                raise KeyError(f"unknown alarm {kind!r}; known: "
                               f"{', '.join([*ALARM_KINDS, 'no_signal_g2po', 'no_signal_grpo'])}")
        keep &= hit
    if task:
        needle = task.lower()
        keep &= (table["task"].astype(str).str.lower().str.contains(needle, regex=False) |
                 table["group_id"].astype(str).str.lower().str.contains(needle, regex=False)
                 ).to_numpy()
    if min_success is not None:
        keep &= table["success_rate"].to_numpy() >= min_success - 1e-12
    if max_success is not None:
        keep &= table["success_rate"].to_numpy() <= max_success + 1e-12
    if train_steps is not None:
        keep &= np.isin(table["train_step"].to_numpy(), list(train_steps))
    return table[keep].reset_index(drop=True)


def step_shares(table: pd.DataFrame) -> pd.DataFrame:
    """Per training step of a groups table: ``groups``, the share of groups with no G2PO
    signal (``no_signal``) and with none under GRPO (``no_signal_grpo``), and the share with
    each alarm (``alarm_<kind>``)."""
    columns = ["train_step", "groups", "no_signal", "no_signal_grpo", *ALARM_COLUMNS]
    if table.empty:
        return pd.DataFrame(columns=columns)
    flags = table[["no_signal", "no_signal_grpo"]].astype(np.float64).assign(
        **{c: (table[c] > 0).astype(np.float64) for c in ALARM_COLUMNS})
    grouped = flags.groupby(table["train_step"].to_numpy(), sort=True)
    out = grouped.mean()
    out.insert(0, "groups", grouped.size())
    return out.rename_axis("train_step").reset_index()[columns]


# -- a whole log, cached on disk -------------------------------------------------------------

class _Log(Protocol):  # what triage_log needs of a loaders.Log
    path: Path
    format: str

    def train_steps(self) -> list[int]: ...
    def columns_of_steps(self, train_steps: Sequence[int], columns: Sequence[str]
                         ) -> Iterable[tuple[int, pd.DataFrame]]: ...
    def step_source(self, train_step: int) -> Path | None: ...
    def rule(self) -> OutcomeRule: ...


def cache_dir() -> Path:
    """Where groups tables are cached: ``$G2PO_CACHE/triage`` (default ``~/.cache/g2po``)."""
    return user_cache_dir() / "triage"


def _identity(log: _Log, train_step: int) -> tuple[str, int, int] | None:
    """(path, size, mtime in ns) of the file holding one training step, or None."""
    source = log.step_source(train_step)
    if source is None:
        return None
    try:
        stat = Path(source).stat()
    except OSError:
        return None
    return str(Path(source).resolve()), int(stat.st_size), int(stat.st_mtime_ns)


def _cache_file(log: _Log, rule: OutcomeRule, params: G2POParams, folder: Path,
                stochastic: bool = False) -> Path:
    from g2po import __version__

    key = json.dumps({"v": TRIAGE_VERSION, "g2po": __version__, "format": log.format,
                      "path": str(Path(log.path).resolve()),
                      "read": repr(sorted(getattr(log, "read_options", {}).items())),
                      "params": params.as_dict(), "rule": repr(rule),
                      "stochastic": stochastic}, sort_keys=True, default=str)
    return folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.parquet"


def _read_cache(path: Path) -> pd.DataFrame | None:
    try:
        frame = pd.read_parquet(path)
    except Exception:  # noqa: BLE001 - a missing, partial or foreign file is no cache
        return None
    needed = {"_source", "_size", "_mtime_ns", *TRIAGE_COLUMNS}
    return frame if needed <= set(frame.columns) else None


def _write_cache(path: Path, frame: pd.DataFrame) -> None:
    """Write atomically (a reader never sees half a file); a cache that cannot be written is
    no error."""
    try:
        with atomic_file(path) as tmp:
            frame.to_parquet(tmp, index=False)
    except OSError:
        pass


def triage_log(
    log: _Log,
    train_steps: Sequence[int] | None = None,
    *,
    rule: OutcomeRule | None = None,
    params: G2POParams = DEFAULT_PARAMS,
    cache: bool | Path = True,
    progress: Callable[[int, int], None] | None = None,
    batch_rows: int = 200_000,
    stochastic: bool = False,
    estimator: str = "g2po",
) -> pd.DataFrame:
    """The groups table (:func:`triage_groups`) of ``train_steps`` of a log (default: all),
    under ``rule`` (default: the log's own, :meth:`loaders.Log.rule`).

    Training steps are read with only the columns the table needs and computed in batches of
    about ``batch_rows`` step rows. With ``cache`` (True: :func:`cache_dir`, or a folder),
    each step's rows are kept on disk with the identity of its file (path, size, mtime): a
    step whose file is unchanged is not read again, one whose file changed is. Logs that are
    one table in memory have no step files and are computed each time. ``progress`` is called
    with (training steps done, training steps in all) as the work goes: first with those the
    cache held, then as each step is read, last with (all, all). ``stochastic`` and
    ``estimator`` as in :func:`triage_groups`; the severity is judged over the whole table
    (a run-wide alarm does not rank, :func:`run_findings`).
    """
    rule = rule or log.rule()
    steps = list(log.train_steps() if train_steps is None else train_steps)
    folder = None if cache is False else (cache_dir() if cache is True else Path(cache))
    identity = {s: _identity(log, s) for s in steps}
    path = _cache_file(log, rule, params, folder, stochastic) if folder is not None else None
    old = _read_cache(path) if path is not None and any(identity.values()) else None
    done: dict[int, pd.DataFrame] = {}
    if old is not None:
        for s, rows in old.groupby("train_step", sort=False):
            ident = identity.get(int(s))
            if ident is not None and (rows["_source"].iloc[0], int(rows["_size"].iloc[0]),
                                      int(rows["_mtime_ns"].iloc[0])) == ident:
                done[int(s)] = rows
    todo = [s for s in steps if s not in done]
    total, count = len(steps), len(steps) - len(todo)
    if progress is not None:
        progress(count, total)
    batch: list[pd.DataFrame] = []
    batch_text: list[dict[str, pd.Series]] = []  # each step's key and action text, uncoded
    batch_steps: list[int] = []
    rows_in_batch = 0
    applied = params.state_key  # the strategy left once the distinct keys were mapped

    def flush() -> None:
        nonlocal batch, batch_text, batch_steps, rows_in_batch, count
        if not batch:
            return
        frame = batch[0] if len(batch) == 1 else pd.concat(batch, ignore_index=True)
        table = _group_rows(frame, rule=rule, params=replace(params, state_key=applied),
                            stochastic=stochastic, text=_text_lookup(batch_text))
        for s, rows in table.groupby("train_step", sort=False):
            ident = identity.get(int(s)) or ("", -1, -1)
            done[int(s)] = rows.assign(_source=ident[0], _size=ident[1], _mtime_ns=ident[2])
        count += len(batch_steps)
        batch, batch_text, batch_steps, rows_in_batch = [], [], [], 0
        if progress is not None:
            progress(count, total)

    for s, frame in log.columns_of_steps(todo, READ_COLUMNS):
        frame = frame.assign(train_step=np.int64(s))
        batch_text.append({"state_key": frame["state_key"], "action": frame["action"]})
        frame, applied = _coded(frame, params.state_key)
        batch.append(frame)
        batch_steps.append(s)
        rows_in_batch += len(frame)
        if rows_in_batch >= batch_rows:
            flush()
        elif progress is not None:  # reading is most of the work: count a step once read
            progress(count + len(batch_steps), total)
    flush()
    if path is not None and todo and any(identity.values()):
        keep = [done[s] for s in steps if s in done and identity.get(s) is not None]
        if old is not None:  # steps not asked for this time stay cached
            keep.append(old[~old["train_step"].isin(steps)])
        if keep:
            _write_cache(path, pd.concat(keep, ignore_index=True))
    parts = [done[s] for s in steps if s in done]
    if not parts:
        return triage_groups(pd.DataFrame(), rule=rule)
    out = pd.concat(parts, ignore_index=True)[TRIAGE_COLUMNS]
    return assess(out.astype({"no_signal": bool, "no_signal_grpo": bool}), estimator)
