"""State-key strategies: which observations count as the same state and merge into one node.

A strategy is a plain function ``(keys, groups) -> keys``: ``keys`` is the ``state_key`` column
(n_steps,) of str, ``groups`` (n_steps,) int64 says which group each step belongs to (merging never
crosses groups). It returns the canonical key of each step, (n_steps,) array-like. Pass any such
function as ``state_key=`` to :func:`g2po.compute_advantages` to replace the built-in ones.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

import numpy as np
import pandas as pd

from g2po.errors import UnknownStateKeyError, UserPatternError
from g2po.user_regex import compile_user_pattern

__all__ = [
    "StateKeyFn",
    "exact",
    "normalized",
    "regex",
    "similarity",
    "resolve_state_key",
    "STATE_KEY_STRATEGIES",
]

StateKeyFn = Callable[[pd.Series, np.ndarray], "np.ndarray | pd.Series"]


def exact(keys: pd.Series, groups: np.ndarray) -> pd.Series:
    """The paper's rule: identical anchor observations merge, nothing else does."""
    return keys


def normalized(keys: pd.Series, groups: np.ndarray) -> pd.Series:
    """Merge keys that differ only in case or whitespace (trailing blanks, wrapped lines)."""
    return keys.str.lower().str.replace(r"\s+", " ", regex=True).str.strip()


def regex(pattern: str) -> StateKeyFn:
    """A strategy keeping only what ``pattern`` extracts: its first group, or the whole match.

    Keys the pattern does not match stay as they are, so no step loses its state. The pattern
    is the user's: it runs with a time limit per key (:mod:`g2po.user_regex`), so one that
    backtracks catastrophically raises :class:`g2po.errors.UserPatternError` instead of
    hanging; each distinct key is matched once.

    >>> import pandas as pd, numpy as np
    >>> keys = pd.Series(["Room: Kitchen. Feedback: ok", "Room: Kitchen. Feedback: no"])
    >>> list(regex(r"Room: (\\w+)")(keys, np.zeros(2, dtype=np.int64)))
    ['Kitchen', 'Kitchen']
    """
    compiled = compile_user_pattern(pattern, "state-key regex")
    if compiled.groups > 1:
        raise UserPatternError(f"state-key regex {pattern!r} must have at most one capture "
                               f"group, it has {compiled.groups}")
    group = 1 if compiled.groups else 0

    def extract(keys: pd.Series, groups: np.ndarray) -> pd.Series:
        canonical = {}
        for key in pd.unique(keys.to_numpy(dtype=object)):
            found = compiled.search(key) if isinstance(key, str) else None
            value = found.group(group) if found is not None else None
            canonical[key] = key if value is None else value
        return keys.map(canonical)

    extract.__name__ = f"regex({pattern!r})"
    return extract


def similarity(threshold: float = 0.95) -> StateKeyFn:
    """GiGPO's similarity grouping, verl-agent's ``are_similar`` rule: a key joins the first
    representative ``rep`` of its group with ``SequenceMatcher(None, key, rep).ratio() >=
    threshold`` (difflib's default autojunk), else it becomes a representative itself.

    Keys are met in the order the strategy receives them; :func:`g2po.index.index_steps` passes
    them trajectory by trajectory, each in step order, so the result does not depend on the
    table's row order. Quadratic in the distinct keys of a group: meant for rollout groups.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"similarity threshold must be in (0, 1], got {threshold}")

    def merge(keys: pd.Series, groups: np.ndarray) -> np.ndarray:
        pairs = pd.DataFrame({"g": np.asarray(groups), "k": keys.to_numpy(dtype=object)})
        canonical: dict[tuple[int, str], str] = {}
        for g, sub in pairs.drop_duplicates().groupby("g", sort=False):
            # One matcher per representative: difflib caches the analysis of its second
            # sequence (the representative, as in are_similar(obs, rep)).
            reps: list[tuple[str, difflib.SequenceMatcher]] = []
            for key in sub["k"]:
                found = key
                for rep, matcher in reps:
                    matcher.set_seq1(key)
                    # real_quick_ratio and quick_ratio are upper bounds of ratio: exact filters.
                    if (matcher.real_quick_ratio() >= threshold
                            and matcher.quick_ratio() >= threshold
                            and matcher.ratio() >= threshold):
                        found = rep
                        break
                else:
                    reps.append((key, difflib.SequenceMatcher(None, "", key)))
                canonical[(g, key)] = found
        lookup = pd.Series(canonical, dtype=object)
        return lookup.reindex(pd.MultiIndex.from_frame(pairs)).to_numpy(dtype=object)

    merge.__name__ = f"similarity({threshold})"
    return merge


STATE_KEY_STRATEGIES: dict[str, Callable[..., StateKeyFn] | StateKeyFn] = {
    "exact": exact,
    "normalized": normalized,
}


def resolve_state_key(spec: str | StateKeyFn | None) -> StateKeyFn:
    """Turn ``"exact"``, ``"normalized"``, ``"regex:PATTERN"``, ``"similarity[:0.95]"`` or a
    function into a strategy function."""
    if spec is None:
        return exact
    if callable(spec):
        return spec
    name, _, arg = spec.partition(":")
    if name == "regex":
        if not arg:
            raise UnknownStateKeyError(
                "state-key strategy 'regex' needs a pattern: 'regex:PATTERN'"
            )
        return regex(arg)
    if name == "similarity":
        try:
            threshold = float(arg) if arg else 0.95
        except ValueError:
            raise ValueError(f"similarity threshold must be a number in (0, 1], got {arg!r}"
                             ) from None
        return similarity(threshold)
    if name in STATE_KEY_STRATEGIES and not arg:
        return STATE_KEY_STRATEGIES[name]  # type: ignore[return-value]
    known = ", ".join([*STATE_KEY_STRATEGIES, "regex:PATTERN", "similarity[:THRESHOLD]"])
    raise UnknownStateKeyError(f"unknown state-key strategy {spec!r}; known: {known}")
