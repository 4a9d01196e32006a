"""Recorded credit: the advantage the trainer recorded for each step against the recomputation
(:func:`g2po.analysis.recorded.audit_recorded`, called here on every batch: one
implementation, the one ``g2po audit`` runs).

``recorded_credit`` fires where a group's recorded advantages differ from the recomputation:
steps recorded as 0 where the estimator gives credit, one value broadcast over a trajectory,
the sign flipped, values of the neighbouring row, another estimator's. Silent where the log
records no advantage. Severity: the share of the group's credit that differs, Σ|r − c| over
the differing steps / (Σ|r| + Σ|c|) (1 for a value that is not finite): 0 for a trainer that
trained with exactly the recomputation.

What is recomputed: the estimator, keyword arguments and state key the run states it trained
with (its manifest, :func:`~g2po.analysis.recorded.stated_credit`, :attr:`Batch.credit`);
where it states none, the triage's parameters with each estimator a group can be judged for
(G2PO and GRPO, :data:`ESTIMATORS`): the table keeps one set of evidence per estimator (the
G2PO one unsuffixed, ``…_grpo``), and a group is judged by the one the user says they train
with, as the "no training signal" check is. The search for the estimator and parameters that
explain a differing group (:func:`g2po.analysis.credit_fit.fit_credit`) runs on the most
severe groups of each training step (:data:`~g2po.analysis.recorded.FIT_LIMIT`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.analysis.checks._run import at_rows, estimator_name, where
from g2po.analysis.checks.registry import (
    ESTIMATORS,
    Alarm,
    Batch,
    Check,
    GroupView,
    register_check,
)
from g2po.analysis.credit_fit import group_keys
from g2po.analysis.recorded import (
    KINDS,
    RecordedAudit,
    StatedCredit,
    audit_recorded,
    has_recorded,
    kind_words,
    likely_estimator,
)
from g2po.estimators import check_estimator_params, step_columns
from g2po.index import StepIndex
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams

__all__ = ["CHECK", "credit_column", "audits"]

#: The evidence kept per judged estimator (:func:`credit_column` names its column).
_PER_ESTIMATOR = {"credit_share": "recorded A: share of credit differing",
                  "credit_kind": "recorded A: finding",
                  "credit_evidence": "recorded A: what differs",
                  "credit_fit": "recorded A: explained by"}


def credit_column(name: str, estimator: str) -> str:
    """The table's column ``name`` (one of the per-estimator evidence columns) for the
    estimator a group is judged for: ``credit_kind`` (G2PO), ``credit_kind_grpo``."""
    return name if estimator == "g2po" else f"{name}_{estimator}"


def _columns() -> dict[str, str]:
    out = {"recorded_steps": "recorded A: steps", "credit_stated": "recorded A: run's estimator"}
    for estimator, shown in ESTIMATORS.items():
        for name, header in _PER_ESTIMATOR.items():
            out[credit_column(name, estimator)] = header + ("" if estimator == "g2po"
                                                            else f" ({shown})")
    return out


def audits(steps: pd.DataFrame, *, rule: OutcomeRule, params: G2POParams,
           credit: StatedCredit | None, g2po: tuple[np.ndarray, StepIndex] | None = None,
           text=None, fit: bool = True) -> dict[str, RecordedAudit]:
    """Judged estimator (:data:`ESTIMATORS`) → the audit of ``steps``' recorded advantages:
    against the run's stated credit for every estimator where it states one, else against
    each estimator with ``params`` and ``rule``. ``g2po``: G2PO's advantage and index of
    ``steps`` under ``params`` where the caller has them (not computed again); ``text``
    ((column, rows) → text) gives the log's own state keys where the run's state key is not
    the one ``steps`` is keyed with (``credit.state_key`` not None)."""
    if credit is None:
        return {e: audit_recorded(steps, rule=rule, params=params, estimator=e, fit=fit,
                                  recomputed=g2po if e == "g2po" else None)
                for e in ESTIMATORS}
    own_params, own = credit.audit_params(params)
    if credit.state_key is not None:  # the run keyed its states otherwise
        steps = steps.assign(state_key=text("state_key", np.arange(len(steps))))
    same = credit.state_key is None and credit.estimator == "g2po" and \
        {**own_params.for_estimator("g2po", rule), **own} == params.for_estimator("g2po", rule)
    found = audit_recorded(steps, rule=rule, params=own_params, estimator=credit.estimator,
                           estimator_params=own, fit=fit, recomputed=g2po if same else None)
    return {e: found for e in ESTIMATORS}


def _measure(batch: Batch) -> dict[str, np.ndarray]:
    G = batch.sig.ix.n_groups
    out: dict[str, np.ndarray] = {"count": np.zeros(G, dtype=np.int64),
                                  "recorded_steps": np.zeros(G, dtype=np.int64),
                                  "credit_stated": np.full(G, "", dtype=object)}
    for estimator in ESTIMATORS:
        out[credit_column("credit_share", estimator)] = np.zeros(G)
        for name in ("credit_kind", "credit_evidence", "credit_fit"):
            out[credit_column(name, estimator)] = np.full(G, "", dtype=object)
    if not has_recorded(batch.steps):
        return out
    if batch.credit is not None and batch.credit.kwargs:
        try:
            check_estimator_params(batch.credit.estimator, **batch.credit.kwargs)
        except (TypeError, ValueError) as err:
            raise ValueError(f"the run's manifest states estimator {batch.credit.estimator!r} "
                             f"with estimator_params {dict(batch.credit.kwargs)}, which it "
                             f"does not take: {err}") from None
    found = audits(batch.steps, rule=batch.rule, params=batch.params, credit=batch.credit,
                   g2po=(batch.sig.g2po["adv"], batch.sig.ix), text=batch.text)
    keys = pd.MultiIndex.from_frame(group_keys(batch.steps, batch.sig.ix))
    for estimator, audit in found.items():
        groups = audit.groups
        at = keys.get_indexer(pd.MultiIndex.from_frame(groups[["train_step", "group_id"]]))
        fitted = np.where(groups["explained"].to_numpy(dtype=bool),
                          groups["best_fit"].fillna("").to_numpy(dtype=object), "")
        for name, values in (("credit_share", groups["severity"].to_numpy(float)),
                             ("credit_kind", groups["kind"].to_numpy(dtype=object)),
                             ("credit_evidence", groups["reason"].to_numpy(dtype=object)),
                             ("credit_fit", fitted)):
            out[credit_column(name, estimator)][at] = values
        if estimator == next(iter(ESTIMATORS)):
            out["count"][at] = groups["mismatched"].to_numpy(dtype=np.int64)
            out["recorded_steps"][at] = groups["recorded"].to_numpy(dtype=np.int64)
    if batch.credit is not None:
        out["credit_stated"][:] = batch.credit.estimator
    return out


def _audited(table: pd.DataFrame, estimator: str) -> str:
    """The estimator a group's recorded credit was audited against, as ``estimator`` is
    judged: the run's stated one, else that one."""
    stated = table["credit_stated"].to_numpy(dtype=object) if len(table) else []
    named = next((str(s) for s in stated if isinstance(s, str) and s), "")
    return named or estimator


def _fires(table: pd.DataFrame, estimator: str) -> np.ndarray:
    kind = table[credit_column("credit_kind", estimator)]
    return (kind.fillna("").astype(str) != "").to_numpy()


def _severity(table: pd.DataFrame, estimator: str) -> np.ndarray:
    return where(_fires(table, estimator),
                 table[credit_column("credit_share", estimator)].to_numpy(float))


def _reason(table: pd.DataFrame, rows: np.ndarray, estimator: str) -> list[str]:
    (said,) = at_rows(table, rows, credit_column("credit_evidence", estimator))
    return [f"recorded credit: {s}" for s in said]


def _run_text(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    kind = table[credit_column("credit_kind", estimator)].fillna("").to_numpy(dtype=object)
    fit = table[credit_column("credit_fit", estimator)].fillna("").to_numpy(dtype=object)
    groups = pd.DataFrame({"recorded": table["recorded_steps"].to_numpy(dtype=np.int64),
                           "kind": np.where(fires, kind, ""), "explained": fit != "",
                           "best_fit": np.where(fit != "", fit, None)})
    name = estimator_name(_audited(table, estimator))
    audited = int((groups["recorded"] > 0).sum())
    said = f"of the {audited:,} groups with a recorded advantage, against {name}'s " \
        f"recomputation: {kind_words(groups[groups['kind'] != ''])}"
    likely = likely_estimator(groups)
    return said + (f"; most are reproduced by {likely}: the run was likely trained with it."
                   if likely else ".")


def _fix(table: pd.DataFrame, fires: np.ndarray, estimator: str) -> str:
    kinds = pd.Series(table[credit_column("credit_kind", estimator)].to_numpy(dtype=object)
                      [fires]).value_counts()
    if kinds.empty:
        return "nothing: the recorded advantage is the recomputation."
    return KINDS[str(kinds.index[0])].fix + " (g2po audit RUN --steps lists each step)."


def _alarm(view: GroupView) -> Alarm | None:
    first = next(iter(ESTIMATORS))
    kind = str(view.measured.get(credit_column("credit_kind", first)) or "")
    if not kind:
        return None
    steps = view.graph.steps
    found = audits(steps, rule=view.rule, params=view.params, credit=view.credit,
                   text=lambda column, rows: steps[column].astype(str).to_numpy()[rows]
                   .tolist(), fit=False)[first]
    differing = found.steps[found.steps["cause"] != ""]
    n = len(differing)
    said = str(view.measured[credit_column("credit_evidence", first)])
    return Alarm("recorded_credit", f"Recorded credit differs: {n} step(s)",
                 f"The advantage the trainer recorded differs from "
                 f"{estimator_name(found.estimator)}'s recomputation: {said}. Fix: "
                 f"{KINDS[kind].fix}.", n,
                 differing[["traj_id", "t"]].sort_values(["traj_id", "t"])
                 .reset_index(drop=True))


CHECK = register_check(Check(
    kind="recorded_credit", title="Recorded credit differs", measure=_measure,
    severity=_severity, reason=_reason, run_text=_run_text, fix=_fix, alarm=_alarm,
    fires=_fires, columns=_columns(),
    reads=("advantage", "step_reward", *step_columns()), order=20))
