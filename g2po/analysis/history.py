"""A run over training: the scalar series of ``metrics.jsonl`` and one state's history.

Training metrics are namespaced (``actor/pg_loss``, ``adv/ec/std``, ``g2po/merge_rate``,
``rollout/success_rate``, ``val-core/…``, ``timing_s/…``); :func:`metric_namespaces` groups the
scalar ones and :func:`metric_series` puts the chosen ones of several runs into one long table,
smoothed like TensorBoard's slider (:func:`smooth`). :func:`state_history` follows one state of
one task across training steps: its visits, value V, value variance and mean advantages at every
training step, from one vectorised G2PO call over one group per step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from g2po.estimators import estimate
from g2po.outcomes import OutcomeRule
from g2po.params import DEFAULT_PARAMS, G2POParams
from g2po.state_keys import VALUE_WISE, distinct_key_codes, resolve_state_key

__all__ = [
    "NO_NAMESPACE",
    "namespace_of",
    "metric_namespaces",
    "smooth",
    "band_window",
    "metric_series",
    "state_table",
    "history_of",
    "state_history",
    "VALUE_WISE_STRATEGIES",
    "HISTORY_COLUMNS",
]

#: The namespace of a metric whose name has no ``/``.
NO_NAMESPACE = "(top level)"
#: State-key strategies that map each key on its own (no look at the other keys of the group),
#: so they can run on the distinct keys alone: :data:`g2po.state_keys.VALUE_WISE` (kept under
#: this name for the modules that import it here).
VALUE_WISE_STRATEGIES = VALUE_WISE
#: Columns of :func:`state_history`.
HISTORY_COLUMNS = ["train_step", "group_id", "n_traj", "visits", "traj_share", "value",
                   "value_var", "adv_mean", "adv_nc_mean", "adv_ec_mean", "adv_ep_mean"]


def namespace_of(name: str) -> str:
    """``actor`` for ``actor/pg_loss``; :data:`NO_NAMESPACE` for a name without ``/``."""
    head, sep, _ = str(name).partition("/")
    return head if sep and head else NO_NAMESPACE


def metric_namespaces(metrics: pd.DataFrame) -> dict[str, list[str]]:
    """Namespace → the scalar metric columns in it (sorted), namespaces sorted with the top
    level last. A column counts when it has at least one finite number; ``train_step``, a
    logger's own columns (a name starting with ``_``, as W&B's ``_timestamp``) and text or
    nested values (lists, dicts) do not.

    >>> frame = pd.DataFrame({"train_step": [1], "actor/kl": [0.1], "adv/ec/std": [1.0],
    ...                       "lr": [1e-6], "note": ["x"]})
    >>> metric_namespaces(frame)
    {'actor': ['actor/kl'], 'adv': ['adv/ec/std'], '(top level)': ['lr']}
    """
    groups: dict[str, list[str]] = {}
    for name in metrics.columns:
        if name == "train_step" or str(name).startswith("_"):
            continue
        column = metrics[name]
        if pd.api.types.is_bool_dtype(column):
            values = column.astype(np.float64)
        elif pd.api.types.is_numeric_dtype(column):
            values = column.astype(np.float64)
        else:  # mixed: numbers among text or nested values do not make a series
            values = pd.to_numeric(column, errors="coerce")
            if values.notna().sum() < column.notna().sum():
                continue
        if np.isfinite(values.to_numpy(dtype=np.float64)).any():
            groups.setdefault(namespace_of(name), []).append(str(name))
    order = sorted(groups, key=lambda ns: (ns == NO_NAMESPACE, ns))
    return {ns: sorted(groups[ns]) for ns in order}


def smooth(values: np.ndarray, weight: float) -> np.ndarray:
    """Exponential moving average with TensorBoard's debiasing, (n,) → (n,).

    ``weight`` in [0, 1): 0 returns the values; 0.9 averages over ~10 points. NaN (a step that
    did not log the metric) stays NaN and does not reset the average. The debiasing divides by
    1 − weight^k (k finite points so far), so the first points are not pulled toward 0.
    """
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    values = np.asarray(values, dtype=np.float64)
    if weight == 0.0 or values.size == 0:
        return values.copy()
    finite = np.isfinite(values)
    out = np.full(values.shape, np.nan)
    acc = 0.0
    k = 0
    for i in np.flatnonzero(finite):  # a loop over points of one series (hundreds)
        acc = weight * acc + (1.0 - weight) * values[i]
        k += 1
        out[i] = acc / (1.0 - weight ** k)
    return out


def band_window(weight: float) -> int:
    """How many points the band around a smoothed curve spans: the moving average's own reach,
    1 / (1 − ``weight``) points (0.9 → 10), at least 1.

    >>> band_window(0.0), band_window(0.6), band_window(0.9)
    (1, 2, 10)
    """
    return max(1, int(round(1.0 / (1.0 - weight))))


def metric_series(metrics: Mapping[str, pd.DataFrame], names: Sequence[str],
                  smoothing: float = 0.0) -> pd.DataFrame:
    """The chosen metrics of several runs as one long table.

    ``metrics``: run name → its ``metrics.jsonl`` frame (``train_step`` and metric columns);
    ``names``: the metric columns wanted (a run that lacks one contributes no rows for it).
    Returns columns run, metric, train_step, value, smoothed, low, high; low and high are the
    smallest and largest raw value over the last :func:`band_window` points (the band drawn
    behind a smoothed curve: what the smoothing averaged over). Rows without a finite value
    are left out, sorted by metric, run and training step.
    """
    parts = []
    for run, frame in metrics.items():
        if "train_step" not in frame.columns:
            raise KeyError(f"run {run!r}: the metrics have no 'train_step' column")
        for name in names:
            if name not in frame.columns:
                continue
            part = pd.DataFrame({
                "train_step": frame["train_step"].to_numpy(dtype=np.int64),
                "value": pd.to_numeric(frame[name], errors="coerce").to_numpy(np.float64),
            }).sort_values("train_step", kind="stable")
            part = part[np.isfinite(part["value"].to_numpy())]
            part["smoothed"] = smooth(part["value"].to_numpy(), smoothing)
            window = part["value"].rolling(band_window(smoothing), min_periods=1)
            part["low"], part["high"] = window.min(), window.max()
            part.insert(0, "metric", name)
            part.insert(0, "run", run)
            parts.append(part)
    if not parts:
        return pd.DataFrame({"run": [], "metric": [], "train_step": pd.Series(dtype=np.int64),
                             "value": [], "smoothed": [], "low": [], "high": []})
    return pd.concat(parts, ignore_index=True).sort_values(
        ["metric", "run", "train_step"], kind="stable").reset_index(drop=True)


def state_table(steps: pd.DataFrame, keys: Sequence[str] | None = None, *,
                rule: OutcomeRule, params: G2POParams = DEFAULT_PARAMS) -> pd.DataFrame:
    """Every state of one task at every training step, from one G2PO call over every group.

    ``steps``: the step rows of one group per training step (a ``train_step`` column tells the
    steps apart; groups never merge, so each step's graph is its own); ``keys``: when given,
    ``state_key`` holds numbers into this list of distinct keys (see
    :func:`loaders.across_steps.load_groups_coded`): a value-wise strategy
    (:data:`VALUE_WISE_STRATEGIES`) then runs on the distinct keys only
    (:func:`g2po.state_keys.distinct_key_codes`), any other gets the text back. ``params`` and
    the run's ``rule`` go to the G2PO estimator whole.

    Returns one row per (training step, state node): train_step, group_id, key (the canonical
    key), n_traj (the group's trajectories), visits, traj_share (share of the trajectories
    visiting it), value V, value_var (of the step values merged there), and the mean of A,
    A^NC, A^EC and A^EP over the steps taken there; sorted by step, then most visited first.
    """
    columns_out = ["train_step", "group_id", "key", *HISTORY_COLUMNS[2:]]
    if steps.empty:
        return pd.DataFrame(columns=columns_out)
    if "train_step" not in steps.columns:
        steps = steps.assign(train_step=0)
    state_key = params.state_key
    raw = None  # each row's key text, when the rows carry merged codes instead
    if keys is not None:
        codes = steps["state_key"].to_numpy().astype(np.int64)
        distinct = np.asarray(list(keys), dtype=object)
        merged = distinct_key_codes(
            pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(distinct))),
            state_key)
        if merged is not None:
            names = np.array([str(i) for i in range(int(merged.max(initial=-1)) + 1)],
                             dtype=object)
            steps = steps.assign(state_key=names[merged])  # shared short strings
            raw, state_key = distinct[codes], "exact"
        else:
            steps = steps.assign(state_key=distinct[codes])
    columns, ix = estimate(steps, "g2po",
                           **replace(params, state_key=state_key).g2po_kwargs(rule))
    node = ix.node
    first = np.full(ix.n_nodes, -1, dtype=np.int64)
    first[node[::-1]] = np.arange(len(node))[::-1]  # the first row of each node
    group = ix.node_group
    n_traj = np.bincount(ix.traj_group, minlength=ix.n_groups)
    visits = np.bincount(node, minlength=ix.n_nodes)
    pairs = np.unique(node * np.int64(ix.n_traj) + ix.traj)
    trajs = np.bincount(pairs // ix.n_traj, minlength=ix.n_nodes)

    def mean_of(column: str) -> np.ndarray:
        if column not in columns:
            return np.full(ix.n_nodes, np.nan)
        sums = np.bincount(node, weights=np.asarray(columns[column], np.float64),
                           minlength=ix.n_nodes)
        return sums / np.maximum(visits, 1)

    key = ix.canonical_key.to_numpy()[first]
    if raw is not None:  # every key of a node has one canonical text: its first row's
        key = np.asarray(resolve_state_key(params.state_key)(
            pd.Series(raw[first], dtype=object), np.zeros(len(first), np.int64)), dtype=object)
    out = pd.DataFrame({
        "train_step": steps["train_step"].to_numpy(dtype=np.int64)[first],
        "group_id": steps["group_id"].astype(str).to_numpy()[first],
        "key": key.astype(str),
        "n_traj": n_traj[group],
        "visits": visits,
        "traj_share": trajs / np.maximum(n_traj[group], 1),
        "value": np.asarray(columns["node_value"], np.float64)[first],
        "value_var": np.asarray(columns["node_value_var"], np.float64)[first],
        "adv_mean": mean_of("adv"),
        "adv_nc_mean": mean_of("adv_nc"),
        "adv_ec_mean": mean_of("adv_ec"),
        "adv_ep_mean": mean_of("adv_ep"),
    })
    return out.sort_values(["train_step", "visits", "key"], ascending=[True, False, True]
                           ).reset_index(drop=True)


def history_of(table: pd.DataFrame, canonical_key: str) -> pd.DataFrame:
    """One state's row of :func:`state_table` at every training step of the table (the first
    group of a step when it holds several): :data:`HISTORY_COLUMNS`; at a step where the task's
    rollouts never reached the state, visits 0 and NaN numbers."""
    groups = table.sort_values(["train_step", "group_id"]).drop_duplicates("train_step")[
        ["train_step", "group_id", "n_traj"]]
    hit = table[table["key"].to_numpy() == canonical_key].drop(columns=["key", "n_traj"])
    out = groups.merge(hit, on=["train_step", "group_id"], how="left")
    out["visits"] = out["visits"].fillna(0).astype(np.int64)
    out["traj_share"] = out["traj_share"].fillna(0.0)
    return out[HISTORY_COLUMNS].sort_values("train_step").reset_index(drop=True)


def state_history(steps: pd.DataFrame, canonical_key: str, keys: Sequence[str] | None = None,
                  *, rule: OutcomeRule, params: G2POParams = DEFAULT_PARAMS) -> pd.DataFrame:
    """One state's numbers at every training step of ``steps``: :func:`history_of` the
    :func:`state_table` (same arguments; ``canonical_key`` is the state's key after the
    ``state_key`` strategy, a graph node's ``canonical_key``)."""
    if steps.empty:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    return history_of(state_table(steps, keys, rule=rule, params=params), canonical_key)
