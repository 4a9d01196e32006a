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

import numpy as np
import pandas as pd

from g2po.estimators import estimate
from g2po.state_keys import resolve_state_key

__all__ = [
    "NO_NAMESPACE",
    "namespace_of",
    "metric_namespaces",
    "smooth",
    "metric_series",
    "state_history",
    "state_history_coded",
    "VALUE_WISE_STRATEGIES",
    "HISTORY_COLUMNS",
]

#: The namespace of a metric whose name has no ``/``.
NO_NAMESPACE = "(top level)"
#: State-key strategies that map each key on its own (no look at the other keys of the group),
#: so they can run on the distinct keys alone.
VALUE_WISE_STRATEGIES = ("exact", "normalized", "regex")
#: Columns of :func:`state_history`.
HISTORY_COLUMNS = ["train_step", "group_id", "n_traj", "visits", "traj_share", "value",
                   "value_var", "adv_mean", "adv_nc_mean", "adv_ec_mean", "adv_ep_mean"]


def namespace_of(name: str) -> str:
    """``actor`` for ``actor/pg_loss``; :data:`NO_NAMESPACE` for a name without ``/``."""
    head, sep, _ = str(name).partition("/")
    return head if sep and head else NO_NAMESPACE


def metric_namespaces(metrics: pd.DataFrame) -> dict[str, list[str]]:
    """Namespace → the scalar metric columns in it (sorted), namespaces sorted with the top
    level last. A column counts when it has at least one finite number; ``train_step`` and
    text or nested values (lists, dicts) do not.

    >>> frame = pd.DataFrame({"train_step": [1], "actor/kl": [0.1], "adv/ec/std": [1.0],
    ...                       "lr": [1e-6], "note": ["x"]})
    >>> metric_namespaces(frame)
    {'actor': ['actor/kl'], 'adv': ['adv/ec/std'], '(top level)': ['lr']}
    """
    groups: dict[str, list[str]] = {}
    for name in metrics.columns:
        if name == "train_step":
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


def metric_series(metrics: Mapping[str, pd.DataFrame], names: Sequence[str],
                  smoothing: float = 0.0) -> pd.DataFrame:
    """The chosen metrics of several runs as one long table.

    ``metrics``: run name → its ``metrics.jsonl`` frame (``train_step`` and metric columns);
    ``names``: the metric columns wanted (a run that lacks one contributes no rows for it).
    Returns columns run, metric, train_step, value, smoothed; rows without a finite value are
    left out, sorted by metric, run and training step.
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
            part.insert(0, "metric", name)
            part.insert(0, "run", run)
            parts.append(part)
    if not parts:
        return pd.DataFrame({"run": [], "metric": [], "train_step": pd.Series(dtype=np.int64),
                             "value": [], "smoothed": []})
    return pd.concat(parts, ignore_index=True).sort_values(
        ["metric", "run", "train_step"], kind="stable").reset_index(drop=True)


def state_history(steps: pd.DataFrame, canonical_key: str, *, state_key: str = "exact",
                  **g2po_params) -> pd.DataFrame:
    """One state's numbers at every training step of ``steps``.

    ``steps``: the step rows of one group per training step (the same task; a ``train_step``
    column tells the steps apart); ``canonical_key``: the state's key after the ``state_key``
    strategy (a graph node's ``canonical_key``); ``g2po_params``: the G2PO estimator's
    parameters (gamma, w, mode, penalty, success_reward, terminal).

    One G2PO call over every group at once (groups never merge, so each step's graph is its
    own). Returns one row per training step, :data:`HISTORY_COLUMNS`: the group, its
    trajectories, the state's visits (0 where the task's rollouts never reached it, with NaN
    numbers), the share of trajectories visiting it, its value V, the variance of the step
    values merged there, and the mean of A, A^NC, A^EC and A^EP over the steps taken there.
    """
    if steps.empty:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    if "train_step" not in steps.columns:
        steps = steps.assign(train_step=0)
    columns, ix = estimate(steps, "g2po", state_key=state_key, **g2po_params)
    train_step = steps["train_step"].to_numpy(dtype=np.int64)
    group_step = np.zeros(ix.n_groups, dtype=np.int64)
    group_step[ix.group] = train_step
    group_id = np.empty(ix.n_groups, dtype=object)
    group_id[ix.group] = steps["group_id"].astype(str).to_numpy()
    n_traj = np.bincount(ix.traj_group, minlength=ix.n_groups)

    hit = (ix.canonical_key.to_numpy() == canonical_key)
    g = ix.group[hit]
    visits = np.bincount(g, minlength=ix.n_groups)
    trajs = np.bincount(ix.traj_group[np.unique(ix.traj[hit])], minlength=ix.n_groups)

    def node_stat(column: str) -> np.ndarray:
        out = np.full(ix.n_groups, np.nan)
        out[g] = np.asarray(columns[column], dtype=np.float64)[hit]  # constant within a node
        return out

    def mean_of(column: str) -> np.ndarray:
        if column not in columns:
            return np.full(ix.n_groups, np.nan)
        sums = np.bincount(g, weights=np.asarray(columns[column], np.float64)[hit],
                           minlength=ix.n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(visits > 0, sums / np.maximum(visits, 1), np.nan)

    out = pd.DataFrame({
        "train_step": group_step,
        "group_id": group_id,
        "n_traj": n_traj,
        "visits": visits,
        "traj_share": trajs / np.maximum(n_traj, 1),
        "value": node_stat("node_value"),
        "value_var": node_stat("node_value_var"),
        "adv_mean": mean_of("adv"),
        "adv_nc_mean": mean_of("adv_nc"),
        "adv_ec_mean": mean_of("adv_ec"),
        "adv_ep_mean": mean_of("adv_ep"),
    })
    return out.sort_values(["train_step", "group_id"]).reset_index(drop=True)


def state_history_coded(steps: pd.DataFrame, keys: Sequence[str], canonical_key: str, *,
                        state_key: str = "exact", **g2po_params) -> pd.DataFrame:
    """:func:`state_history` of steps whose ``state_key`` holds a number into ``keys`` (the
    distinct state keys; see :func:`loaders.across_steps.load_groups_coded`).

    A value-wise strategy (:data:`VALUE_WISE_STRATEGIES`) runs on the distinct keys only and
    the steps merge by the numbers of their canonical keys, so no per-step string is built;
    any other strategy (``similarity`` compares keys within a group) gets the keys back.
    """
    codes = steps["state_key"].to_numpy().astype(np.int64) if len(steps) else \
        np.zeros(0, dtype=np.int64)
    distinct = pd.Series(list(keys), dtype=object)
    if str(state_key).partition(":")[0] not in VALUE_WISE_STRATEGIES:
        text = distinct.to_numpy()[codes] if len(distinct) else distinct.to_numpy()
        return state_history(steps.assign(state_key=text), canonical_key,
                             state_key=state_key, **g2po_params)
    canonical = pd.Series(resolve_state_key(state_key)(distinct, np.zeros(len(distinct),
                                                                            np.int64)))
    ccode, uniques = pd.factorize(canonical.astype(str), sort=False)
    target = np.flatnonzero(np.asarray(uniques, dtype=object) == canonical_key)
    wanted = str(int(target[0])) if len(target) else "-1"  # -1: no step has the key
    recoded = pd.array(ccode[codes].astype(str), dtype=str)
    return state_history(steps.assign(state_key=recoded), wanted, state_key="exact",
                         **g2po_params)
