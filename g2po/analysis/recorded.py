"""Recorded against recomputed credit: is the advantage a trainer trained with the one the
run's estimator gives?

A log may carry, per step, the advantage its trainer recorded (the step table's optional
``advantage`` column; NaN where none was recorded). :func:`audit_recorded` recomputes the credit
with the run's estimator, parameters and outcome rule (:func:`g2po.estimators.estimate`, the
code the app and the trainers run) over every group at once and compares, step by step, within
a tolerance that float32 storage and arithmetic pass (:data:`~g2po.analysis.credit_fit.ATOL`,
:data:`~g2po.analysis.credit_fit.RTOL`). Each recorded step that differs gets one cause
(:data:`CAUSES`, the first that holds, in this order):

- ``zeroed``: recorded as 0 where the recomputation is not (SkyRL #1507: the last step's masked
  tensor copied onto earlier steps left (N−1)/N of step samples at 0);
- ``broadcast``: its trajectory carries one value on every recorded step where the estimator
  gives the steps different values;
- ``negated``: the recomputed value with the sign flipped;
- ``misaligned``: it equals the recomputed value of the row before or after it (trajectory by
  trajectory, step by step: an off-by-one within a trajectory or across two);
- ``sign``: the opposite sign, another magnitude;
- ``nonfinite``: not a finite number;
- ``differs``: none of these.

Per group (:data:`GROUP_COLUMNS`) the evidence is counted, and the groups whose credit differs
are fitted (:func:`g2po.analysis.credit_fit.fit_credit`): which registered estimator and
parameters explain the recorded values best, or that none does. The group's ``severity`` is the
share of its credit that differs, Σ|r − c| over the differing steps / (Σ|r| + Σ|c|) over its
recorded steps, in [0, 1] (1 for a non-finite record): 0 for a trainer that recorded exactly
this recomputation; ``kind`` is its main finding (:data:`KINDS`): ``other_estimator`` where
another candidate reproduces every recorded step, else the cause of at least half of its
differing steps, else ``differs``; with words for the group, the run and one step, and a fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from g2po.analysis.credit_fit import (
    ATOL,
    RTOL,
    close,
    estimator_input,
    fit_credit,
    group_keys,
)
from g2po.errors import G2POError
from g2po.estimators import estimate, list_estimators
from g2po.index import StepIndex
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.steps import real_numbers

__all__ = ["audit_recorded", "RecordedAudit", "RecordedKind", "KINDS", "CAUSES",
           "GROUP_COLUMNS", "STEP_COLUMNS", "NoRecordedAdvantageError", "run_findings",
           "step_words", "StatedCredit", "stated_credit", "FIT_LIMIT", "has_recorded",
           "kind_words", "likely_estimator"]

#: The differing groups of each training step whose recorded values are fitted (the most
#: severe first): per training step, so a group's answer never depends on which other steps
#: were audited with it (the groups table audits a run a few steps at a time).
FIT_LIMIT = 8

#: The causes a differing step is given, in the order they are tried.
CAUSES = ("zeroed", "broadcast", "negated", "misaligned", "sign", "nonfinite", "differs")
#: One row per group (worst first in :attr:`RecordedAudit.groups`; ``train_step`` 0 where the
#: table has none).
GROUP_COLUMNS = ["train_step", "group_id", "severity", "kind", "reason", "fix", "steps",
                 "recorded", "mismatched", "max_abs_diff", "mean_abs_diff", "zeroed",
                 "broadcast_trajs", "negated", "misaligned", "shift", "sign_flips",
                 "nonfinite", "best_fit", "fit_match", "fit_error", "explained"]
#: One row per step, in the input's row order and index: recorded beside recomputed
#: (``train_step`` 0 where the table has none, as in the groups table).
STEP_COLUMNS = ["train_step", "group_id", "traj_id", "t", "recorded", "recomputed", "diff",
                "matches", "cause", "neighbour"]


class NoRecordedAdvantageError(G2POError, ValueError):
    """The step table holds no advantage recorded by a trainer."""


@dataclass(frozen=True)
class RecordedKind:
    """One kind of finding about recorded credit: its evidence, its words and its fix.

    name : the ``kind`` value; evidence : the group column that counts it (steps or
    trajectories); title : a short phrase; fix : what to do; step : words for one step of
    this cause in the explorer (formatted with ``recorded`` and ``recomputed``).
    """

    name: str
    evidence: str
    title: str
    fix: str
    step: str


#: The kinds of finding, by name. ``other_estimator``: the group is explained by another
#: registered estimator or other parameters than the audit's.
KINDS: dict[str, RecordedKind] = {k.name: k for k in (
    RecordedKind("zeroed", "zeroed", "recorded as 0 where the recomputation is not",
                 "the trainer gave these steps no credit: check how a step's advantage reaches "
                 "its own tokens (SkyRL #1507 copied the last step's masked tensor onto the "
                 "earlier steps)",
                 "recorded {recorded:.4g} where the recomputation gives {recomputed:+.4g}: no "
                 "credit"),
    RecordedKind("broadcast", "broadcast_trajs", "one value on every step of a trajectory",
                 "the trainer gave every step its trajectory's value: index the per-step "
                 "advantages by step, not by trajectory",
                 "its trajectory carries one value ({recorded:+.4g}) on every step; "
                 "recomputed {recomputed:+.4g}"),
    RecordedKind("negated", "negated", "the sign flipped",
                 "check the sign convention between the advantage and the loss (or reward "
                 "and cost)", "recorded {recorded:+.4g}, recomputed {recomputed:+.4g}: the sign "
                 "flipped"),
    RecordedKind("misaligned", "misaligned", "values of the neighbouring row",
                 "the advantages are shifted against the steps by one row: check the order "
                 "and indexing between the rows and the advantage tensor (sorting, padding, a "
                 "dropped or repeated row)",
                 "recorded {recorded:+.4g} is the neighbouring row's value; its own is "
                 "{recomputed:+.4g}"),
    RecordedKind("sign", "sign_flips", "the opposite sign",
                 "compare the trainer's advantage code with docs/estimators.md",
                 "recorded {recorded:+.4g}, recomputed {recomputed:+.4g}: opposite signs"),
    RecordedKind("nonfinite", "nonfinite", "not a finite number",
                 "the trainer recorded inf: find where its advantage overflows",
                 "recorded {recorded}, recomputed {recomputed:+.4g}"),
    RecordedKind("other_estimator", "mismatched", "computed with another estimator or "
                 "parameters",
                 "audit with the run's estimator and parameters (g2po audit --estimator, -p), "
                 "or make the trainer use those the run states",
                 "recorded {recorded:+.4g}, recomputed {recomputed:+.4g}"),
    RecordedKind("differs", "mismatched", "differs from the recomputation",
                 "no registered estimator or parameter set explains it: compare the trainer's "
                 "advantage code with docs/estimators.md",
                 "recorded {recorded:+.4g}, recomputed {recomputed:+.4g}"),
)}


@dataclass(frozen=True)
class StatedCredit:
    """What a run states it trained with, as the trainers write it in its manifest
    (``run.json``): the estimator, the keyword arguments it was called with and the state key.

    estimator : a registered estimator's name.
    kwargs : its keyword arguments as called (the outcome rule's included: the trainer's rule),
        or None where the manifest does not record them (``params`` and the audit's rule
        then give them, :meth:`G2POParams.for_estimator`).
    state_key : the state-key strategy it ran with, or None (the audit's own).
    params : G2PO's parameters as recorded (``params``), or None.
    """

    estimator: str
    kwargs: Mapping[str, object] | None = None
    state_key: str | None = None
    params: G2POParams | None = None

    def audit_params(self, params: G2POParams) -> tuple[G2POParams, dict]:
        """(``params`` for :func:`audit_recorded`, its ``estimator_params``): the run's where
        it states them, else ``params``' (the caller's)."""
        base = self.params or params
        return replace(base, state_key=self.state_key or params.state_key), \
            dict(self.kwargs or {})

    def beside(self, state_key: object) -> StatedCredit:
        """The same, its state key left out (None) where it is ``state_key`` (the caller's
        own, which its step rows are keyed with already)."""
        return replace(self, state_key=None) if self.state_key in (None, state_key) else self

    def as_dict(self) -> dict:
        """Plain values (a cache key, a JSON record)."""
        return {"estimator": self.estimator, "kwargs": dict(self.kwargs or {}) or None,
                "state_key": self.state_key,
                "params": self.params.as_dict() if self.params is not None else None}


def stated_credit(manifest: object) -> StatedCredit | None:
    """The credit a run's manifest states it trained with: its ``estimator`` (a registered
    one), ``estimator_params`` (the exact keyword arguments), ``state_key`` and ``params``
    (G2PO's parameters whole), as :func:`g2po.trainers.local.run_manifest` and the verl
    backend's write them; None where it names no registered estimator (then the estimator
    the user says they train with is audited).

    >>> stated_credit({"estimator": "gigpo", "estimator_params": {"omega": 0.5}}).kwargs
    {'omega': 0.5}
    >>> stated_credit({"estimator": "ppo"}) is None
    True
    """
    if not isinstance(manifest, Mapping):
        return None
    name = manifest.get("estimator")
    if not isinstance(name, str) or name not in list_estimators():
        return None
    kwargs = manifest.get("estimator_params")
    key = manifest.get("state_key")
    params = None
    if isinstance(manifest.get("params"), Mapping):
        try:
            params = G2POParams.from_values(manifest["params"])
        except (ValueError, TypeError, G2POError):
            params = None
    return StatedCredit(name, dict(kwargs) if isinstance(kwargs, Mapping) else None,
                        key if isinstance(key, str) and key else None, params)


def has_recorded(steps: pd.DataFrame) -> bool:
    """Whether ``steps`` carries a recorded advantage on any row."""
    return "advantage" in steps.columns and bool(steps["advantage"].notna().any())


@dataclass(frozen=True)
class RecordedAudit:
    """What :func:`audit_recorded` found.

    groups : one row per group, :data:`GROUP_COLUMNS`, worst first.
    steps : one row per step, :data:`STEP_COLUMNS`, in the input's order and index.
    estimator, params : what the credit was recomputed with (``params``: the estimator's
        keyword arguments, the outcome rule's included).
    """

    groups: pd.DataFrame
    steps: pd.DataFrame
    estimator: str
    params: dict

    @property
    def findings(self) -> pd.DataFrame:
        """The groups with a finding (severity above 0), worst first."""
        return self.groups[self.groups["kind"] != ""]

    def run_text(self) -> list[str]:
        """The run's findings in words (:func:`run_findings`)."""
        return run_findings(self.groups, self.estimator)


def audit_recorded(
    steps: pd.DataFrame,
    *,
    rule: OutcomeRule,
    params: G2POParams,
    estimator: str = "g2po",
    estimator_params: Mapping[str, object] | None = None,
    fit: bool = True,
    fit_limit: int = FIT_LIMIT,
    atol: float = ATOL,
    rtol: float = RTOL,
    recomputed: tuple[np.ndarray, StepIndex] | None = None,
) -> RecordedAudit:
    """Compare the recorded ``advantage`` of ``steps`` with ``estimator``'s recomputation
    under ``params`` (γ, penalty, …, :meth:`G2POParams.for_estimator`; the state key) and
    ``rule``, with ``estimator_params`` (its own parameters, e.g. GiGPO's ``omega``) on top.

    Vectorised over every group: one estimator call for the audit (none where the caller
    passes ``recomputed``: the estimator's ``adv`` (n_steps,) and its index, computed with
    exactly these parameters); with ``fit``, one per candidate
    (:func:`~g2po.analysis.credit_fit.candidates`) over the ``fit_limit`` most severe groups
    that differ of each training step. Every number of a group comes from its own rows, so
    auditing a run whole or a few training steps at a time gives the same groups. Raises
    :class:`NoRecordedAdvantageError` when the table has no recorded value.

    Examples
    --------
    >>> from g2po.estimators import compute_advantages
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...     "t": [0, 1, 0, 1], "state_key": ["s", "u", "s", "v"], "action": "go",
    ...     "episode_reward": [10.0, 10.0, 0.0, 0.0], "is_action_valid": True})
    >>> steps["advantage"] = compute_advantages(steps, "g2po")["adv"].astype("float32")
    >>> audit_recorded(steps, rule=OutcomeRule(), params=G2POParams()).groups["severity"].item()
    0.0
    >>> steps.loc[0, "advantage"] = 0.0
    >>> audit_recorded(steps, rule=OutcomeRule(), params=G2POParams(), fit=False
    ...                ).groups[["kind", "zeroed"]].to_dict("records")
    [{'kind': 'zeroed', 'zeroed': 1}]
    """
    if "advantage" not in steps.columns:
        raise NoRecordedAdvantageError("the step table has no 'advantage' column (the "
                                       "advantage a trainer recorded for each step)")
    recorded, bad = real_numbers(steps["advantage"])
    for what, mask in bad.items():
        if mask.any():
            raise ValueError(f"column 'advantage' {what} in {int(mask.sum())} row(s)")
    if np.isnan(recorded).all():
        raise NoRecordedAdvantageError("column 'advantage' holds no value (every row null)")
    kwargs = {**params.for_estimator(estimator, rule), **dict(estimator_params or {})}
    if recomputed is None:
        columns, ix = estimate(estimator_input(steps), estimator,
                               state_key=params.state_key, **kwargs)
        recomputed = (columns["adv"], ix)
    adv, ix = recomputed
    recomputed = np.asarray(adv, dtype=np.float64)
    step_table, cause, neighbour, broadcast_traj = _compare(recorded, recomputed, ix, atol, rtol)
    groups = _group_table(steps, ix, recorded, recomputed, cause, neighbour, broadcast_traj)
    if fit:
        groups = _with_fit(groups, steps, ix, recorded, rule=rule, params=params,
                           limit=fit_limit, atol=atol, rtol=rtol)
    groups = _judge(groups, estimator)
    table = step_table.assign(  # the ids as they are (no text converted row by row)
        train_step=steps["train_step"].to_numpy(dtype=np.int64) if "train_step" in steps
        else np.int64(0), group_id=steps["group_id"].reset_index(drop=True),
        traj_id=steps["traj_id"].reset_index(drop=True),
        t=steps["t"].to_numpy(dtype=np.int64))
    table.index = steps.index
    return RecordedAudit(groups, table[STEP_COLUMNS], estimator, kwargs)


def _compare(r: np.ndarray, c: np.ndarray, ix: StepIndex, atol: float, rtol: float
             ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Per step: the table's numbers, the cause code (index into :data:`CAUSES`, -1 where it
    matches or has no record), the neighbour it matches (-1 before, +1 after, 0) and, per
    trajectory, (n_traj,) bool: recorded as one value where the recomputation varies. Only
    the trajectories holding a differing step are looked at beyond the comparison."""
    n = len(r)
    has = ~np.isnan(r)
    matches = has & close(r, c, atol, rtol)
    differ = has & ~matches
    cause = np.full(n, -1, dtype=np.int64)
    neighbour = np.zeros(n, dtype=np.int64)
    broadcast_traj = np.zeros(ix.n_traj, dtype=bool)
    if differ.any():
        # The differing trajectories, trajectory by trajectory, step by step.
        o = ix.order[np.isin(ix.traj[ix.order], np.unique(ix.traj[differ]))]
        broadcast_traj = _flat_trajectories(r[o], c[o], ix.traj[o], ix.n_traj, atol, rtol)
        neighbour[o] = _neighbours(r[o], c[o], ix.group[o], atol, rtol)
        d = np.flatnonzero(differ)
        rd, cd = r[d], c[d]
        finite = np.isfinite(rd)
        tests = [
            finite & (np.abs(rd) <= atol),                                       # zeroed
            broadcast_traj[ix.traj[d]],                                          # broadcast
            finite & close(-rd, cd, atol, rtol) & (np.abs(cd) > atol),           # negated
            neighbour[d] != 0,                                                   # misaligned
            finite & (rd * cd < 0) & (np.abs(rd) > atol) & (np.abs(cd) > atol),  # sign
            ~finite,                                                             # nonfinite
        ]
        code = np.select(tests, np.arange(len(tests)), default=len(tests))       # or differs
        cause[d] = code
    neighbour = np.where(differ, neighbour, 0)
    table = pd.DataFrame({"recorded": r, "recomputed": c, "diff": r - c, "matches": matches,
                          "cause": pd.Categorical.from_codes(cause + 1, ["", *CAUSES]),
                          "neighbour": neighbour})
    return table, cause, neighbour, broadcast_traj


def _flat_trajectories(r: np.ndarray, c: np.ndarray, traj: np.ndarray, n_traj: int,
                       atol: float, rtol: float) -> np.ndarray:
    """(n_traj,) bool: of the trajectories in ``traj`` (rows sorted by trajectory, then step),
    those whose recorded finite values are one value (≥ 2 of them) while the recomputed ones
    vary."""
    start = np.r_[True, traj[1:] != traj[:-1]]
    starts = np.flatnonzero(start)
    live = np.isfinite(r)
    r_hi = np.maximum.reduceat(np.where(live, r, -np.inf), starts)
    r_lo = np.minimum.reduceat(np.where(live, r, np.inf), starts)
    c_hi = np.maximum.reduceat(np.where(live, c, -np.inf), starts)
    c_lo = np.minimum.reduceat(np.where(live, c, np.inf), starts)
    n_live = np.add.reduceat(live.astype(np.int64), starts)
    scale = np.maximum(np.abs(c_hi), np.abs(c_lo))
    flat = (n_live >= 2) & (r_hi - r_lo <= atol + rtol * scale) & \
        (c_hi - c_lo > atol + rtol * scale)
    out = np.zeros(n_traj, dtype=bool)
    out[traj[starts]] = flat
    return out


def _neighbours(r: np.ndarray, c: np.ndarray, group: np.ndarray, atol: float, rtol: float
                ) -> np.ndarray:
    """Per row (sorted by trajectory, then step): -1 where its recorded value is the
    recomputed value of the row before it in the same group (and that differs from its own),
    +1 where it is the next row's, else 0."""
    same = np.r_[False, group[1:] == group[:-1]]
    c_prev, c_next = np.r_[np.nan, c[:-1]], np.r_[c[1:], np.nan]
    by_prev = same & close(r, c_prev, atol, rtol) & ~close(c_prev, c, atol, rtol)
    by_next = np.r_[same[1:], False] & close(r, c_next, atol, rtol) & \
        ~close(c_next, c, atol, rtol)
    return np.where(by_prev, -1, np.where(by_next, 1, 0))


def _group_table(steps: pd.DataFrame, ix: StepIndex, r: np.ndarray, c: np.ndarray,
                 cause: np.ndarray, neighbour: np.ndarray, broadcast_traj: np.ndarray
                 ) -> pd.DataFrame:
    """The per-group counts and sums of the evidence (:data:`GROUP_COLUMNS`' numbers)."""
    g, n = ix.group, ix.n_groups

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(g, weights=mask, minlength=n).astype(np.int64)

    def total(x: np.ndarray) -> np.ndarray:
        return np.bincount(g, weights=x, minlength=n)

    has = ~np.isnan(r)
    finite = has & np.isfinite(r)
    differ = cause >= 0
    diff = np.where(finite, np.abs(r - c), 0.0)
    max_diff = np.zeros(n)
    np.maximum.at(max_diff, g, np.where(differ & finite, diff, 0.0))
    recorded = count(has)
    wrong = total(np.where(differ, diff, 0.0))
    mass = total(np.where(finite, np.abs(r), 0.0) + np.where(finite, np.abs(c), 0.0))
    nonfinite = count(has & ~finite)
    severity = np.where(nonfinite > 0, 1.0,
                        np.where(mass > 0, np.clip(wrong / np.where(mass > 0, mass, 1.0),
                                                   0.0, 1.0), 0.0))
    by_prev, by_next = count(differ & (neighbour < 0)), count(differ & (neighbour > 0))
    shift = np.where(by_prev + by_next == 0, "",
                     np.where(by_prev >= by_next, "previous row", "next row"))
    opposite = finite & (r * c < 0) & (np.abs(r) > ATOL) & (np.abs(c) > ATOL)
    table = group_keys(steps, ix).assign(
        severity=severity, steps=np.bincount(g, minlength=n), recorded=recorded,
        mismatched=count(differ), max_abs_diff=max_diff,
        mean_abs_diff=total(diff) / np.maximum(recorded - nonfinite, 1),
        zeroed=count(cause == CAUSES.index("zeroed")),
        broadcast_trajs=np.bincount(ix.traj_group, weights=broadcast_traj,
                                    minlength=n).astype(np.int64),
        negated=count(cause == CAUSES.index("negated")),
        misaligned=count(cause == CAUSES.index("misaligned")), shift=shift,
        sign_flips=count(differ & opposite), nonfinite=nonfinite,
        _main=_main_cause(g, n, cause))
    return table


def _main_cause(g: np.ndarray, n: int, cause: np.ndarray) -> np.ndarray:
    """(n,) object: the cause at least half of each group's differing steps have, else
    ``differs`` (no single pattern); '' where no step differs."""
    differ = cause >= 0
    counts = np.zeros((n, len(CAUSES)), dtype=np.int64)
    np.add.at(counts, (g[differ], cause[differ]), 1)
    total = counts.sum(axis=1)
    top = counts.argmax(axis=1)
    main = np.where(2 * counts[np.arange(n), top] >= total, top, CAUSES.index("differs"))
    return np.where(total > 0, np.array(CAUSES, dtype=object)[main], "")


def _with_fit(groups: pd.DataFrame, steps: pd.DataFrame, ix: StepIndex, r: np.ndarray, *,
              rule: OutcomeRule, params: G2POParams, limit: int, atol: float, rtol: float
              ) -> pd.DataFrame:
    """``groups`` with :data:`~g2po.analysis.credit_fit.FIT_COLUMNS` for the ``limit`` most
    severe groups that differ of each training step (the others: not fitted, NaN / None)."""
    differ = groups[groups["mismatched"].to_numpy() > 0]
    chosen = differ.sort_values(["severity", "train_step", "group_id"],
                                ascending=[False, True, True], kind="stable") \
        .groupby("train_step", sort=False).head(limit).index.to_numpy()
    out = groups.assign(best_fit=None, fit_match=np.nan, fit_error=np.nan, explained=False)
    if not len(chosen):
        return out
    rows = np.isin(ix.group, chosen)
    fitted = fit_credit(steps[rows], r[rows], rule=rule, params=params, atol=atol, rtol=rtol)
    keys = ["train_step", "group_id"]
    at = pd.MultiIndex.from_frame(groups[keys]).get_indexer(
        pd.MultiIndex.from_frame(fitted[keys]))
    for col in ("best_fit", "fit_match", "fit_error", "explained"):
        values = out[col].to_numpy(copy=True)
        values[at] = fitted[col].to_numpy()
        out[col] = values
    return out


def _judge(groups: pd.DataFrame, estimator: str) -> pd.DataFrame:
    """Each group's ``kind``, ``reason`` and ``fix`` from its evidence; worst first."""
    main = groups.pop("_main").to_numpy(dtype=object)
    if "best_fit" not in groups:  # not fitted
        groups = groups.assign(best_fit=None, fit_match=np.nan, fit_error=np.nan,
                               explained=False)
    explained = groups["explained"].to_numpy(dtype=bool)
    kind = np.where(explained & (main != ""), "other_estimator", main)
    groups = groups.assign(kind=kind)
    groups["reason"] = [_reason(row, estimator, cause)
                        for row, cause in zip(groups.itertuples(index=False), main, strict=True)]
    groups["fix"] = [KINDS[k].fix if k else "" for k in kind]
    groups = groups.sort_values(["severity", "mismatched"], ascending=False, kind="stable")
    return groups.reset_index(drop=True)[GROUP_COLUMNS]


def _reason(row, estimator: str, cause: str) -> str:
    """The group's finding in one sentence, with its evidence (``cause``: the main cause of
    its differing steps, said beside an estimator that explains them)."""
    if not row.kind:
        return "" if row.recorded else "no recorded advantage"
    details = {
        "zeroed": f"{row.zeroed} step(s) recorded as 0 where {estimator} gives credit",
        "broadcast": f"{row.broadcast_trajs} trajectory(ies) carry one value on every step "
                     f"where {estimator}'s vary",
        "negated": f"{row.negated} step(s) carry {estimator}'s value with the sign flipped",
        "misaligned": f"{row.misaligned} step(s) carry the value of the {row.shift}",
        "sign": f"{row.sign_flips} step(s) have the opposite sign of {estimator}'s",
        "nonfinite": f"{row.nonfinite} step(s) are not finite",
        "differs": f"differs from {estimator}'s recomputation in no single pattern"
                   + _breakdown(row),
    }
    if row.kind == "other_estimator":
        detail = f"reproduced by {row.best_fit}, not by the audited {estimator}" + \
            (f": {details[cause]}" if cause != "differs" else "")
    else:
        detail = details[row.kind]
    fitted = ""
    if row.kind != "other_estimator" and isinstance(row.best_fit, str):
        fitted = f"; no registered estimator explains it (closest: {row.best_fit}, " \
                 f"{row.fit_match:.0%} of steps)"
    return f"{detail} ({row.mismatched} of {row.recorded} recorded steps differ, largest " \
           f"|difference| {row.max_abs_diff:.3g}){fitted}"


def _breakdown(row) -> str:
    """The named patterns among a group's differing steps, e.g. " (6 opposite sign, 3 zeroed)"."""
    parts = [f"{count} {words}" for count, words in (
        (row.zeroed, "zeroed"), (row.negated, "negated"), (row.misaligned, "misaligned"),
        (row.sign_flips, "opposite sign"), (row.nonfinite, "not finite")) if count]
    return f" ({', '.join(parts)})" if parts else ""


def run_findings(groups: pd.DataFrame, estimator: str = "g2po") -> list[str]:
    """The run's findings about recorded credit, in words: how many groups differ and by
    which kind, and, when most differ the same way, that the audit's estimator or parameters
    are likely not the run's. Empty for a run whose recorded credit is the recomputation."""
    audited = groups[groups["recorded"] > 0]
    if audited.empty:
        return ["no group carries a recorded advantage"]
    bad = audited[audited["kind"] != ""]
    if bad.empty:
        return [f"the recorded advantage equals {estimator}'s recomputation on all "
                f"{len(audited):,} groups"]
    out = [f"recorded credit differs from {estimator}'s recomputation on {len(bad):,} of "
           f"{len(audited):,} groups ({len(bad) / len(audited):.0%}): {kind_words(bad)}"]
    likely = likely_estimator(audited)
    return out + ([f"most groups are reproduced by {likely}: the run was likely trained "
                   "with it; audit with it (--estimator, -p) or check the trainer's settings"]
                  if likely else [])


def kind_words(groups: pd.DataFrame) -> str:
    """How many of ``groups`` (rows of :attr:`RecordedAudit.groups` with a finding) have each
    kind: "3 recorded as 0 where the recomputation is not, 1 the sign flipped"."""
    return ", ".join(f"{n:,} {KINDS[k].title}" for k, n in groups["kind"].value_counts().items())


def likely_estimator(groups: pd.DataFrame) -> str | None:
    """The candidate (:meth:`~g2po.analysis.credit_fit.Candidate.describe`) that reproduces
    most of the differing groups, where they are most of the audited ``groups`` (four at
    least) and it explains at least half of those fitted; else None."""
    bad = groups[(groups["recorded"] > 0) & (groups["kind"] != "")]
    fits = bad.loc[bad["explained"].astype(bool), "best_fit"].value_counts()
    if len(bad) >= max(4, int((groups["recorded"] > 0).sum()) // 2) and len(fits) and \
            fits.iloc[0] >= len(bad.dropna(subset=["best_fit"])) // 2:
        return str(fits.index[0])
    return None


def step_words(row: Mapping[str, object]) -> str:
    """One step of :attr:`RecordedAudit.steps` in words, for the explorer ('' where it
    matches)."""
    cause = row.get("cause") or ""
    if not cause:
        return ""
    return KINDS[cause if cause in KINDS else "differs"].step.format(
        recorded=row["recorded"], recomputed=row["recomputed"])
