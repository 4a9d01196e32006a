"""Tables of one group's graph for the views: per-step trajectories, trajectory summaries, a
node's occurrences and outgoing transitions, the critical transitions. Plain pandas on
:class:`g2po.analysis.state_graph.StateGraph`; the numbers are the graph's, nothing is
recomputed here.

Colours: every quantity (A, A^EP, A^NC, A^EC, TD error, V, V′) has one zero-centred scale for
the whole group (:func:`scale_limits`), shared by every table of the page, so one number has
one colour wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from app.colors import diverging_colors, text_color_for
from app.graph import Highlight
from app.safe import truncate
from g2po.analysis.labels import lead_with_difference, natural_key
from g2po.analysis.state_graph import StateGraph
from g2po.outcomes import outcome_labels

if TYPE_CHECKING:
    from g2po.analysis.group_view import RecordedCredit
    from g2po.analysis.whatif import WhatIf

__all__ = [
    "STEP_COLUMNS",
    "ADVANTAGE_COLUMNS",
    "OUTCOMES",
    "step_table",
    "trajectory_summary",
    "trajectory_order",
    "trajectory_highlight",
    "node_highlight",
    "node_occurrences",
    "outgoing_transitions",
    "critical_table",
    "node_choices",
    "scale_limits",
    "style_diverging",
    "STYLE_MAX_CELLS",
    "RECORDED",
    "AUDIT",
    "flip_style",
    "changed_steps",
    "FLIP_BACKGROUND",
]

#: Display names of the step table's computed columns, in the order shown (node first).
STEP_COLUMNS = {
    "node": "node",
    "adv": "A",
    "adv_ep": "A^EP",
    "adv_nc": "A^NC",
    "adv_ec": "A^EC",
    "td_error": "TD error",
    "node_value": "V",
    "next_value": "V′",
}
#: The coloured quantities, each on its own zero-centred scale shared by the page's tables.
ADVANTAGE_COLUMNS = ["A", "A^EP", "A^NC", "A^EC", "TD error", "V", "V′"]
#: The step tables' column of the advantage a trainer recorded (where the log has one): a
#: fact about the run, shown beside the recomputed A, never as it.
RECORDED = "recorded (trainer)"
#: The audit's word for each step's recorded value against the recomputation.
AUDIT = "audit"
#: The audit's causes (:data:`g2po.analysis.recorded.CAUSES`) as the audit column says them.
_AUDIT_WORDS = {"": "matches", "none": "", "zeroed": "zeroed", "broadcast": "broadcast",
                "negated": "sign flipped", "misaligned": "misaligned", "sign": "sign flip",
                "nonfinite": "not finite", "differs": "differs"}
#: Aliases of a quantity in other tables (same scale).
_SCALE_ALIASES = {"mean A": "A", "mean A^EP": "A^EP", "mean A^NC": "A^NC",
                  "mean A^EC": "A^EC", "V(next)": "V′", "ΣA": None, RECORDED: "A"}
#: The background of a step whose advantage changes sign (what-if tables).
FLIP_BACKGROUND = "#ffe08a"
OUTCOMES = ("success", "failure", "truncated")
#: Above this many cells tables are shown without per-cell colours (styling is slow).
STYLE_MAX_CELLS = 40_000


def _text_column(steps: pd.DataFrame) -> str:
    return "observation" if "observation" in steps.columns else "state_key"


def trajectory_order(graph: StateGraph) -> list[str]:
    """The group's trajectory ids, sorted naturally (``s0:2`` before ``s0:10``)."""
    return sorted(pd.unique(graph.steps["traj_id"].astype(str)), key=natural_key)


def _outcome(steps: pd.DataFrame) -> np.ndarray:
    success = steps["success"].to_numpy(dtype=bool)
    truncated = steps["truncated"].to_numpy(dtype=bool) if "truncated" in steps.columns else \
        np.zeros(len(steps), dtype=bool)
    return outcome_labels(success, truncated)


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """Trajectory id → what tells it from the group's others (``s1:0`` of
    ``cooking-…-train-s1:0``), cut in the middle when long: every page's rollout column."""
    ids = list(dict.fromkeys(str(i) for i in ids))
    return dict(zip(ids, lead_with_difference(ids, limit=20)[0], strict=True))


def _short_ids(graph: StateGraph) -> dict[str, str]:
    return short_ids(trajectory_order(graph))


def step_table(graph: StateGraph, traj_id: str | Iterable[str] | None = None,
               text_limit: int = 80, rows: np.ndarray | None = None,
               recorded: RecordedCredit | None = None) -> pd.DataFrame:
    """One row per step (of one trajectory, several, or all; or the positional ``rows`` of
    ``graph.steps``), ordered by trajectory (naturally) then step: rollout (the part of its id
    that tells it from the others, cut in the middle when long), t, node, A, A^EP, A^NC, A^EC,
    TD error, V, V′, valid, end (the terminal the last step leads to: success, failure or
    truncated), action, observation and, where the log has it, response (truncated to
    ``text_limit``). With the audit of a ``recorded`` advantage, right after A: the
    trainer's value (:data:`RECORDED`), the audit's recomputation when it used another
    estimator than G2PO, and the audit's word for the step (:data:`AUDIT`). The index is the
    step's position in ``graph.steps``."""
    steps = graph.steps.reset_index(drop=True)
    if rows is not None:
        steps = steps.iloc[np.asarray(rows, dtype=np.int64)]
    if traj_id is not None:
        wanted = [traj_id] if isinstance(traj_id, str) else list(traj_id)
        steps = steps[steps["traj_id"].astype(str).isin(wanted).to_numpy()]
    order = {t: i for i, t in enumerate(trajectory_order(graph))}
    steps = steps.assign(_order=steps["traj_id"].astype(str).map(order)).sort_values(
        ["_order", "t"], kind="stable")
    short = _short_ids(graph)
    last = steps["next_node"].isin(graph.nodes.index[graph.nodes["kind"] != "state"])
    out = pd.DataFrame({
        "rollout": steps["traj_id"].astype(str).map(short).to_numpy(),
        "t": steps["t"].to_numpy(),
    }, index=steps.index)
    for col, name in STEP_COLUMNS.items():
        out[name] = steps[col].to_numpy()
    if recorded is not None:
        _insert_recorded(out, recorded, graph.steps.index[steps.index])
    out["valid"] = steps["is_action_valid"].to_numpy(dtype=bool)
    out["end"] = np.where(last.to_numpy(), _outcome(steps), "")
    out["action"] = steps["action"].map(lambda s: truncate(s, text_limit)).to_numpy()
    out["observation"] = steps[_text_column(steps)].map(lambda s: truncate(s, text_limit)
                                                        ).to_numpy()
    if "response" in steps.columns:  # the model's output, beside what it answered
        out["response"] = steps["response"].map(lambda s: truncate(s, text_limit)).to_numpy()
    return out


def _insert_recorded(out: pd.DataFrame, recorded: RecordedCredit, labels: pd.Index) -> None:
    """The recorded advantage, (another estimator's recomputation) and the audit's word, right
    after A, for the steps whose ``graph.steps`` labels are ``labels``."""
    rows = recorded.steps.loc[labels]
    at = out.columns.get_loc("A") + 1
    out.insert(at, RECORDED, rows["recorded"].to_numpy(dtype=np.float64))
    if recorded.estimator != "g2po":
        at += 1
        out.insert(at, f"recomputed ({recorded.estimator})",
                   rows["recomputed"].to_numpy(dtype=np.float64))
    out.insert(at + 1, AUDIT, rows["cause"].map(_AUDIT_WORDS).fillna("differs").to_numpy())


def trajectory_summary(graph: StateGraph) -> pd.DataFrame:
    """One row per trajectory, naturally ordered: traj_id, rollout (shortened id), outcome
    (success, failure or truncated), length, episode reward, success, invalid steps, the sum of
    its combined advantage and the number of distinct nodes it visits."""
    steps = graph.steps
    grouped = steps.assign(invalid=~steps["is_action_valid"].to_numpy(dtype=bool),
                           outcome=_outcome(steps)).groupby("traj_id", sort=False)
    table = grouped.agg(
        outcome=("outcome", "first"),
        length=("t", "size"),
        reward=("episode_reward", "first"),
        success=("success", "first"),
        invalid=("invalid", "sum"),
        adv_sum=("adv", "sum"),
        nodes=("node", "nunique"),
    )
    table.index = table.index.astype(str)
    order = trajectory_order(graph)
    table = table.reindex(order).reset_index()
    short = _short_ids(graph)
    table.insert(1, "rollout", [short[t] for t in order])
    return table


def trajectory_highlight(graph: StateGraph, traj_id: str | Iterable[str],
                         node: int | None = None, edge: int | None = None) -> Highlight:
    """The nodes and edges the given trajectories walk, terminals included (and their ids,
    so that their own edges can show their own steps' advantages)."""
    wanted = [traj_id] if isinstance(traj_id, str) else list(traj_id)
    steps = graph.steps
    rows = steps[steps["traj_id"].astype(str).isin(wanted).to_numpy()]
    nodes = set(rows["node"].astype(int)) | set(rows["next_node"].astype(int))
    edges = {(int(a), str(b), int(c)) for a, b, c in
             zip(rows["node"], rows["action"], rows["next_node"], strict=True)}
    return Highlight(nodes=frozenset(nodes), edges=frozenset(edges), node=node, edge=edge,
                     trajectories=tuple(sorted(set(map(str, wanted)))))


def node_highlight(graph: StateGraph, node: int, edge: int | None = None) -> Highlight:
    """A node, its successors and its outgoing edges (its node-centric reference set)."""
    edges = graph.edges[graph.edges["source"].to_numpy() == node]
    keys = {(int(a), str(b), int(c)) for a, b, c in
            zip(edges["source"], edges["action"], edges["target"], strict=True)}
    nodes = {node} | {int(t) for t in edges["target"]}
    return Highlight(nodes=frozenset(nodes), edges=frozenset(keys), node=node, edge=edge)


def node_occurrences(graph: StateGraph, node: int, penalty: float = 0.1,
                     text_limit: int = 80) -> pd.DataFrame:
    """Every step at ``node`` (one row per transition, duplicates kept, as A^NC counts them):
    rollout, t, action, valid, next node, V(next), x = V(next) − p·invalid, A^NC, A."""
    steps = graph.steps
    rows = steps[steps["node"].to_numpy() == node]
    order = {t: i for i, t in enumerate(trajectory_order(graph))}
    rows = rows.assign(_o=rows["traj_id"].astype(str).map(order)).sort_values(["_o", "t"])
    short = _short_ids(graph)
    invalid = (~rows["is_action_valid"].to_numpy(dtype=bool)).astype(np.float64)
    return pd.DataFrame({
        "rollout": rows["traj_id"].astype(str).map(short).to_numpy(),
        "t": rows["t"].to_numpy(),
        "action": rows["action"].map(lambda s: truncate(s, text_limit)).to_numpy(),
        "valid": rows["is_action_valid"].to_numpy(dtype=bool),
        "next node": rows["next_node"].to_numpy(),
        "V(next)": rows["next_value"].to_numpy(),
        "x = V(next) − p·invalid": rows["next_value"].to_numpy() - penalty * invalid,
        "A^NC": rows["adv_nc"].to_numpy(),
        "A": rows["adv"].to_numpy(),
    })


def outgoing_transitions(graph: StateGraph, node: int, text_limit: int = 80) -> pd.DataFrame:
    """The edges leaving ``node``: action, target, count, invalid, TD error, mean advantages."""
    edges = graph.edges[graph.edges["source"].to_numpy() == node]
    out = edges.drop(columns=["source"]).rename(columns={
        "target": "to node", "td_error": "TD error", "adv": "mean A", "adv_ep": "mean A^EP",
        "adv_nc": "mean A^NC", "adv_ec": "mean A^EC"})
    out["action"] = out["action"].map(lambda s: truncate(s, text_limit))
    return out.reset_index(drop=True)


def critical_table(critical: pd.DataFrame, text_limit: int = 40) -> pd.DataFrame:
    """The critical transitions (:func:`g2po.analysis.critical.critical_transitions`) as a
    table, numbers before text (a narrow table cuts its last columns): #, from, to, TD error,
    mean A, count, action (from and to named as the graph names them); the index is the
    edge's row in ``graph.edges``."""
    return pd.DataFrame({
        "#": critical["rank"].to_numpy(),
        "from": critical["from"].to_numpy(),
        "to": critical["to"].to_numpy(),
        "TD error": critical["td_error"].to_numpy(),
        "mean A": critical["adv"].to_numpy() if "adv" in critical.columns else np.nan,
        "count": critical["count"].to_numpy(),
        "action": critical["action"].map(lambda s: truncate(s, text_limit)).to_numpy(),
    }, index=critical.index)


def node_choices(graph: StateGraph, text_limit: int = 60) -> dict[int, str]:
    """Node id → a one-line description for a picker (visits, value, distinguishing key)."""
    nodes = graph.nodes
    return {
        int(i): (f"{i}: {row.kind}" if row.kind != "state" else
                 f"{i}: visits {row.visits}, V {row.value:.3g} — {truncate(row.label, text_limit)}")
        for i, row in zip(nodes.index, nodes.itertuples(index=False), strict=True)
    }


def scale_limits(graph: StateGraph) -> dict[str, float]:
    """Per coloured quantity, the largest |value| over the whole group: the ends (±limit) of
    its zero-centred colour scale in every table."""
    steps = graph.steps
    limits = {}
    for col, name in STEP_COLUMNS.items():
        if name not in ADVANTAGE_COLUMNS or col not in steps.columns:
            continue
        values = np.abs(steps[col].to_numpy(dtype=np.float64))
        values = values[np.isfinite(values)]
        limits[name] = float(values.max()) if values.size else 0.0
    return limits


def style_diverging(frame: pd.DataFrame, limits: dict[str, float] | list[str],
                    digits: int = 3) -> Styler | pd.DataFrame:
    """Colour the columns of ``frame`` that ``limits`` names (directly or as ``mean A``,
    ``V(next)``, …) on the diverging scale, zero white, full colour at ±limit: the same value
    gets the same colour in every table styled with the same limits. A quantity whose limit is
    0 stays white. ``limits`` may also be a list of columns, each then scaled to its own
    largest |value|. Frames too large to style quickly come back unstyled."""
    if not isinstance(limits, dict):
        limits = {c: float(np.nanmax(np.abs(frame[c].to_numpy(dtype=np.float64))))
                  if len(frame) else 0.0 for c in limits if c in frame.columns}
    present = {c: c if c in limits else _SCALE_ALIASES.get(c) for c in frame.columns}
    present = {c: q for c, q in present.items() if q in limits}
    if frame.size > STYLE_MAX_CELLS:
        return frame
    styler = frame.style
    for col, quantity in present.items():
        limit = max(limits[quantity], 1e-12)

        def colour(values: pd.Series, limit: float = limit) -> list[str]:
            backgrounds = diverging_colors(values.to_numpy(dtype=np.float64), limit)
            return [f"background-color: {bg}; color: {text_color_for(bg)}"
                    for bg in backgrounds]

        styler = styler.apply(colour, subset=[col])
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    return styler.format({c: f"{{:.{digits}f}}" for c in floats}, na_rep="")


def flip_style(frame: pd.DataFrame, flips: np.ndarray):
    """``frame`` styled: A before / after and ΔA on the diverging scale, and every cell of a
    row whose advantage changes sign on :data:`FLIP_BACKGROUND` (its A cells keep their
    colour)."""
    styled = style_diverging(frame, ["A before", "A after", "ΔA"])
    if not hasattr(styled, "apply"):
        return styled
    rows = pd.Series(np.asarray(flips, dtype=bool), index=frame.index)

    def mark(column: pd.Series) -> list[str]:
        return [f"background-color: {FLIP_BACKGROUND}; color: #000; font-weight: 600"
                if rows[i] else "" for i in column.index]

    plain = [c for c in frame.columns if c not in ("A before", "A after", "ΔA")]
    return styled.apply(mark, subset=plain)


def changed_steps(result: WhatIf) -> tuple[pd.DataFrame, np.ndarray]:
    """The steps a what-if changes (:attr:`g2po.analysis.whatif.WhatIf.changed`: sign flips
    first, then the largest change) as shown: rollout, t, action, A before / after, ΔA, sign,
    node before → after, V before / after, TD error before / after, why; and their flips."""
    rows = result.changed
    short = short_ids(result.steps["traj_id"].astype(str))
    shown = pd.DataFrame({
        "rollout": rows["traj_id"].astype(str).map(short).to_numpy(),
        "t": rows["t"].to_numpy(),
        "action": rows["action"].map(lambda s: truncate(s, 40)).to_numpy(),
        "A before": rows["adv_before"].to_numpy(),
        "A after": rows["adv_after"].to_numpy(),
        "ΔA": rows["delta"].to_numpy(),
        "sign": np.where(rows["sign_flip"].to_numpy(), "flips", ""),
        "node": [f"{b} → {a}" for b, a in zip(rows["node_before"], rows["node_after"])],
        "V before": rows["value_before"].to_numpy(),
        "V after": rows["value_after"].to_numpy(),
        "TD before": rows["td_error_before"].to_numpy(),
        "TD after": rows["td_error_after"].to_numpy(),
        "why": rows["why"].to_numpy(),
    })
    return shown, rows["sign_flip"].to_numpy(dtype=bool)
