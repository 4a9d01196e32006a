"""State-key strategies, and how they change the graph."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po import UnknownStateKeyError, compute_advantages, state_graph
from g2po.errors import UserPatternError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.state_keys import normalized, regex, resolve_state_key, similarity
from tests.g2po.builders import TWO, trajectories

GROUPS = np.zeros(3, dtype=np.int64)


def test_normalized_ignores_case_and_whitespace():
    keys = pd.Series(["You are in  the Kitchen.\n", "you are in the kitchen.", "Hall"])
    assert list(normalized(keys, GROUPS)) == ["you are in the kitchen."] * 2 + ["hall"]


def test_regex_extracts_a_group_or_keeps_the_key():
    keys = pd.Series(["[room] kitchen | feedback: ok", "[room] kitchen | feedback: no", "other"])
    assert list(regex(r"\[room\] (\w+)")(keys, GROUPS)) == ["kitchen", "kitchen", "other"]
    assert list(regex(r"\[room\] \w+")(keys, GROUPS))[0] == "[room] kitchen"
    with pytest.raises(ValueError, match="at most one capture group"):
        regex(r"(a)(b)")


def test_similarity_merges_near_duplicates_inside_a_group_only():
    keys = pd.Series(["room kitchen, apple on table", "room kitchen, apple on table.",
                      "room kitchen, apple on table."])
    groups = np.array([0, 0, 1])
    merged = list(similarity(0.9)(keys, groups))
    assert merged[0] == merged[1] == keys[0]
    assert merged[2] == keys[2]  # another group keeps its own key
    assert list(similarity(1.0)(keys, np.zeros(3, dtype=np.int64))) == list(keys[:1]) + [
        keys[1], keys[1]]


def test_resolve_names_and_errors():
    assert resolve_state_key("normalized") is normalized
    assert resolve_state_key("regex:a(b)").__name__.startswith("regex")
    assert resolve_state_key("similarity:0.8").__name__ == "similarity(0.8)"
    with pytest.raises(UnknownStateKeyError, match="known: exact, normalized"):
        resolve_state_key("fuzzy")


def test_strategy_changes_the_nodes():
    spec = {"a": (10, [("Kitchen ", "x", True), ("hall", "y", True)]),
            "b": (0, [("kitchen", "z", True), ("hall", "w", True)])}
    steps = trajectories(spec)
    assert state_graph(steps, rule=OutcomeRule()).n_states == 3
    assert (
        state_graph(steps, rule=OutcomeRule(), params=G2POParams(state_key="normalized")).n_states
        == 2
    )
    custom = state_graph(
        steps,
        rule=OutcomeRule(),
        params=G2POParams(state_key=lambda keys, groups: keys.str.len() > 4),
    )
    assert custom.n_states == 2
    out = compute_advantages(steps, state_key="normalized")
    assert out["node_visits"].tolist() == [2, 2, 2, 2]


def test_regex_patterns_are_checked_and_time_limited():
    with pytest.raises(UserPatternError, match=r"state-key regex: invalid regular expression"):
        resolve_state_key("regex:(")
    keys = pd.Series(["a" * 40 + "!", "b"])
    with pytest.raises(UserPatternError, match=r"took longer than .* catastrophically"):
        regex(r"(a|aa)+$")(keys, np.zeros(2, dtype=np.int64))
    steps = trajectories(TWO).assign(state_key="a" * 40 + "!")
    with pytest.raises(UserPatternError):
        compute_advantages(steps, state_key="regex:(a|aa)+$")


def test_regex_keys_each_distinct_key_once_and_keeps_non_matches():
    keys = pd.Series(["room 1: x", "room 1: y", "hall", "room 2: x"])
    assert list(regex(r"room (\d)")(keys, np.zeros(4, dtype=np.int64))) == ["1", "1", "hall", "2"]
    assert list(regex(r"room (x)?")(keys, np.zeros(4, dtype=np.int64)))[0] == "room 1: x"
