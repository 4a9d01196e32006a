"""Several estimators on one group, side by side: the per-step table (with each step's node and
its trajectory's outcome), each estimator's parts, rank correlations, and the steps where two
estimators disagree in sign, with what each estimator's parts say there."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from g2po.analysis.labels import natural_key
from g2po.analysis.state_graph import StateGraph
from g2po.errors import G2POError
from g2po.estimators import compute_advantages, estimate, get_estimator
from g2po.node_ids import step_node_ids
from g2po.outcomes import OutcomeRule, outcome_labels, truncated_steps
from g2po.segments import NORM_MODES

__all__ = ["Comparison", "compare_estimators", "rank_correlation", "sign_disagreements",
           "zscore", "parameter_choices", "part_label", "trajectory_facts", "step_location",
           "DEFAULT_ESTIMATORS", "KNOWN_CHOICES", "PART_PREFIX"]

DEFAULT_ESTIMATORS = ("g2po", "grpo", "gigpo")
#: Choices of text parameters whose annotation does not list them (a user's estimator
#: annotating ``mode: str``): the spec's normalisation modes and terminal rules.
KNOWN_CHOICES: dict[str, tuple[str, ...]] = {"mode": NORM_MODES,
                                             "terminal": ("binary", "reward")}
_KEY = ["traj_id", "t"]
#: An estimator's output columns named ``adv_…`` are the parts of its advantage (G2PO's
#: ``adv_ep``, ``adv_nc``, ``adv_ec``; GiGPO's ``adv_ep``, ``adv_step``; HGPO's ``adv_k1`` …).
PART_PREFIX = "adv_"
_PART_NAMES = {"ep": "A^EP", "nc": "A^NC", "ec": "A^EC", "step": "A^S"}


def part_label(column: str) -> str:
    """The name a part column is shown under: ``adv_ep`` → ``A^EP``, ``adv_step`` → ``A^S``
    (the papers' step term), any other ``adv_x`` → ``A^x``.

    >>> part_label("adv_nc"), part_label("adv_k2")
    ('A^NC', 'A^k2')
    """
    suffix = column[len(PART_PREFIX):] if column.startswith(PART_PREFIX) else column
    return _PART_NAMES.get(suffix, f"A^{suffix}")


def parameter_choices(name: str) -> dict[str, tuple]:
    """Parameter → its allowed values, for an estimator's parameters that take one of a few:
    from a ``Literal[...]`` annotation (``mode: NormMode``), else :data:`KNOWN_CHOICES` for a
    text parameter of a known name. Parameters taking any number or text are left out."""
    fn = get_estimator(name)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # a user's estimator with unresolvable annotations: fall back on names
        hints = {}
    out: dict[str, tuple] = {}
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        hint = hints.get(param.name)
        if typing.get_origin(hint) is typing.Literal:
            out[param.name] = tuple(typing.get_args(hint))
        elif param.name in KNOWN_CHOICES and (param.default is inspect.Parameter.empty or
                                              isinstance(param.default, str)):
            out[param.name] = KNOWN_CHOICES[param.name]
    return out


@dataclass
class Comparison:
    """``table``: one row per step, ordered by trajectory then step: traj_id, t, node (the id
    the group's state graph gives the step's state under the comparison's state key, as the
    group explorer numbers it), outcome (``success``, ``failure`` or ``truncated``: what the
    step's trajectory reached), episode_reward, valid, one float column per estimator that ran
    (named by the estimator), then action and the step's text; ``text_column``: the name of the
    text column, ``observation`` (what the policy saw) where the log has one, else
    ``state_key``; ``parts``: estimator → its parts (the ``adv_…`` columns it returned, named by
    :func:`part_label`; rows as ``table``'s; estimators without parts are absent); ``errors``:
    estimator name → message for those that could not run on this group; ``params``: what
    each ran with."""

    table: pd.DataFrame
    estimators: list[str]
    errors: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)
    text_column: str = "state_key"
    parts: dict[str, pd.DataFrame] = field(default_factory=dict)


def compare_estimators(
    steps: pd.DataFrame,
    estimators: list[str],
    params: dict[str, dict] | None = None,
    state_key: str = "exact",
    *,
    rule: OutcomeRule,
) -> Comparison:
    """Run each estimator on the group's ``steps`` with ``params[name]`` (keyword arguments)
    and collect its ``adv`` column and its parts. An estimator that fails (a parameter out of
    its range, a user estimator raising) is reported in ``errors`` instead of stopping the
    others. The run's outcome ``rule`` decides each trajectory's outcome (success, failure,
    truncated); node ids are numbered as :func:`g2po.analysis.state_graph.state_graph`
    numbers them on ``steps`` in their given row order, under the same rule."""
    params = params or {}
    g2po_cols, ix = estimate(steps, "g2po", state_key=state_key, **rule.estimator_kwargs())
    success = np.asarray(g2po_cols["success"], dtype=bool)
    truncated = truncated_steps(steps, ix, success, rule.truncate_at)
    node, _ = step_node_ids(ix, success, truncated)
    outcome = outcome_labels(success, truncated)
    # rows by trajectory (natural order: s0:2 before s0:10), then step
    traj_rank = steps["traj_id"].astype(str).map(_natural_rank(steps["traj_id"])).to_numpy()
    order = np.lexsort((steps["t"].to_numpy(), traj_rank))
    ordered = steps.iloc[order].reset_index(drop=True)
    text_col = "observation" if "observation" in ordered.columns else "state_key"
    table = pd.DataFrame({
        "traj_id": ordered["traj_id"].to_numpy(),
        "t": ordered["t"].to_numpy(),
        "node": node[order],
        "outcome": outcome[order],
        "episode_reward": ordered["episode_reward"].to_numpy(dtype=np.float64),
        "valid": ordered["is_action_valid"].to_numpy(dtype=bool),
    })
    ran, errors, parts = [], {}, {}
    for name in estimators:
        kwargs = dict(params.get(name, {}))
        try:
            out = compute_advantages(ordered, name, state_key=state_key, prefix="__",
                                     **kwargs)
        except (G2POError, ValueError, TypeError, KeyError, ArithmeticError) as err:
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        table[name] = out["__adv"].to_numpy(dtype=np.float64)
        own = [c[2:] for c in out.columns if c.startswith("__" + PART_PREFIX)
               and out[c].dtype.kind == "f"]
        if own:
            parts[name] = pd.DataFrame({part_label(c): out["__" + c].to_numpy() for c in own})
        ran.append(name)
    table["action"] = ordered["action"].to_numpy()
    table[text_col] = ordered[text_col].to_numpy()
    return Comparison(table=table, estimators=ran, errors=errors,
                      params={n: dict(params.get(n, {})) for n in estimators},
                      text_column=text_col, parts=parts)


def _natural_rank(ids: pd.Series) -> dict[str, int]:
    """Trajectory id → its position in natural order (``s0:2`` before ``s0:10``)."""
    unique = sorted(pd.unique(ids.astype(str)), key=natural_key)
    return {t: i for i, t in enumerate(unique)}


def trajectory_facts(table: pd.DataFrame) -> pd.DataFrame:
    """Per trajectory of a :class:`Comparison` table (index ``traj_id``, in the table's order):
    ``outcome``, ``length`` (steps) and ``episode_reward``; for titles and pickers."""
    grouped = table.groupby("traj_id", sort=False)
    return pd.DataFrame({"outcome": grouped["outcome"].first(), "length": grouped.size(),
                         "episode_reward": grouped["episode_reward"].first()})


def step_location(graph: StateGraph, traj_id: str, t: int) -> tuple[int, int | None] | None:
    """Where step ``t`` of trajectory ``traj_id`` sits in ``graph``: its node and the row of
    its edge in ``graph.edges`` (None when no edge matches); None when the graph has no such
    step. For opening a step in the group explorer."""
    steps = graph.steps
    hit = steps[(steps["traj_id"].astype(str).to_numpy() == str(traj_id))
                & (steps["t"].to_numpy() == int(t))]
    if hit.empty:
        return None
    step = hit.iloc[0]
    edges = graph.edges
    match = np.flatnonzero((edges["source"].to_numpy() == int(step["node"]))
                           & (edges["target"].to_numpy() == int(step["next_node"]))
                           & (edges["action"].astype(str).to_numpy() == str(step["action"])))
    return int(step["node"]), (int(match[0]) if len(match) else None)


def zscore(table: pd.DataFrame, estimators: list[str]) -> pd.DataFrame:
    """A copy of ``table`` with each estimator's column z-scored over the group's steps
    (mean 0, population std 1), so estimators on very different scales compare by shape. A
    constant column becomes 0. For display: signs change with the mean, so sign comparisons
    use the raw values."""
    out = table.copy()
    for name in estimators:
        values = out[name].to_numpy(dtype=np.float64)
        std = values.std()
        out[name] = (values - values.mean()) / std if std > 1e-12 else np.zeros_like(values)
    return out


def rank_correlation(table: pd.DataFrame, estimators: list[str],
                     method: str = "spearman") -> pd.DataFrame:
    """Rank correlation (``spearman`` or ``kendall``) between the estimators' per-step
    advantages, (k, k). NaN where an estimator is constant on the group (no ranking)."""
    if method not in ("spearman", "kendall"):
        raise ValueError(f"method must be 'spearman' or 'kendall', got {method!r}")
    return table[estimators].corr(method=method)


def sign_disagreements(table: pd.DataFrame, a: str, b: str,
                       parts: dict[str, pd.DataFrame] | None = None,
                       tol: float = 1e-9) -> pd.DataFrame:
    """Steps where ``a`` and ``b`` push in opposite directions (one > tol, the other < −tol),
    the widest disagreement first. A zero advantage has no sign and never disagrees.

    One row per such step: traj_id, t, node and outcome (where ``table`` has them), ``a``'s
    advantage then its parts (``parts[a]``, columns named ``"{a} · {part}"``), the same for
    ``b``, ``z gap`` = |z(a) − z(b)|, each estimator's advantages z-scored over all the
    group's steps as :func:`zscore` does (so an estimator on a wider scale, GiGPO's
    ``mean_norm`` beside G2PO's ``mean_std_norm``, does not decide the order alone), then the
    action and the step's text. Sorted by z gap, then trajectory (natural order) and step."""
    if a == b:
        raise ValueError(f"sign_disagreements needs two different estimators, got {a!r} twice")
    parts = parts or {}
    x = table[a].to_numpy(dtype=np.float64)
    y = table[b].to_numpy(dtype=np.float64)
    sx = np.where(x > tol, 1, np.where(x < -tol, -1, 0))
    sy = np.where(y > tol, 1, np.where(y < -tol, -1, 0))
    mask = sx * sy < 0
    z = zscore(table[[a, b]], [a, b])
    out = table.loc[mask, [c for c in ("traj_id", "t", "node", "outcome") if c in table]].copy()
    for name in (a, b):
        out[name] = table.loc[mask, name]
        if name in parts:
            for col in parts[name].columns:
                out[f"{name} · {col}"] = parts[name][col].to_numpy()[mask]
    out["z gap"] = np.abs(z[a].to_numpy() - z[b].to_numpy())[mask]
    for col in ("action", "observation", "state_key"):
        if col in table.columns and col not in out.columns:
            out[col] = table.loc[mask, col]
    rank = out["traj_id"].astype(str).map(_natural_rank(out["traj_id"])) if len(out) else []
    return out.assign(_r=rank).sort_values(["z gap", "_r", "t"], ascending=[False, True, True],
                                            kind="stable").drop(columns="_r"
                                                                ).reset_index(drop=True)
