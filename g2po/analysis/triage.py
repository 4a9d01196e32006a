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
- ``n_alarms``: how many kinds of alarm fire; ``alarm_<kind>``: each alarm's count (0: it does
  not fire), kinds as :data:`g2po.analysis.alarms.ALARM_KINDS`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from g2po.analysis.alarms import ALARM_KINDS, ZERO_ADV, group_signals
from g2po.analysis.history import VALUE_WISE_STRATEGIES
from g2po.cache import atomic_file, user_cache_dir
from g2po.index import merge_rate
from g2po.outcomes import OutcomeRule
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.state_keys import resolve_state_key

__all__ = ["TRIAGE_COLUMNS", "ALARM_COLUMNS", "READ_COLUMNS", "triage_groups", "triage_log",
           "filter_groups", "sort_groups", "step_shares", "cache_dir", "default_sort"]

#: Alarm count columns, one per kind.
ALARM_COLUMNS = [f"alarm_{kind}" for kind in ALARM_KINDS]
TRIAGE_COLUMNS = ["train_step", "group_id", "task", "rollouts", "steps", "success_rate",
                  "reward_mean", "reward_std", "zero_adv_share", "adv_abs_mean",
                  "adv_ec_abs_mean", "state_nodes", "merge_rate", "max_value_var",
                  "invalid_rate", "truncated_share", "no_signal", "no_signal_grpo", "n_alarms",
                  *ALARM_COLUMNS]
#: The columns of a training step the table needs (those a log has are read; the training
#: step itself is known).
READ_COLUMNS = ["group_id", "traj_id", "t", "state_key", "action", "episode_reward",
                "is_action_valid", "done", "task"]
#: Bump when the table's meaning changes: cached tables of another version are not used.
TRIAGE_VERSION = 1


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
) -> pd.DataFrame:
    """One row per group of ``steps`` (:data:`TRIAGE_COLUMNS`, sorted by training step and
    group id), under the G2PO ``params`` and the run's outcome ``rule``.

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
    steps, state_key = _coded(steps, params.state_key)
    sig = group_signals(steps, rule=rule, params=replace(params, state_key=state_key))
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

    reward_mean = per_traj_mean(ix.traj_reward)
    reward_var = per_traj_mean((ix.traj_reward - reward_mean[ix.traj_group]) ** 2)
    node_var = sig.by_node("node_value_var")
    max_var = np.zeros(G)
    np.maximum.at(max_var, ix.node_group, node_var)
    n_states = np.bincount(ix.node_group, minlength=G)
    counts = np.column_stack([sig.counts[k] for k in ALARM_KINDS])
    table = pd.DataFrame({
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
        "no_signal": sig.zero["g2po"],
        "no_signal_grpo": sig.zero["grpo"],
        "n_alarms": (counts > 0).sum(axis=1).astype(np.int64),
        **{col: counts[:, i] for i, col in enumerate(ALARM_COLUMNS)},
    })
    return table[TRIAGE_COLUMNS]


# -- the table's uses ------------------------------------------------------------------------

def default_sort() -> list[tuple[str, bool]]:
    """The table's default order, worst first: no G2PO signal, then most kinds of alarm, then
    the most steps with a ~0 advantage ((column, descending) pairs)."""
    return [("no_signal", True), ("n_alarms", True), ("zero_adv_share", True),
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
    def step_columns(self, train_step: int, columns: Sequence[str]) -> pd.DataFrame: ...
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


def _cache_file(log: _Log, rule: OutcomeRule, params: G2POParams, folder: Path) -> Path:
    from g2po import __version__

    key = json.dumps({"v": TRIAGE_VERSION, "g2po": __version__, "format": log.format,
                      "path": str(Path(log.path).resolve()),
                      "read": repr(sorted(getattr(log, "read_options", {}).items())),
                      "params": params.as_dict(), "rule": repr(rule)}, sort_keys=True, default=str)
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
) -> pd.DataFrame:
    """The groups table (:func:`triage_groups`) of ``train_steps`` of a log (default: all),
    under ``rule`` (default: the log's own, :meth:`loaders.Log.rule`).

    Training steps are read with only the columns the table needs and computed in batches of
    about ``batch_rows`` step rows. With ``cache`` (True: :func:`cache_dir`, or a folder),
    each step's rows are kept on disk with the identity of its file (path, size, mtime): a
    step whose file is unchanged is not read again, one whose file changed is. Logs that are
    one table in memory have no step files and are computed each time. ``progress`` is called
    with (training steps done, training steps in all) as the work goes: first with those the
    cache held, then as each step is read, last with (all, all).
    """
    rule = rule or log.rule()
    steps = list(log.train_steps() if train_steps is None else train_steps)
    folder = None if cache is False else (cache_dir() if cache is True else Path(cache))
    identity = {s: _identity(log, s) for s in steps}
    path = _cache_file(log, rule, params, folder) if folder is not None else None
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
    batch_steps: list[int] = []
    rows_in_batch = 0
    applied = params.state_key  # the strategy left once the distinct keys were mapped

    def flush() -> None:
        nonlocal batch, batch_steps, rows_in_batch, count
        if not batch:
            return
        frame = batch[0] if len(batch) == 1 else pd.concat(batch, ignore_index=True)
        table = triage_groups(frame, rule=rule, params=replace(params, state_key=applied))
        for s, rows in table.groupby("train_step", sort=False):
            ident = identity.get(int(s)) or ("", -1, -1)
            done[int(s)] = rows.assign(_source=ident[0], _size=ident[1], _mtime_ns=ident[2])
        count += len(batch_steps)
        batch, batch_steps, rows_in_batch = [], [], 0
        if progress is not None:
            progress(count, total)

    for s in todo:
        frame = log.step_columns(s, READ_COLUMNS).assign(train_step=np.int64(s))
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
    return out.astype({"no_signal": bool, "no_signal_grpo": bool})
