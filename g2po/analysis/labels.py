"""Short names for state keys and ids: the place and objects that tell one state from the
others of its group, ids with the part that differs first, and a character diff of two keys
(why did these two states not merge?).

A group's keys often share most of their text (a room description, a prompt template); a label
made of the first characters says nothing, and the rarest word of a key is often a turn of
phrase ("You're", "superficially"). :func:`distinguishing_labels` starts from the key's
headline (its first line when short, e.g. TextWorld's ``-= Kitchen =-``: the place) and adds
the content words (no function words) that tell the key apart from the other keys with the
same headline (the objects, an open or closed door).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["node_names", "distinguishing_labels", "headline", "terse", "key_diff",
           "lead_with_difference", "cut_middle", "without_shared_parts", "natural_key",
           "STOPWORDS", "snap_to_zero", "snap_frame", "format_number", "ZERO_REL"]

_GAP = "…"

#: Up to this many keys sharing a headline, labels are chosen against every other such key
#: (a greedy hitting set); above it by word rarity alone (large drawings label nodes by id).
EXACT_LIMIT = 400
#: A first line (or first sentence) up to this long names the place; longer ones are text.
HEADLINE_LIMIT = 40
#: Function words, pronouns and contractions: never a label's word (they name nothing).
STOPWORDS = frozenset("""
a an the and or but nor so yet if then than that this these those there here where when
what which who whom whose why how of in on at to from by with without into onto upon over
under about above below between through during before after up down out off again further
once all any both each few more most other some such no not only own same too very can will
just should now is are was were be been being have has had having do does did doing would
could might must shall may i me my myself we our ours you your yours yourself he him his she
her hers it its itself they them their what's that's there's here's it's you're you've you'll
i'm i've we're they're isn't aren't wasn't weren't don't doesn't didn't can't won't let's
also well still even ever never really quite rather like as see look looks seem seems going
get got go one thing things kind sort bit lot contains contain carrying carry appears
notice make find
""".split())
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def headline(key: str, limit: int = HEADLINE_LIMIT) -> str:
    """The key's first non-empty line without its decoration (``-= Kitchen =-`` → ``Kitchen``),
    or that line's first sentence, when at most ``limit`` characters; else ``""``. Its leading
    function words go (``You are in the middle of a room`` → ``middle of a room``): they
    begin half the sentences of a text game and tell no state from another.

    Examples
    --------
    >>> headline("-= Kitchen =-\\nYou are in a kitchen.")
    'Kitchen'
    >>> headline("You arrive at drawer 1. The drawer 1 is closed.")
    'arrive at drawer 1'
    >>> headline("You are in the middle of a room. Looking quickly around you, you see a bed 1.")
    'middle of a room'
    """
    first = next((line for line in str(key).splitlines() if line.strip()), "")
    for text in (first, _SENTENCE.split(first.strip(), maxsplit=1)[0]):
        text = _EDGE_PUNCT.sub("", text.strip())
        if text and len(text) <= limit:
            return _without_lead(text)
    return ""


def _without_lead(text: str) -> str:
    """``text`` without its leading function words (:data:`STOPWORDS`), unless none of its
    words would be left."""
    words = text.split()
    lead = 0
    while lead < len(words) - 1 and _word(words[lead]) in STOPWORDS:
        lead += 1
    return " ".join(words[lead:]) if lead else text


def terse(label: str) -> str:
    """A label of :func:`distinguishing_labels` without its function words, the separators
    kept: the short form a zoomed-out drawing fits beside a node.

    Examples
    --------
    >>> terse("arrive at drawer 3 · closed")
    'arrive drawer 3 · closed'
    >>> terse("middle of a room")
    'middle room'
    """
    kept = [t for t in str(label).split() if t in ("·", _GAP) or _word(t) not in STOPWORDS
            or not _word(t)]
    out: list[str] = []
    for token in kept:
        if token == "·" and (not out or out[-1] == "·"):
            continue
        out.append(token)
    while out and out[-1] == "·":
        out.pop()
    return " ".join(out) or str(label)


def _word(token: str) -> str:
    """A word as compared: lower case, without surrounding punctuation."""
    return _EDGE_PUNCT.sub("", token).lower()


def _content(word: str) -> bool:
    return bool(word) and word not in STOPWORDS and any(c.isalnum() for c in word) and \
        (len(word) > 1 or word.isdigit())


def distinguishing_labels(keys: Sequence[str], limit: int = 28, *,
                          headlines: bool = True) -> list[str]:
    """One label per key (same order): its headline (:func:`headline`; left out when every
    key has the same one, or without ``headlines``), then up to about ``limit`` characters of
    its content words that tell it apart from the other keys with that headline, kept in
    their order (``…`` where words were left out), without surrounding punctuation.

    A state key's first line names its place (TextWorld's ``-= Kitchen =-``); a task's first
    sentence is a greeting ("Welcome to TextWorld!"): task labels are made without
    ``headlines``, every word chosen against every other task.

    Words are chosen greedily: each next word is the one absent from the most keys not yet
    told apart (so after the rarest word come the words that separate the key from its
    near-duplicates, such as an inventory item). Function words (:data:`STOPWORDS`) and words
    every key shares never appear unless a key has nothing else.

    Examples
    --------
    >>> distinguishing_labels(["-= Kitchen =-\\nYou carry a knife.",
    ...                        "-= Kitchen =-\\nYou carry nothing.",
    ...                        "-= Garden =-\\nYou carry a knife."])
    ['Kitchen · knife', 'Kitchen · nothing', 'Garden']
    >>> distinguishing_labels(["Welcome! Take the coin from the sauna.",
    ...                        "Welcome! Take the coin from the attic."], headlines=False)
    ['sauna', 'attic']
    """
    keys = [str(k) for k in keys]
    n = len(keys)
    heads = [headline(k) if headlines else "" for k in keys]
    if n > 1 and len(set(heads)) == 1:
        heads = [""] * n  # a template line every key shares names nothing
    tokens: list[list[str]] = []
    for key, head in zip(keys, heads, strict=True):
        body = key
        if head:  # the headline is shown already: its words tell nothing more
            start = key.find(head)
            body = key[:start] + key[start + len(head):] if start >= 0 else key
        tokens.append(body.split())
    words = [[_word(t) for t in ts] for ts in tokens]
    common = set.intersection(*(set(ws) for ws in words)) if n > 1 else set()
    usable = [[_content(w) and w not in common for w in ws] for ws in words]
    peers: dict[str, list[int]] = {}
    for i, head in enumerate(heads):
        peers.setdefault(head, []).append(i)
    chosen: dict[int, set[int]] = {}
    for head, members in peers.items():
        budget = max(limit - len(head) - 3, limit // 2) if head else limit
        chosen.update(_choose(words, usable, members, budget, named=bool(head)))
    return [_render(heads[i], tokens[i], _with_nouns(tokens[i], words[i], chosen[i], limit),
                    limit) for i in range(n)]


def _with_nouns(tokens: list[str], words: list[str], chosen: set[int], limit: int) -> set[int]:
    """``chosen`` plus, after a picked word that ends no phrase (``purple`` of ``purple
    potato``), the content word that follows it, while the label stays within ``limit``."""
    out = set(chosen)
    length = sum(len(words[i]) + 1 for i in out)
    for i in sorted(chosen):
        j = i + 1
        if j in out or j >= len(tokens) or not _content(words[j]) or \
                _EDGE_PUNCT.sub("", tokens[i]) != tokens[i]:
            continue
        if length + len(words[j]) + 1 > limit:
            break
        out.add(j)
        length += len(words[j]) + 1
    return out


def _choose(words: list[list[str]], usable: list[list[bool]], members: list[int],
            limit: int, named: bool) -> dict[int, set[int]]:
    """Per key of ``members`` (keys with one headline), the positions of its words picked to
    tell it from the other ``members``: greedily (most keys told apart; among equals the
    rarer, then the longer, then the earlier word), or by rarity alone above
    :data:`EXACT_LIMIT` keys. A key alone under a headline (``named``) needs no word."""
    if named and len(members) == 1:
        return {members[0]: set()}
    vocab: dict[str, int] = {}
    for i in members:
        for w in words[i]:
            vocab.setdefault(w, len(vocab))
    has = np.zeros((len(members), len(vocab)), dtype=bool)
    for row, i in enumerate(members):
        has[row, [vocab[w] for w in words[i]]] = True
    df = has.sum(axis=0)
    out: dict[int, set[int]] = {}
    for row, i in enumerate(members):
        ok = np.array(usable[i], dtype=bool)
        if not ok.any():  # nothing but function words or shared words: any word of its own
            ok = np.array([bool(w) for w in words[i]], dtype=bool)
        positions = np.flatnonzero(ok)
        if not len(positions):
            out[i] = set()
            continue
        ids = np.array([vocab[words[i][p]] for p in positions])
        lengths = np.array([len(words[i][p]) + 1 for p in positions])
        repeated = np.ones(len(ids), dtype=bool)  # a word twice in the key counts once
        repeated[np.unique(ids, return_index=True)[1]] = False
        picked: list[int] = []
        length = 0
        if 1 < len(members) <= EXACT_LIMIT:
            open_ = np.ones(len(members), dtype=bool)
            open_[row] = False
            while open_.any():
                gain = (~has[open_][:, ids]).sum(axis=0)
                gain[repeated] = -1
                gain[picked] = -1
                best = int(np.lexsort((np.arange(len(ids)), -lengths, df[ids], -gain))[0])
                if gain[best] <= 0 or (picked and length + lengths[best] > limit):
                    break
                picked.append(best)
                length += int(lengths[best])
                open_ &= has[:, ids[best]]
        else:  # one key in all, or too many to compare: its rarest words, in budget
            for best in np.lexsort((np.arange(len(ids)), df[ids])):
                if repeated[best] or (picked and length + lengths[best] > limit):
                    continue
                picked.append(int(best))
                length += int(lengths[best])
        out[i] = {int(positions[p]) for p in picked}
    return out


def _render(head: str, tokens: list[str], chosen: set[int], limit: int) -> str:
    parts: list[str] = []
    previous = None
    for i in sorted(chosen):
        if previous is not None and i != previous + 1:
            parts.append(_GAP)
        parts.append(_EDGE_PUNCT.sub("", tokens[i]) or tokens[i])
        previous = i
    text = " ".join(parts)
    if len(text) > limit + 12:
        text = text[: limit + 11] + _GAP
    if head:
        head = head if len(head) <= 24 else head[:23] + _GAP
        return f"{head} · {text}" if text else head
    return text


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


_SEPARATORS = "-_:/.|@#= "
_PART_SEPARATORS = _SEPARATORS.replace("_", "").replace(" ", "")


def lead_with_difference(texts: Sequence[str], limit: int = 16, head: int = 6
                         ) -> tuple[list[str], str]:
    """Ids by what tells them apart: each without the prefix every id shares (cut back to a
    separator, and one segment further when only a number would be left, so ``s1:0`` keeps
    its ``s1:``), cut in the middle to ``limit`` characters (its first ``head`` and its end)
    unless that makes two alike; and the shared prefix. Ids sharing nothing come back whole
    (cut to ``limit``) with an empty prefix; one id alone keeps its end (``…-train-s7``: what
    tells a task from the others is usually its last part).

    Examples
    --------
    >>> lead_with_difference(["cooking-recipe3-take2-train-s0", "cooking-recipe3-take2-train-s1"])
    (['s0', 's1'], 'cooking-recipe3-take2-train-')
    >>> lead_with_difference(["cooking-train-s1:0", "cooking-train-s1:10"])[0]
    ['s1:0', 's1:10']
    >>> lead_with_difference(["cooking-recipe3-take2-train-s7"], limit=10)
    (['…-train-s7'], '')
    """
    texts = [str(t) for t in texts]
    cut = 0
    if len(set(texts)) > 1:
        common = os.path.commonprefix(texts)
        cut = max((i + 1 for i, ch in enumerate(common) if ch in _SEPARATORS), default=0)
        if all(t[cut:].isdigit() for t in texts if t[cut:]):
            cut = max((i + 1 for i, ch in enumerate(common[:max(cut - 1, 0)])
                       if ch in _SEPARATORS), default=0)
    parts = [t[cut:] or t for t in texts]
    if len(set(texts)) == 1:
        head = 0
    short = [cut_middle(p, limit, head) for p in parts]
    if len(set(short)) < len(set(parts)):  # cutting made two alike: keep them whole
        short = parts
    return short, texts[0][:cut] if texts else ""


def without_shared_parts(names: Sequence[str]) -> list[str]:
    """``names`` without the parts (between separators: ``-``, ``:``, ``/`` …; ``_`` joins
    the words of one part) that every one of them has, each with the separator before it:
    what all share tells none apart (verl's ALFWorld ``gts`` all carry a ``None``). A name
    left empty, or alone, stays whole.

    >>> without_shared_parts(["pick_and_place-Mug-None-Fridge-12",
    ...                       "look_at_obj_in_light-Pan-None-Drawer-36"])
    ['pick_and_place-Mug-Fridge-12', 'look_at_obj_in_light-Pan-Drawer-36']
    """
    if len(names) < 2:
        return [str(n) for n in names]
    split = [re.split(f"([{re.escape(_PART_SEPARATORS)}])", str(n)) for n in names]
    shared = set.intersection(*(set(parts[::2]) - {""} for parts in split))
    out = []
    for name, parts in zip(names, split, strict=True):
        kept = [parts[0]] if parts[0] not in shared else []
        for sep, part in zip(parts[1::2], parts[2::2], strict=True):
            if part not in shared:
                kept += [sep, part] if kept else [part]
        out.append("".join(kept) or str(name))
    return out


def cut_middle(text: str, limit: int, head: int = 6) -> str:
    """``text`` within ``limit`` characters: its first ``head`` and its end, ``…`` between
    (names such as ids and verl's task names differ at the end, and their start says their
    kind).

    >>> cut_middle("pick_two_obj_and_place-Potato-None-Fridge-209", 24)
    'pick_t…o-None-Fridge-209'
    >>> cut_middle("short", 24)
    'short'
    """
    if len(text) <= limit:
        return text
    return text[:head] + _GAP + text[len(text) - (limit - head - 1):]


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


def node_names(nodes: pd.DataFrame) -> pd.Series:
    """Node id → the name the drawn graph gives it, for every table that names nodes: a
    state's number, a terminal's kind (``success``, ``failure``, ``truncated``).

    ``nodes``: a state graph's node table (indexed by node id, with a ``kind`` column).

    Examples
    --------
    >>> import pandas as pd
    >>> node_names(pd.DataFrame({"kind": ["state", "truncated"]}, index=[0, 12])).tolist()
    ['0', 'truncated']
    """
    kind = nodes["kind"].astype(str).to_numpy()
    return pd.Series(np.where(kind == "state", nodes.index.astype(str), kind),
                     index=nodes.index, dtype=object)
