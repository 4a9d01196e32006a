import numpy as np
import pandas as pd

from g2po.analysis.diagnostics import (
    merge_stats,
    near_duplicate_keys,
    node_variances,
    step_node_variances,
)
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import group_steps


def keyed(keys: list[list[str]], rewards: list[float]) -> pd.DataFrame:
    rows = []
    for i, (traj, reward) in enumerate(zip(keys, rewards, strict=True)):
        rows += [{"traj_id": f"r{i}", "t": t, "state_key": k, "action": "go",
                  "episode_reward": reward} for t, k in enumerate(traj)]
    return pd.DataFrame(rows).assign(group_id="g", is_action_valid=True)


def test_merge_stats_counts_singletons_and_merge_rate():
    steps = keyed([["start", "hall", "kitchen"], ["start", "hall", "garden"]], [10.0, 0.0])
    stats = merge_stats(state_graph(steps, rule=OutcomeRule()))
    assert stats["steps"] == 6 and stats["state_nodes"] == 4
    assert stats["singleton_nodes"] == 2 and stats["singleton_share"] == 0.5
    assert stats["merge_rate"] == 1 - 4 / 6 and stats["max_visits"] == 2


def test_near_duplicates_find_unmerged_lookalikes_only():
    base = "You are in the kitchen. There is a fridge and a table here."
    steps = keyed([["start", base, base + " ", "something else entirely different"],
                   ["start", base.upper(), "x"]], [10.0, 0.0])
    graph = state_graph(steps, rule=OutcomeRule())
    pairs = near_duplicate_keys(graph, threshold=0.9)
    assert len(pairs) == 1
    assert pairs.loc[0, "similarity"] >= 0.9
    found = {pairs.loc[0, "key_a"].strip(), pairs.loc[0, "key_b"].strip()}
    assert found == {base}
    # the upper-case version is not similar by difflib; a normalized key would merge it
    assert near_duplicate_keys(graph, threshold=0.999).empty


def test_node_variances_of_a_group_and_of_a_whole_step_agree():
    steps = group_steps(rows=800)
    graph = state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())
    per_group = node_variances(graph)
    assert (per_group["visits"] >= 2).all()
    whole = step_node_variances(steps, rule=OutcomeRule())
    assert set(whole["group_id"]) == set(steps["group_id"])
    mine = whole[whole["group_id"] == "task-0"].sort_values("value_var")["value_var"]
    np.testing.assert_allclose(np.sort(per_group["value_var"].to_numpy()), mine.to_numpy())


def test_char_diff_rebuilds_both_keys_and_marks_only_differences():
    from g2po.analysis.diagnostics import char_diff, elide_equal

    a, b = "You are in the kitchen. A fridge.", "You are in the pantry. A fridge!"
    ops = char_diff(a, b)
    assert "".join(x for _, x, _ in ops) == a and "".join(y for _, _, y in ops) == b
    assert all(x == y for tag, x, y in ops if tag == "equal")
    assert all(x != y for tag, x, y in ops if tag != "equal")
    cut = char_diff("ab" * 10, "ab" * 10 + "c", max_chars=5)
    assert "".join(y for _, _, y in cut) == "ab" * 10 + "c"
    short = elide_equal(char_diff("x" * 200 + "1", "x" * 200 + "2"), context=10)
    assert short[0] == ("equal", "…" + "x" * 10, "…" + "x" * 10) and short[1][0] == "replace"


def test_near_duplicates_report_progress_to_the_end():
    from g2po.analysis.diagnostics import near_duplicate_keys
    from g2po.analysis.state_graph import state_graph
    from tests.app.builders import group_steps

    steps = group_steps(rows=400)
    graph = state_graph(steps[steps["group_id"] == "task-0"], rule=OutcomeRule())
    seen = []
    pairs = near_duplicate_keys(graph, 0.5, progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)
    assert pairs.equals(near_duplicate_keys(graph, 0.5))


def test_keys_naming_different_objects_come_last_and_say_why():
    from g2po.analysis.diagnostics import object_difference

    counter1 = "You arrive at countertop 1. On the countertop 1, you see a apple 1."
    counter2 = "You arrive at countertop 2. On the countertop 2, you see a apple 1."
    fridge = "You arrive at fridge 1. The fridge 1 is closed."
    drawer = "You arrive at drawer 1. The drawer 1 is closed."
    kitchen = "You are in the kitchen. There is a fridge and a table here, and a long rug."
    steps = keyed([["start", counter1, fridge, kitchen], ["start", counter2, drawer,
                                                          kitchen + " "]], [10.0, 0.0])
    pairs = near_duplicate_keys(state_graph(steps, rule=OutcomeRule()), threshold=0.7)
    texts = [{a.strip(), b.strip()} for a, b in zip(pairs["key_a"], pairs["key_b"],
                                                     strict=True)]
    assert {kitchen} in texts and {counter1, counter2} in texts and {fridge, drawer} in texts
    # the kitchen pair (a trailing blank: merge them) first, the object pairs after it
    assert texts[0] == {kitchen} and not pairs["different_objects"].iloc[0]
    assert pairs["different_objects"].iloc[1:].all()
    assert pairs["note"].iloc[0] == ""
    notes = dict(zip(map(frozenset, texts), pairs["note"], strict=True))
    assert notes[frozenset({fridge, drawer})] == "different objects: fridge 1 ≠ drawer 1"
    assert "countertop 1" in notes[frozenset({counter1, counter2})]
    # a step counter is no object: keys differing there are still advised for merging
    assert object_difference("Step 3: the kitchen", "Step 4: the kitchen") is None
    assert object_difference("Turn 3. You see a key 1.", "Turn 9. You see a key 1.") is None


def test_the_diagnostics_docstring_examples_hold():
    import doctest

    import g2po.analysis.diagnostics as diagnostics

    assert doctest.testmod(diagnostics).failed == 0
