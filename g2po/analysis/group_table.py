"""The groups table of a step table: one row per group, its statistics and every registered
check's measure (:mod:`g2po.analysis.checks`), vectorised over all groups at once from one
G2PO and one GRPO call (:func:`g2po.analysis.signals.group_signals`, the signals the group
explorer's alarms read too). :func:`triage_groups` also judges it
(:func:`g2po.analysis.findings.assess`); the whole-log version, cached on disk, is
:func:`g2po.analysis.triage_cache.triage_log`. The columns are described in
:mod:`g2po.analysis.triage`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from g2po.analysis.checks import Batch, list_checks
from g2po.analysis.checks.registry import ESTIMATORS
from g2po.analysis.checks.rows import separate_repeats
from g2po.analysis.findings import assess
from g2po.analysis.signals import ZERO_ADV, group_signals
from g2po.errors import StepTableError
from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule, flag_values
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.state_keys import StateKeyFn, distinct_key_codes, strategy_columns

if TYPE_CHECKING:
    from g2po.analysis.recorded import StatedCredit

__all__ = ["TRIAGE_COLUMNS", "ALARM_COLUMNS", "READ_COLUMNS", "BASE_COLUMNS",
           "triage_columns", "alarm_columns", "read_columns",
           "triage_groups", "group_rows", "coded", "text_lookup", "TextLookup"]

#: The statistics every group gets, before the checks' columns.
BASE_COLUMNS = ["train_step", "group_id", "task", "severity", "reason", "rollouts", "steps",
                "success_rate", "reward_mean", "reward_std", "zero_adv_share", "adv_abs_mean",
                "adv_ec_abs_mean", "state_nodes", "merge_rate", "max_value_var",
                "invalid_rate", "truncated_share", "shortest", "longest", "shortest_win",
                "undone_at_longest", "no_signal", "no_signal_grpo", "n_alarms", "run_wide"]


def alarm_columns() -> list[str]:
    """One count column per registered check, in the registry's order."""
    return [c.column for c in list_checks()]


def triage_columns() -> list[str]:
    """The groups table's columns: the statistics, each check's count, then each check's
    evidence columns."""
    return [*BASE_COLUMNS, *alarm_columns(), "sign_disagree_share", "adv_min", "adv_max",
            *(col for c in list_checks() for col in c.columns)]


def read_columns(*state_keys: str | StateKeyFn | None) -> list[str]:
    """The columns of a training step the table needs (those a log has are read; the training
    step itself is known), with the optional ones the checks read and those the state-key
    strategies ``state_keys`` build their keys from (:func:`g2po.state_keys.strategy_columns`:
    ``alfworld`` reads observations and admissible actions).

    >>> read_columns("alfworld")[-3:]
    ['observation', 'admissible_actions', 'prompt']
    """
    out = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
           "is_action_valid", "done", "task",
           *dict.fromkeys(r for c in list_checks() for r in c.reads)]
    return out + [c for c in strategy_columns(*state_keys) if c not in out]


#: :func:`alarm_columns`, :func:`triage_columns` and :func:`read_columns` as the checks
#: registered on import make them (a check registered later is in the functions' answers).
ALARM_COLUMNS = alarm_columns()
TRIAGE_COLUMNS = triage_columns()
READ_COLUMNS = read_columns()


def _short_codes(codes: np.ndarray) -> pd.Series:
    """Integer codes as short strings in the step table's text dtype, made by Arrow (no
    Python string per row, and no long observation copied); a negative code (a Categorical's
    missing value) stays missing, so validation still names the row."""
    codes = np.asarray(codes, dtype=np.int64)
    return pa.array(codes, mask=codes < 0).cast(pa.string()).to_pandas()


def coded(steps: pd.DataFrame, state_key: str | StateKeyFn) -> tuple[pd.DataFrame,
                                                                    str | StateKeyFn]:
    """``steps`` with Categorical ``state_key`` / ``action`` columns (run directories read them
    as Parquet dictionaries) replaced by short codes, the state-key strategy applied to the
    distinct keys only where it maps each key on its own
    (:func:`g2po.state_keys.distinct_key_codes`; the log's own key codes kept in
    ``_key_code``, so a check can tell which keys the strategy merged); returns the frame and
    the strategy left to apply."""
    changes = {}
    keys = steps["state_key"]
    if isinstance(keys.dtype, pd.CategoricalDtype):
        merged = distinct_key_codes(keys, state_key)
        if merged is None:  # the strategy needs every row's text
            changes["state_key"] = np.asarray(keys.astype(object))
        else:
            changes["state_key"] = _short_codes(merged).array
            if not (isinstance(state_key, str) and state_key.partition(":")[0] == "exact"):
                changes["_key_code"] = keys.cat.codes.to_numpy().astype(np.int64)
            state_key = "exact"
    action = steps["action"]
    if isinstance(action.dtype, pd.CategoricalDtype):
        changes["action"] = _short_codes(action.cat.codes.to_numpy()).array
    return (steps.assign(**changes) if changes else steps), state_key


TextLookup = Callable[[str, np.ndarray], list[str]]


def text_lookup(parts: Sequence[Mapping[str, pd.Series]]) -> TextLookup:
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


def triage_groups(
    steps: pd.DataFrame,
    *,
    rule: OutcomeRule,
    params: G2POParams = DEFAULT_PARAMS,
    stochastic: bool = False,
    estimator: str = "g2po",
    assumed: Collection[str] = (),
    credit: StatedCredit | None = None,
) -> pd.DataFrame:
    """One row per group of ``steps`` (:data:`TRIAGE_COLUMNS`, sorted by training step and
    group id), under the G2PO ``params`` and the run's outcome ``rule``; ``stochastic``
    declares the environment random (no aliasing alarm), ``estimator`` is the one the user
    trains with, whose signal the severity judges (:func:`g2po.analysis.findings.assess`);
    ``assumed`` names columns the loader filled in rather than read (``is_action_valid``: the
    invalid rate is then unknown, NaN); ``credit``: what the run states it trained with
    (:func:`g2po.analysis.recorded.stated_credit`), for the recorded-credit check.

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
        return pd.DataFrame({c: pd.Series(dtype=object) for c in triage_columns()})
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; one of {', '.join(ESTIMATORS)}")
    credit = credit.beside(params.state_key) if credit is not None else None
    return assess(group_rows(steps, rule=rule, params=params, stochastic=stochastic,
                             text=text_lookup([steps]),
                             validity_known="is_action_valid" not in assumed, credit=credit),
                  estimator)


def _signals(steps: pd.DataFrame, rule: OutcomeRule, params: G2POParams, stochastic: bool,
             text: TextLookup):
    """(steps, signals, text) of the batch; where its rows repeat a step (the estimators
    refuse them), the rows made readable first (:func:`separate_repeats`, which the
    ``duplicates`` check then reports) and the text lookup mapped to the rows kept."""
    try:
        return steps, group_signals(steps, rule=rule, params=params, stochastic=stochastic,
                                    text=text), text
    except StepTableError:
        repaired = separate_repeats(steps.assign(_pos=np.arange(len(steps))))
        if "_copies" not in repaired.columns:
            raise
        pos = repaired["_pos"].to_numpy()
        repaired = repaired.drop(columns="_pos")

        def kept(column: str, rows: np.ndarray) -> list[str]:
            return text(column, pos[np.asarray(rows)])
        sig = group_signals(repaired, rule=rule, params=params, stochastic=stochastic,
                            text=kept)
        return repaired, sig, kept


def _measured(batch: Batch) -> dict[str, np.ndarray]:
    """Every registered check's measure of the batch: ``alarm_<kind>`` and its columns (NaN
    in those a check fills from the whole run, :attr:`Check.whole`)."""
    G = batch.sig.ix.n_groups
    out = {}
    for check in list_checks():
        got = check.measure(batch)
        if "count" not in got or not set(got) <= {"count", *check.columns} or \
                (check.whole is None and set(got) != {"count", *check.columns}):
            raise ValueError(f"check {check.kind!r}: measure returned {sorted(got)}, not "
                             f"'count' and its columns {sorted(check.columns)}")
        got = {**{c: np.full(G, np.nan) for c in check.columns if c not in got}, **got}
        for name, values in got.items():
            values = np.asarray(values)
            if values.shape != (G,):
                raise ValueError(f"check {check.kind!r}: {name!r} has shape {values.shape}, "
                                 f"not one value per group ({G},)")
            out[check.column if name == "count" else name] = \
                values.astype(np.int64) if name == "count" else values
    return out


def group_rows(steps: pd.DataFrame, *, rule: OutcomeRule, params: G2POParams,
               stochastic: bool, text: TextLookup, validity_known: bool = True,
               credit: StatedCredit | None = None) -> pd.DataFrame:
    """:func:`triage_groups` before :func:`~g2po.analysis.findings.assess` (severity, reason,
    ``n_alarms`` and ``run_wide`` are judged over the whole run, not over one batch of it);
    ``text`` reads the state keys and actions the evidence quotes (:func:`text_lookup`);
    ``validity_known`` False: the log held no validity (the invalid rate is NaN); ``credit``
    as :attr:`Batch.credit` (its state key None where it is ``params``')."""
    steps, state_key = coded(steps, params.state_key)
    params = replace(params, state_key=state_key)
    steps, sig, text = _signals(steps, rule, params, stochastic, text)
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
    length = sig.traj_length
    done = np.full(ix.n_traj, np.nan)
    if "done" in steps.columns:
        done[ix.traj[last]] = flag_values(steps["done"])[last]
    shortest = np.full(G, np.iinfo(np.int64).max)
    longest = np.zeros(G, dtype=np.int64)
    np.minimum.at(shortest, ix.traj_group, length)
    np.maximum.at(longest, ix.traj_group, length)
    shortest_win = np.full(G, np.inf)
    np.minimum.at(shortest_win, ix.traj_group[sig.success], length[sig.success])
    undone = (length == longest[ix.traj_group]) & np.isnan(done) & ~sig.success
    reward_mean = per_traj_mean(ix.traj_reward)
    reward_var = per_traj_mean((ix.traj_reward - reward_mean[ix.traj_group]) ** 2)
    max_var = np.zeros(G)
    np.maximum.at(max_var, ix.node_group, sig.by_node("node_value_var"))
    n_states = np.bincount(ix.node_group, minlength=G)
    adv = cols["adv"]
    adv_min, adv_max = np.full(G, np.inf), np.full(G, -np.inf)
    np.minimum.at(adv_min, ix.group, adv)
    np.maximum.at(adv_max, ix.group, adv)
    measured = _measured(Batch(sig=sig, steps=steps, text=text, rule=rule, params=params,
                               credit=credit))
    table = pd.DataFrame({
        "severity": 0.0, "reason": "", "run_wide": "",
        "train_step": train_step,
        "group_id": pd.array(group_id, dtype=object),
        "task": pd.array(task, dtype=object),
        "rollouts": rollouts.astype(np.int64),
        "steps": n_steps.astype(np.int64),
        "success_rate": per_traj_mean(sig.success),
        "reward_mean": reward_mean,
        "reward_std": np.sqrt(reward_var),
        "zero_adv_share": per_step_mean(np.abs(adv) <= ZERO_ADV),
        "adv_abs_mean": per_step_mean(np.abs(adv)),
        "adv_ec_abs_mean": per_step_mean(np.abs(cols["adv_ec"])),
        "state_nodes": n_states.astype(np.int64),
        "merge_rate": merge_rate(n_states, n_steps),
        "max_value_var": max_var,
        "invalid_rate": per_step_mean(ix.invalid) if validity_known else np.full(G, np.nan),
        "truncated_share": per_traj_mean(sig.truncated),
        "shortest": shortest, "longest": longest,
        "shortest_win": np.where(np.isinf(shortest_win), np.nan, shortest_win),
        "undone_at_longest": np.bincount(ix.traj_group, weights=undone, minlength=G
                                         ).astype(np.int64),
        "no_signal": sig.zero["g2po"],
        "no_signal_grpo": sig.zero["grpo"],
        "n_alarms": np.zeros(G, dtype=np.int64),
        "sign_disagree_share": per_step_mean(sig.opposite),
        "adv_min": adv_min, "adv_max": adv_max,
        **{k: pd.array(v, dtype=object) if v.dtype == object else v
           for k, v in measured.items()},
    })
    return table[triage_columns()]
