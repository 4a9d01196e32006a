"""State-merge diagnostics: how well the state key merged a group's steps into nodes.

Singleton nodes (seen once) give A^NC no reference set; near-duplicate keys that did not merge
are candidates for a looser state-key strategy, unless they name different objects
(``countertop 1`` / ``countertop 2``, ``fridge 1`` / ``drawer 1``: in ALFWorld and TextWorld an
object's number is part of its identity), which are listed last and never advised for merging;
the per-node value variance is the paper's "state-value variance" analysis (how much the
outcomes merged into one state disagree).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from g2po.analysis.state_graph import StateGraph
from g2po.estimators import estimate
from g2po.index import StepIndex, merge_rate
from g2po.outcomes import OutcomeRule
from g2po.params import DEFAULT_PARAMS, G2POParams

if TYPE_CHECKING:
    import scipy.sparse

__all__ = ["batch_metrics", "merge_stats", "near_duplicate_keys", "node_variances",
           "step_node_variances", "char_diff", "elide_equal", "object_refs",
           "object_difference", "COUNTER_WORDS"]

_NGRAM_BUCKETS = 1 << 18
#: Words followed by a number that count something rather than name an object ("step 12",
#: "turn 3", "score 10"): a key differing there is the step-counter case, where merging is
#: the right advice.
COUNTER_WORDS = frozenset(
    "step steps turn turns move moves round rounds time times t score scores point points "
    "attempt attempts try tries iteration iterations episode episodes day days hour hours "
    "minute minutes second seconds left remaining total level page".split())
_OBJECT_REF = re.compile(r"\b([A-Za-z][A-Za-z_-]*)\s+(\d{1,4})\b")


def object_refs(key: str) -> frozenset[str]:
    """The objects a state key names: each word followed by a number, ``countertop 1``,
    ``drawer 12`` (lower-cased; counter words such as ``step 3`` left out).

    >>> sorted(object_refs("On the Countertop 1, you see a apple 2. Step 7."))
    ['apple 2', 'countertop 1']
    """
    return frozenset(f"{word.lower()} {int(num)}" for word, num in _OBJECT_REF.findall(key)
                     if word.lower() not in COUNTER_WORDS)


def object_difference(key_a: str, key_b: str) -> str | None:
    """Why two keys are about different objects, or None: the objects only one of them
    names (``countertop 1 ≠ countertop 2``). Such keys are different states however
    similar their text, so merging them is never advised.

    >>> object_difference("You arrive at fridge 1.", "You arrive at drawer 1.")
    'different objects: fridge 1 ≠ drawer 1'
    >>> object_difference("Step 3: the kitchen", "Step 4: the kitchen") is None
    True
    """
    a, b = object_refs(key_a), object_refs(key_b)
    if a == b:
        return None
    only_a = sorted(a - b)
    only_b = sorted(b - a)
    shown_a = ", ".join(only_a[:3]) or "nothing"
    shown_b = ", ".join(only_b[:3]) or "nothing"
    return f"different objects: {shown_a} ≠ {shown_b}"


def merge_stats(graph: StateGraph) -> dict[str, float | int]:
    """Counts of one group's graph: steps, state nodes, singleton nodes and their share, the
    merge rate 1 − states/steps, and the largest node's visits."""
    states = graph.nodes[graph.nodes["kind"] == "state"]
    n_steps = len(graph.steps)
    n_states = len(states)
    singletons = int((states["visits"] == 1).sum())
    return {
        "steps": n_steps,
        "state_nodes": n_states,
        "singleton_nodes": singletons,
        "singleton_share": singletons / n_states if n_states else 0.0,
        "merge_rate": merge_rate(n_states, n_steps),
        "max_visits": int(states["visits"].max()) if n_states else 0,
    }


def _trigram_matrix(keys: list[str], max_chars: int) -> scipy.sparse.csr_matrix:
    """(n_keys, buckets) L2-normalised counts of hashed character trigrams; vectorised over
    all keys' bytes at once."""
    import scipy.sparse as sp  # deferred: only this page's similarity search needs scipy

    encoded = [k[:max_chars].encode("utf-8", "replace") for k in keys]
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.int64)
    owner = np.repeat(np.arange(len(keys)), lengths)
    if len(data) < 3:
        return sp.csr_matrix((len(keys), _NGRAM_BUCKETS))
    gram = (data[:-2] << 16) | (data[1:-1] << 8) | data[2:]
    same = (owner[:-2] == owner[2:])
    rows = owner[:-2][same]
    cols = (gram[same] * 2654435761) % _NGRAM_BUCKETS
    mat = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(keys), _NGRAM_BUCKETS))
    norms = np.sqrt(np.asarray(mat.multiply(mat).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.diags(1.0 / norms) @ mat


def near_duplicate_keys(
    graph: StateGraph,
    threshold: float = 0.9,
    max_pairs: int = 100,
    max_chars: int = 1000,
    max_checks: int = 600,
    progress: Callable[[float], None] | None = None,
) -> pd.DataFrame:
    """Pairs of state nodes whose keys are similar (difflib ratio ≥ ``threshold``) but did not
    merge, most similar first, at most ``max_pairs``; pairs whose keys name different objects
    (:func:`object_difference`: ``countertop 1`` / ``countertop 2``) come after all others,
    since merging them would join different states, with ``note`` saying why.

    Candidates come from the cosine similarity of hashed character trigrams (one sparse product,
    fast for thousands of nodes); the ``max_checks`` most similar candidates are confirmed with
    difflib's ratio on their first ``max_chars`` characters, the measure the ``similarity``
    state-key strategy merges by. Columns: node_a, node_b, similarity,
    visits_a, visits_b, key_a, key_b (whole keys), different_objects (bool), note (why not to
    merge them, else empty). ``progress`` is called with the share of the work done (0 … 1) as
    the confirmations run, for a progress bar.
    """
    states = graph.nodes[graph.nodes["kind"] == "state"]
    columns = ["node_a", "node_b", "similarity", "visits_a", "visits_b", "key_a", "key_b",
               "different_objects", "note"]
    if len(states) < 2:
        return pd.DataFrame(columns=columns)
    keys = states["canonical_key"].astype(str).tolist()
    ids = states.index.to_numpy(dtype=np.int64)
    visits = states["visits"].to_numpy(dtype=np.int64)
    mat = _trigram_matrix(keys, max_chars)
    sim = (mat @ mat.T).tocoo()
    upper = sim.row < sim.col
    cand_cut = max(0.0, threshold - 0.2)
    keep = upper & (sim.data >= cand_cut)
    rows, cols, cos = sim.row[keep], sim.col[keep], sim.data[keep]
    order = np.lexsort((cols, rows, -cos))[:max_checks]
    found = []
    every = max(1, len(order) // 50)
    for n, (i, j) in enumerate(zip(rows[order].tolist(), cols[order].tolist(), strict=True)):
        if progress is not None and n % every == 0:
            progress(n / len(order))
        a, b = keys[i][:max_chars], keys[j][:max_chars]
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
            continue
        ratio = matcher.ratio()
        if ratio >= threshold:
            why = object_difference(keys[i], keys[j])
            found.append((int(ids[i]), int(ids[j]), ratio, int(visits[i]), int(visits[j]),
                          keys[i], keys[j], why is not None, why or ""))
    if progress is not None:
        progress(1.0)
    out = pd.DataFrame(found, columns=columns).astype({"different_objects": bool})
    return out.sort_values(["different_objects", "similarity", "node_a", "node_b"],
                           ascending=[True, False, True, True]
                           ).head(max_pairs).reset_index(drop=True)


def char_diff(a: str, b: str, max_chars: int = 5000) -> list[tuple[str, str, str]]:
    """Where two state keys differ, character by character: difflib's opcodes as
    (tag, text of a, text of b), tag ``equal`` | ``replace`` | ``delete`` | ``insert``
    (``delete`` has no text of b, ``insert`` none of a). Joining the a-texts gives ``a``, the
    b-texts ``b`` (each cut at ``max_chars``; the cut tail is one last ``replace``).

    >>> char_diff("go north", "go south")
    [('equal', 'go ', 'go '), ('replace', 'n', 's'), ('equal', 'o', 'o'), ('replace', 'r', 'u'), \
('equal', 'th', 'th')]
    """
    head_a, head_b = a[:max_chars], b[:max_chars]
    matcher = difflib.SequenceMatcher(None, head_a, head_b, autojunk=False)
    ops = [(tag, head_a[i1:i2], head_b[j1:j2])
           for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    if len(a) > max_chars or len(b) > max_chars:
        ops.append(("replace", a[max_chars:], b[max_chars:]))
    return ops


def elide_equal(ops: list[tuple[str, str, str]], context: int = 40,
                marker: str = "…") -> list[tuple[str, str, str]]:
    """``ops`` from :func:`char_diff` with long equal runs cut to ``context`` characters on
    each side of a difference (``marker`` in the middle), so a long observation's small
    difference fits on screen."""
    out = []
    for k, (tag, x, y) in enumerate(ops):
        if tag != "equal" or len(x) <= 2 * context + len(marker):
            out.append((tag, x, y))
            continue
        left = x[:context] if k > 0 else ""
        right = x[-context:] if k < len(ops) - 1 else ""
        text = f"{left}{marker}{right}"
        out.append((tag, text, text))
    return out


def node_variances(graph: StateGraph, min_visits: int = 2) -> pd.DataFrame:
    """State nodes of one group with at least ``min_visits`` visits: node, visits, value,
    value_var (population variance of the step values merged there)."""
    states = graph.nodes[(graph.nodes["kind"] == "state") &
                         (graph.nodes["visits"] >= min_visits)]
    return states[["visits", "value", "value_var"]].rename_axis("node").reset_index()


def step_node_variances(steps: pd.DataFrame, min_visits: int = 2, *, rule: OutcomeRule,
                        params: G2POParams = DEFAULT_PARAMS) -> pd.DataFrame:
    """The same over every group of a training step, from one call of the G2PO estimator:
    group_id, visits, value, value_var per state node with at least ``min_visits`` visits.
    (Node values depend on γ, the state key and the rule only.)"""
    columns, ix = estimate(steps, "g2po", **params.g2po_kwargs(rule))
    frame = pd.DataFrame({
        "node": ix.node,
        "group_id": steps["group_id"].to_numpy(),
        "visits": columns["node_visits"],
        "value": columns["node_value"],
        "value_var": columns["node_value_var"],
    }).drop_duplicates("node")
    return frame[frame["visits"] >= min_visits].drop(columns="node").reset_index(drop=True)


def _stats(prefix: str, values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    return {f"{prefix}/mean": float(values.mean()), f"{prefix}/std": float(values.std()),
            f"{prefix}/min": float(values.min()), f"{prefix}/max": float(values.max())}


#: Advantage columns and the metric name of each.
_COMPONENTS = {"adv": "adv/total", "adv_ep": "adv/ep", "adv_nc": "adv/nc", "adv_ec": "adv/ec",
               "adv_step": "adv/step"}


def batch_metrics(ix: StepIndex, columns: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The G2PO diagnostics of one training batch (every group at once), as training metrics;
    both trainers log these.

    ``g2po/merge_rate``: 1 - nodes / steps, how much merging states compressed the batch;
    ``g2po/singleton_node_share``: share of nodes visited once (their node-centric term is 0);
    ``g2po/merged_step_share``: share of steps whose node holds another step too;
    ``g2po/nodes_per_group``, ``g2po/steps``, ``g2po/groups``, ``g2po/invalid_rate``;
    ``g2po/td_error_abs_mean`` (G2PO only); ``adv/<component>/{mean,std,min,max}`` for the
    total and each component the estimator returned (ep, nc, ec for G2PO; ep, step for GiGPO).
    """
    n_steps = ix.n_steps
    if n_steps == 0:
        return {}
    visits = np.bincount(ix.node, minlength=ix.n_nodes)
    metrics = {
        "g2po/steps": float(n_steps),
        "g2po/groups": float(ix.n_groups),
        "g2po/merge_rate": merge_rate(ix.n_nodes, n_steps),
        "g2po/singleton_node_share": float((visits == 1).mean()),
        "g2po/merged_step_share": float((visits[ix.node] > 1).mean()),
        "g2po/nodes_per_group": ix.n_nodes / ix.n_groups,
        "g2po/invalid_rate": float(ix.invalid.mean()),
    }
    if "td_error" in columns:
        metrics["g2po/td_error_abs_mean"] = float(np.abs(columns["td_error"]).mean())
    for column, prefix in _COMPONENTS.items():
        if column in columns:
            metrics.update(_stats(prefix, np.asarray(columns[column], dtype=np.float64)))
    return metrics
