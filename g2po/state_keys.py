"""State-key strategies: which observations count as the same state and merge into one node.

A strategy is a plain function ``(keys, groups) -> keys``: ``keys`` is the ``state_key`` column
(n_steps,) of str, ``groups`` (n_steps,) int64 says which group each step belongs to (merging never
crosses groups). It returns the canonical key of each step, (n_steps,) array-like. Pass any such
function as ``state_key=`` to :func:`g2po.compute_advantages` to replace the built-in ones.

A :class:`TrajectoryStrategy` instead builds each step's key from other columns of its
trajectory, read in step order: :data:`alfworld` is G2PO's own ALFWorld anchor (the observation
plus the admissible actions, :class:`AlfworldAnchor`), for logs that record the admissible
actions. :func:`apply_strategy` runs either kind (:func:`g2po.index.index_steps` calls it).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from g2po.agent_format import ADMISSIBLE_MARK, admissible_actions, read_action_list
from g2po.errors import StepTableError, UnknownStateKeyError, UserPatternError
from g2po.user_regex import compile_user_pattern

__all__ = [
    "StateKeyFn",
    "exact",
    "normalized",
    "regex",
    "similarity",
    "alfworld",
    "AlfworldAnchor",
    "TrajectoryStrategy",
    "apply_strategy",
    "resolve_state_key",
    "strategy_names",
    "strategy_columns",
    "distinct_key_codes",
    "VALUE_WISE",
    "STATE_KEY_STRATEGIES",
    "INVISIBLE_EFFECTS",
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


#: Observations after which G2PO's ALFWorld anchor also carries the next observation: the
#: object's new condition (heated, cooled, cleaned, lamp on) shows in no later text.
INVISIBLE_EFFECTS = ("You heat", "You cool", "You clean", "You turn on")
_NOTHING_HAPPENS = "Nothing happens"
#: What stands for the first prompt in the keys of :data:`alfworld` (see there).
FIRST_PROMPT = "[the first prompt] "


class AlfworldAnchor:
    """G2PO's ALFWorld anchor over one episode, by the rules of the authors' environment
    manager (Nala-YN/G2PO ``agent_system/environments/env_manager.py``): each state is its
    observation followed by its admissible actions (:meth:`entry`); an observation starting
    "Nothing happens" adds no state, so the key stays the latest state's; when the state
    before the latest starts "You heat/cool/clean/turn on" (:data:`INVISIBLE_EFFECTS`), the
    key joins the two, so a heated mug's state differs from the cold one's even where the text
    reads alike.

    ``reset_key`` is the key before any step; ``first_state`` the first entry of the history
    those rules read. The authors' code starts with the raw first observation as the key (no
    action list) and the whole first prompt as the history (:meth:`authors`), so a "Nothing
    happens." on the first step keys on that prompt: a state of its own.

    >>> a = AlfworldAnchor.authors("You are in a room.")
    >>> a.key
    'You are in a room.'
    >>> a.step("Nothing happens.", ["look"])
    '[the first prompt] You are in a room.'
    >>> _ = a.step("You heat the mug 1 using the microwave 1.", ["look", "help"])
    >>> a.step("Nothing happens.", ["look"]).splitlines()
    ['You heat the mug 1 using the microwave 1.', 'Admissible actions:', " 'look'"]
    >>> a.step("You arrive at shelf 1.", ["look"]).splitlines()[3]
    ' You arrive at shelf 1.'
    """

    __slots__ = ("_reset_key", "_states", "_stepped")

    def __init__(self, reset_key: str, first_state: str) -> None:
        self._reset_key = reset_key
        self._states = [first_state]
        self._stepped = False

    @classmethod
    def authors(cls, observation: str) -> AlfworldAnchor:
        """The authors' start: the first observation alone is the key, and the first prompt
        (here :data:`FIRST_PROMPT` and that observation) heads the history."""
        return cls(observation, FIRST_PROMPT + observation)

    @staticmethod
    def entry(observation: str, admissible: Sequence[str]) -> str:
        """One state's text: the observation, then its admissible actions as the authors
        join them ("help" left out)."""
        actions = "\n ".join(f"'{a}'" for a in admissible if a != "help")
        return f"{observation}\nAdmissible actions:\n {actions}\n"

    @property
    def key(self) -> str:
        """The current state's key."""
        if not self._stepped:
            return self._reset_key
        states = self._states
        if len(states) >= 2 and states[-2].startswith(INVISIBLE_EFFECTS):
            return " ".join(states[-2:])
        return states[-1]

    def step(self, observation: str, admissible: Sequence[str]) -> str:
        """The key after a step that answered ``observation`` with ``admissible`` actions."""
        self._stepped = True
        if not observation.startswith(_NOTHING_HAPPENS):
            self._states.append(self.entry(observation, admissible))
        return self.key


class TrajectoryStrategy:
    """A state-key strategy that reads whole trajectories: ``keys_of(rows, first)`` gets the
    rows (the table's ``columns`` it uses, in trajectory order: trajectory by trajectory, each
    in step order; ``first`` (n,) bool marks each trajectory's first step) and returns each
    row's key. Called as a plain strategy on keys alone, it says what it needs instead."""

    def __init__(self, name: str, keys_of: Callable[[pd.DataFrame, np.ndarray], Sequence[str]],
                 columns: tuple[str, ...], needs: str) -> None:
        self.__name__ = name
        self.keys_of = keys_of
        self.columns = columns
        self.needs = needs

    def __call__(self, keys: pd.Series, groups: np.ndarray) -> pd.Series:
        raise StepTableError([f"state key {self.__name__!r} builds each key from the "
                              f"trajectory's {self.needs}, not from the state keys alone: pass "
                              "the step table (g2po.estimators.estimate, index_steps)"])

    def __repr__(self) -> str:
        return f"<state-key strategy {self.__name__}>"


def _row_names(labels: pd.Index, limit: int = 8) -> str:
    shown = ", ".join(str(label) for label in labels[:limit])
    return shown + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def _listed_actions(rows: pd.DataFrame, need: np.ndarray) -> list[list[str] | None]:
    """Each row's admissible actions (None where not needed): from an ``admissible_actions``
    column (a list, or its text as a prompt lists it) or else from the ``prompt``. Raises
    :class:`StepTableError` naming the rows where a needed list cannot be read."""
    if "admissible_actions" in rows.columns:
        source, column = rows["admissible_actions"].to_numpy(dtype=object), "admissible_actions"

        def read(value: object) -> list[str] | None:
            if isinstance(value, str):
                return read_action_list(value)
            if isinstance(value, (list, tuple, np.ndarray)):
                return [str(a) for a in value]
            return None
    elif "prompt" in rows.columns:
        source, column = rows["prompt"].to_numpy(dtype=object), "prompt"

        def read(value: object) -> list[str] | None:
            return admissible_actions(value) if isinstance(value, str) else None
    else:
        raise StepTableError([
            "state key 'alfworld' needs each step's admissible actions: an "
            "'admissible_actions' column, or a 'prompt' column listing them after "
            f"{ADMISSIBLE_MARK!r} (the agent prompt format: verl dumps of g2po's verl "
            "trainer have it); this table has neither (run directories of g2po rollouts and "
            "the trainers record no prompts)"])
    lists = [read(v) if n else None for v, n in zip(source, need)]
    missing = need & np.array([a is None for a in lists], dtype=bool)
    if missing.any():
        raise StepTableError([f"state key 'alfworld': column {column!r} lists no readable "
                              f"admissible actions in {int(missing.sum())} row(s): "
                              f"{_row_names(rows.index[missing])}"])
    return lists


def _alfworld_keys(rows: pd.DataFrame, first: np.ndarray) -> list[str]:
    """:data:`alfworld`'s keys: an :class:`AlfworldAnchor` per trajectory, fed each later
    step's observation (``observation``, else ``state_key``) and admissible actions."""
    text = rows["observation" if "observation" in rows.columns else "state_key"]
    observations = text.to_numpy(dtype=object)
    gaps = pd.isna(observations)
    if gaps.any():
        raise StepTableError([f"state key 'alfworld': column {text.name!r} has no "
                              f"observation in {int(gaps.sum())} row(s): "
                              f"{_row_names(rows.index[gaps])}"])
    lists = _listed_actions(rows, ~first)
    keys = []
    anchor = None
    for obs, actions, starts in zip(observations, lists, first):
        if starts:
            anchor = AlfworldAnchor.authors(str(obs))
            keys.append(anchor.key)
        else:
            keys.append(anchor.step(str(obs), actions))
    return keys


#: G2PO's ALFWorld anchor (:class:`AlfworldAnchor`, the authors' rules) as a state key, for
#: logs that record each step's admissible actions: an ``admissible_actions`` column, or a
#: ``prompt`` in the agent format (which lists them). The observation is the ``observation``
#: column (else ``state_key``). Where the authors key a "Nothing happens." on the first step on
#: the whole first prompt, the key here is :data:`FIRST_PROMPT` and the first observation: the
#: same partition of the steps into states, in a key one can read.
alfworld = TrajectoryStrategy(
    "alfworld", _alfworld_keys,
    columns=("observation", "state_key", "admissible_actions", "prompt"),
    needs="observations and admissible actions")


def apply_strategy(strategy: StateKeyFn, steps: pd.DataFrame, order: np.ndarray,
                   groups: np.ndarray, trajs: np.ndarray) -> np.ndarray | pd.Series:
    """The canonical key of each row of ``steps`` taken in ``order`` ((n_steps,) int64: the
    rows trajectory by trajectory, each in step order), by ``strategy``; ``groups`` and
    ``trajs`` (n_steps,) int64 are each row's group and trajectory codes, in table order. A
    plain strategy gets the ``state_key`` column and the groups, a
    :class:`TrajectoryStrategy` the columns it reads and where each trajectory starts."""
    if isinstance(strategy, TrajectoryStrategy):
        rows = steps[[c for c in strategy.columns if c in steps.columns]].iloc[order]
        in_order = trajs[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = in_order[1:] != in_order[:-1]
        return np.asarray(strategy.keys_of(rows, first), dtype=object)
    return strategy(steps["state_key"].iloc[order], groups[order])


STATE_KEY_STRATEGIES: dict[str, Callable[..., StateKeyFn] | StateKeyFn] = {
    "exact": exact,
    "normalized": normalized,
    "alfworld": alfworld,
}


#: Strategies that map each key on its own, never looking at the group's other keys: they can
#: run on the distinct keys alone (:func:`distinct_key_codes`).
VALUE_WISE = ("exact", "normalized", "regex")


def distinct_key_codes(keys: pd.Series, spec: str | StateKeyFn) -> np.ndarray | None:
    """For a Categorical ``keys`` column (a run directory's state keys, read as Parquet
    dictionaries) and a value-wise strategy ``spec`` (:data:`VALUE_WISE`): each row's
    canonical key as a code (n,) int64, -1 where the key is missing, computed from the
    distinct keys alone; else None (the caller then needs every row's text).

    >>> keys = pd.Series(pd.Categorical(["Hall ", "hall", "Yard", "hall"]))
    >>> distinct_key_codes(keys, "normalized").tolist()
    [0, 0, 1, 0]
    >>> distinct_key_codes(keys, "similarity") is None
    True
    """
    name = spec.partition(":")[0] if isinstance(spec, str) else None
    if not isinstance(keys.dtype, pd.CategoricalDtype) or name not in VALUE_WISE:
        return None
    codes = keys.cat.codes.to_numpy().astype(np.int64)
    if name == "exact":
        return codes
    distinct = pd.Series(np.asarray(keys.cat.categories, dtype=object))
    canonical = pd.Series(resolve_state_key(spec)(distinct, np.zeros(len(distinct), np.int64)))
    merged = pd.factorize(canonical.astype(str), sort=False)[0].astype(np.int64)
    return np.where(codes < 0, -1, merged[np.maximum(codes, 0)])


def strategy_columns(*specs: str | StateKeyFn | None) -> list[str]:
    """The step-table columns the strategies ``specs`` build their keys from beyond
    ``state_key`` (a :class:`TrajectoryStrategy`'s ``columns``; none for a plain strategy),
    each once: what a reader of a few columns must read for them.

    >>> strategy_columns("exact", "alfworld")
    ['observation', 'admissible_actions', 'prompt']
    """
    out: list[str] = []
    for spec in specs:
        strategy = resolve_state_key(spec)
        if isinstance(strategy, TrajectoryStrategy):
            out += [c for c in strategy.columns if c != "state_key" and c not in out]
    return out


def strategy_names() -> list[str]:
    """Every strategy a user can name: the registered ones, then those taking an argument
    (``regex`` and ``similarity``, named with it as ``regex:PATTERN``)."""
    return [*STATE_KEY_STRATEGIES, "regex", "similarity"]


def resolve_state_key(spec: str | StateKeyFn | None) -> StateKeyFn:
    """Turn ``"exact"``, ``"normalized"``, ``"alfworld"``, ``"regex:PATTERN"``,
    ``"similarity[:0.95]"`` or a function into a strategy function."""
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
