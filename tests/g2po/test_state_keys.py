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
from tests.g2po.builders import (
    AT_MICROWAVE,
    AT_SHELF,
    EPISODES,
    HEATED,
    ROOM,
    TWO,
    alfworld_steps,
    trajectories,
)

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


# -- G2PO's ALFWorld anchor (the `alfworld` strategy) -----------------------------------------

# Worked by hand from the authors' env_manager.py: each later state is the observation, then
# "\nAdmissible actions:\n " and the actions quoted, "\n "-joined, "help" left out, then "\n";
# "Nothing happens." appends nothing (the key is the newest state's); after "You heat …" the
# key is that state and the next one joined by a space; the reset key is the raw first
# observation; a "Nothing happens." right after the reset keys on the first prompt.
E_MICROWAVE = (f"{AT_MICROWAVE}\nAdmissible actions:\n 'open microwave 1'\n 'go to shelf 1'\n"
               " 'heat mug 1 with microwave 1'\n")
E_HEATED = f"{HEATED}\nAdmissible actions:\n 'go to shelf 1'\n 'inventory'\n"
E_SHELF = f"{AT_SHELF}\nAdmissible actions:\n 'put mug 1 in/on shelf 1'\n 'go to microwave 1'\n"
EXPECTED_KEYS = {
    "a": [ROOM, E_MICROWAVE, E_MICROWAVE, E_HEATED, E_HEATED + " " + E_SHELF],
    "b": [ROOM, "[the first prompt] " + ROOM, E_SHELF, E_MICROWAVE],
}


def _keys(steps: pd.DataFrame) -> dict[str, list[str]]:
    from g2po.estimators import estimate

    _, ix = estimate(steps, "g2po", state_key="alfworld")
    keyed = steps.assign(key=ix.canonical_key.to_numpy()).sort_values(["traj_id", "t"])
    return {t: list(rows["key"]) for t, rows in keyed.groupby("traj_id")}


@pytest.mark.parametrize("how", ["prompt", "column", "text"])
def test_the_alfworld_key_follows_the_authors_rules(how):
    assert _keys(alfworld_steps(how)) == EXPECTED_KEYS


def test_the_alfworld_key_merges_as_the_authors_anchor_does():
    steps = alfworld_steps()
    graph = state_graph(steps, rule=OutcomeRule(), params=G2POParams(state_key="alfworld"))
    node = graph.steps.set_index(["traj_id", "t"])["node"]
    assert node["a", 0] == node["b", 0]  # the start
    assert node["a", 1] == node["a", 2] == node["b", 3]  # nothing happened: still there
    # the shelf reached with a heated mug is another state than the shelf reached without it;
    # the first step's "Nothing happens." is a state of its own
    assert len({node["a", 4], node["b", 2], node["b", 1], node["a", 0]}) == 4
    assert graph.n_states == 6
    exact = state_graph(steps, rule=OutcomeRule())
    assert exact.n_states == 5  # the observation alone merges the two shelves, and NOTHING


def test_the_alfworld_key_does_not_depend_on_row_order():
    steps = alfworld_steps()
    shuffled = steps.sample(frac=1.0, random_state=3)
    assert _keys(shuffled) == EXPECTED_KEYS


def test_the_alfworld_key_says_what_a_log_lacks():
    from g2po.errors import StepTableError

    steps = alfworld_steps().drop(columns="prompt")
    with pytest.raises(StepTableError, match="'admissible_actions' column, or a 'prompt'"):
        compute_advantages(steps, state_key="alfworld")
    prompts = alfworld_steps()
    prompts.loc[[2, 6], "prompt"] = "Your current observation is: somewhere\n"
    with pytest.raises(StepTableError, match=r"'prompt' lists no readable admissible actions "
                                             r"in 2 row\(s\): 2, 6"):
        compute_advantages(prompts, state_key="alfworld")
    # a first step needs no list: the reset key has none
    prompts = alfworld_steps()
    prompts.loc[0, "prompt"] = None
    assert _keys(prompts) == EXPECTED_KEYS
    with pytest.raises(StepTableError, match="not from the state keys alone"):
        resolve_state_key("alfworld")(steps["state_key"], np.zeros(len(steps), np.int64))


def test_the_env_anchor_and_the_log_key_share_the_rules():
    """The env's PaperAnchor keeps its documented start (the first state with its actions);
    every later key follows the same rules as the log's."""
    from g2po.envs.alfworld_env import PaperAnchor

    (_, steps), = [EPISODES["a"]]
    anchor = PaperAnchor(*steps[0])
    assert anchor.key == f"{ROOM}\nAdmissible actions:\n 'go to microwave 1'\n 'go to shelf 1'\n"
    assert [anchor.step(o, a) for o, a in steps[1:]] == EXPECTED_KEYS["a"][1:]


def test_distinct_key_codes_run_value_wise_strategies_on_categories_only():
    from g2po.state_keys import distinct_key_codes, strategy_names

    keys = pd.Series(pd.Categorical(["Hall ", "hall", None, "Yard"],
                                    categories=["Hall ", "hall", "Yard"]))
    assert distinct_key_codes(keys, "exact").tolist() == [0, 1, -1, 2]
    assert distinct_key_codes(keys, "normalized").tolist() == [0, 0, -1, 1]
    assert distinct_key_codes(keys, "regex:^(\\w)").tolist() == [0, 1, -1, 2]
    assert distinct_key_codes(keys, "alfworld") is None
    assert distinct_key_codes(keys.astype(object), "exact") is None
    assert {"exact", "normalized", "alfworld", "regex", "similarity"} == set(strategy_names())
