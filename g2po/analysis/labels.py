"""Short names for state keys: the words that tell one key apart from the others of its group,
and a character diff of two keys (why did these two states not merge?).

A group's keys often share most of their text (a room description, a prompt template); a label
made of the first characters says nothing. :func:`distinguishing_labels` keeps, in their order,
the words of a key that occur in the fewest other keys of the group, up to a length limit.
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["distinguishing_labels", "key_diff", "shorten_middle", "natural_key",
           "snap_to_zero", "snap_frame", "format_number", "ZERO_REL"]

_GAP = "…"


#: Up to this many keys, labels are chosen against every other key (a greedy hitting set);
#: above it by word rarity alone (large drawings label nodes by id anyway).
EXACT_LIMIT = 400


def distinguishing_labels(keys: Sequence[str], limit: int = 28) -> list[str]:
    """One label per key (same order): words of the key that tell it apart from the group's
    other keys, kept in their original order, ``…`` where words were left out, at most about
    ``limit`` characters.

    Words are chosen greedily: each next word is the one absent from the most keys not yet
    told apart (so after the rarest word come the words that separate the key from its
    near-duplicates, such as an inventory item). Words shared by every key never appear unless
    a key has nothing else.

    Examples
    --------
    >>> distinguishing_labels(["You are in the kitchen. You carry a knife.",
    ...                        "You are in the kitchen. You carry nothing."])
    ['… knife.', '… nothing.']
    """
    words = [str(k).split() for k in keys]
    n = len(words)
    df = Counter()
    for ws in words:
        df.update(set(ws))
    exact = 1 < n <= EXACT_LIMIT
    if exact:
        chosen = _hitting_sets(words, limit)
        labels = [_render(ws, chosen[i], limit) for i, ws in enumerate(words)]
    else:
        labels = [_label(ws, df, limit, n) for ws in words]
    seen: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        seen.setdefault(label, []).append(i)
    clashing = [i for idx in seen.values() if len(idx) > 1 for i in idx]
    if clashing:  # more words for the keys that still look alike
        longer = _hitting_sets(words, limit * 2, only=clashing) if exact else {}
        for i in clashing:
            labels[i] = _render(words[i], longer[i], limit * 2) if exact else \
                _label(words[i], df, limit * 2, n)
    return labels


def _hitting_sets(words: list[list[str]], limit: int,
                  only: list[int] | None = None) -> dict[int, set[int]]:
    """Per key (of ``only``, default all), the positions of the words picked greedily to tell
    it from the other keys."""
    vocab: dict[str, int] = {}
    for ws in words:
        for w in ws:
            vocab.setdefault(w, len(vocab))
    n = len(words)
    has = np.zeros((n, len(vocab)), dtype=bool)
    for i, ws in enumerate(words):
        has[i, [vocab[w] for w in ws]] = True
    df = has.sum(axis=0)
    out: dict[int, set[int]] = {}
    for i in range(n) if only is None else only:
        ws = words[i]
        if not ws:
            out[i] = set()
            continue
        ids = np.array([vocab[w] for w in ws])
        lengths = np.array([len(w) + 1 for w in ws])
        open_ = np.ones(n, dtype=bool)
        open_[i] = False
        picked: set[int] = set()
        length = 0
        while open_.any():
            gain = (~has[open_][:, ids]).sum(axis=0)
            gain[list(picked)] = -1
            # most keys told apart; among equals the rarer, then the longer, then earlier word
            best = int(np.lexsort((np.arange(len(ids)), -lengths, df[ids], -gain))[0])
            if gain[best] <= 0 or (picked and length + lengths[best] > limit):
                break
            picked.add(best)
            length += int(lengths[best])
            open_ &= has[:, ids[best]]
        out[i] = picked or {0}
    return out


def _render(words: list[str], chosen: set[int], limit: int) -> str:
    parts: list[str] = []
    previous = -1
    for i in sorted(chosen):
        if i != previous + 1:
            parts.append(_GAP)
        parts.append(words[i])
        previous = i
    if words and previous != len(words) - 1:
        parts.append(_GAP)
    text = " ".join(parts)
    return text if len(text) <= limit + 12 else text[: limit + 11] + _GAP


def _label(words: list[str], df: Counter, limit: int, n: int) -> str:
    if not words:
        return ""
    # rarest first, earlier first among equals; take words until the limit is reached
    order = sorted(range(len(words)), key=lambda i: (df[words[i]], i))
    if n > 1 and df[words[order[0]]] < n:  # words every key has tell nothing apart
        order = [i for i in order if df[words[i]] < n]
    chosen: set[int] = set()
    length = 0
    for i in order:
        if chosen and length + len(words[i]) + 1 > limit:
            break
        chosen.add(i)
        length += len(words[i]) + 1
    return _render(words, chosen, limit)


def key_diff(a: str, b: str) -> list[tuple[str, str]]:
    """A character diff of two state keys as (op, text) segments, op one of ``equal`` (in
    both), ``delete`` (only in ``a``) and ``insert`` (only in ``b``); joining the ``equal`` and
    ``delete`` texts gives ``a``, the ``equal`` and ``insert`` texts give ``b``.

    Examples
    --------
    >>> key_diff("room 12", "room 13")
    [('equal', 'room 1'), ('delete', '2'), ('insert', '3')]
    """
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(("equal", a[i1:i2]))
            continue
        if i2 > i1:
            out.append(("delete", a[i1:i2]))
        if j2 > j1:
            out.append(("insert", b[j1:j2]))
    return out


def shorten_middle(texts: Sequence[str], limit: int = 24, head: int = 8) -> list[str]:
    """Ids cut in the middle, keeping their first ``head`` characters and the end, where the
    ids of one group differ (their common prefix is what gets cut); ids of at most ``limit``
    characters stay whole. The end is kept whole when it is what tells two ids apart.

    Examples
    --------
    >>> shorten_middle(["cooking-recipe3-take2-go9-open-s0:2",
    ...                 "cooking-recipe3-take2-go9-open-s1:10"], 20)
    ['cooking-…9-open-s0:2', 'cooking-…-open-s1:10']
    """
    texts = [str(t) for t in texts]
    prefix = len(os.path.commonprefix(texts)) if len(texts) > 1 else 0
    out = []
    for s in texts:
        if len(s) <= limit:
            out.append(s)
            continue
        tail = max(limit - head - 1, min(len(s) - prefix, 3 * limit))
        out.append(s if head + 1 + tail >= len(s) else s[:head] + _GAP + s[-tail:])
    return out


def natural_key(text: str) -> tuple:
    """Sort key that orders numbers inside ids by value: ``s0:2`` before ``s0:10``.

    Examples
    --------
    >>> sorted(["s0:10", "s0:2", "s1:1"], key=natural_key)
    ['s0:2', 's0:10', 's1:1']
    """
    parts: list[tuple[int, object]] = []
    number = ""
    word = ""
    for ch in str(text):
        if ch.isdigit():
            if word:
                parts.append((1, word))
                word = ""
            number += ch
        else:
            if number:
                parts.append((0, int(number)))
                number = ""
            word += ch
    if number:
        parts.append((0, int(number)))
    if word:
        parts.append((1, word))
    return tuple(parts)


#: Values smaller than this fraction of their scale (at least 1) are floating-point noise.
ZERO_REL = 1e-9


def snap_to_zero(values: np.ndarray, scale: float | None = None) -> np.ndarray:
    """``values`` with floating-point noise set to 0: a mean of advantages that cancel, or
    a value difference of equal values, comes out as -3e-16, which a page should show as 0.
    Noise is anything under :data:`ZERO_REL` × ``scale`` (default: the largest magnitude
    among ``values``, at least 1).

    >>> snap_to_zero(np.array([-3e-16, 0.25, 1e-3])).tolist()
    [0.0, 0.25, 0.001]
    """
    values = np.array(values, dtype=np.float64)
    if scale is None:
        finite = np.abs(values[np.isfinite(values)])
        scale = float(finite.max()) if finite.size else 1.0
    values[np.abs(values) < ZERO_REL * max(1.0, float(scale))] = 0.0
    return values


def snap_frame(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A copy of ``frame`` with :func:`snap_to_zero` applied to each float column (of
    ``columns``, default all), each on its own scale."""
    out = frame.copy()
    for column in columns if columns is not None else out.columns:
        if column in out.columns and pd.api.types.is_float_dtype(out[column].dtype):
            out[column] = snap_to_zero(out[column].to_numpy())
    return out


def format_number(value: float, digits: int = 3) -> str:
    """A number for a headline: ``digits`` significant digits, noise shown as 0 (never
    ``-3e-16`` or ``-0``), NaN as a dash.

    >>> [format_number(v) for v in (-3e-16, 2.5, -0.0, float("nan"), 1234.5)]
    ['0', '2.5', '0', '–', '1.23e+03']
    """
    if value is None or not np.isfinite(value):
        return "–"
    snapped = float(snap_to_zero(np.array([value]), scale=1.0)[0]) + 0.0  # + 0.0: no -0
    return f"{snapped:.{digits}g}"
