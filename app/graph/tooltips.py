"""The state graph's hover texts, as plain text: the page puts them into the DOM with
``textContent``, so text from a log never becomes markup."""

from __future__ import annotations

from app.safe import truncate

__all__ = ["node_tooltip", "edge_tooltip"]

_ADV_NAMES = (("adv", "A"), ("adv_ep", "A^EP"), ("adv_nc", "A^NC"), ("adv_ec", "A^EC"))


def node_tooltip(node_id: int, row: dict, text_limit: int = 800) -> str:
    """Plain-text hover text of a node (``row``: one record of ``StateGraph.nodes``): kind,
    visits, value, value variance, the state key's distinguishing words and the observation."""
    kind = row["kind"]
    head = f"node {node_id}" + (" (start)" if row["is_start"] else "")
    if kind != "state":
        head = f"terminal: {kind}"
    lines = [
        head,
        f"visits {int(row['visits'])}   V {row['value']:.4g}   Var {row['value_var']:.4g}",
    ]
    if kind == "truncated":
        lines.append("episodes cut at the step limit; valued as failure by the estimator")
    if kind == "state":
        text = str(row.get("observation", row["label"]))
        if len(text) > text_limit:
            text = text[:text_limit] + "…"
        lines += [f"key: {row['label']}", "", text]
    return "\n".join(lines)


def edge_tooltip(row: dict) -> str:
    """Plain-text hover text of an edge (``row``: one record of ``StateGraph.edges``):
    endpoints, action, count, TD error, success share and the mean advantages of its steps."""
    invalid = int(row["invalid"])
    lines = [
        f"node {int(row['source'])} → node {int(row['target'])}",
        f"action: {truncate(row['action'], 300)}",
        f"count {int(row['count'])}" + (f" ({invalid} invalid)" if invalid else ""),
        f"TD error {row['td_error']:.4g}",
    ]
    if "success_share" in row:
        lines.append(f"successful trajectories {row['success_share']:.0%}")
    parts = [f"{name} {row[col]:.3g}" for col, name in _ADV_NAMES if col in row]
    if parts:
        lines.append("mean " + "   ".join(parts))
    return "\n".join(lines)
