"""What if the states merged differently: one group under two keys, node edits, and the
run-wide table (g2po/analysis/whatif.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import loaders
from g2po import compute_advantages
from g2po.analysis.state_graph import state_graph
from g2po.analysis.whatif import (
    NODE_COLUMNS,
    RUN_COLUMNS,
    STEP_COLUMNS,
    merge_nodes,
    sort_whatif,
    split_node,
    step_changes,
    what_if,
    whatif_groups,
    whatif_log,
)
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from g2po.synthetic import synthetic_steps
from tests.g2po.builders import alfworld_steps, trajectories

RULE = OutcomeRule()
# a: start → Hall (success), b: start → hall (failure), c: x → y (success), untouched by the
# case of "Hall": only the group-wide standardisation of its TD errors moves.
CASES = {
    "a": (10, [("start", "go", True), ("Hall", "take", True)]),
    "b": (0, [("start", "go", True), ("hall", "drop", True)]),
    "c": (10, [("x", "go", True), ("y", "take", True)]),
}
COARSE = r"regex:^task \d+ room \d"  # synthetic keys: rooms 10-19 merge with room 1, …


def many_groups(seed: int = 0, rows: int = 800) -> pd.DataFrame:
    return synthetic_steps(rows, rollouts=6, max_len=20, states_per_task=25, key_chars=60,
                           seed=seed).assign(train_step=7)


def test_a_merge_worked_by_hand():
    result = what_if(trajectories(CASES), "normalized", rule=RULE)
    assert list(result.steps.columns) == STEP_COLUMNS
    assert list(result.nodes.columns) == NODE_COLUMNS
    # V(Hall) = 0.95 · 10, V(hall) = 0; merged: their mean
    (part,) = result.nodes.to_dict("records")
    assert part["kind"] == "merged" and part["visits"] == 2
    assert part["values_before"] == pytest.approx([9.5, 0.0])
    assert part["values_after"] == pytest.approx([4.75])
    rows = result.steps.set_index(["traj_id", "t"])
    assert rows.loc[("a", 1), "td_error_before"] == pytest.approx(10 - 9.5)
    assert rows.loc[("a", 1), "td_error_after"] == pytest.approx(10 - 4.75)
    assert rows.loc[("a", 0), "td_error_after"] == pytest.approx(4.75 - 0.95 ** 2 * 5)
    assert rows.loc[("a", 1), "why"].startswith("state merged: nodes")
    assert rows.loc[("a", 0), "why"].startswith("next state merged")
    assert rows.loc[("c", 0), "why"].startswith("the group's TD errors moved")
    # the advantages are the estimator's own under each key
    steps = trajectories(CASES)
    for side, key in (("before", "exact"), ("after", "normalized")):
        expected = compute_advantages(steps, state_key=key)["adv"].to_numpy()
        np.testing.assert_allclose(result.steps[f"adv_{side}"].to_numpy(), expected)


def test_sign_flips_and_changes_follow_the_two_sides():
    steps = many_groups()
    first = steps[steps["group_id"] == steps["group_id"].iloc[0]]
    result = what_if(first, COARSE, rule=RULE, min_change=0.25)
    before, after = result.steps["adv_before"].to_numpy(), result.steps["adv_after"].to_numpy()
    flips = np.sign(before) * np.sign(after) < 0
    assert flips.any() and (result.steps["sign_flip"].to_numpy() == flips).all()
    moved = np.abs(after - before) > 0.25
    assert (result.steps["changed"].to_numpy() == (moved | flips)).all()
    shown = result.changed
    assert len(shown) == int((moved | flips).sum())
    ranked = shown["sign_flip"].to_numpy().astype(int)
    assert (np.diff(ranked) <= 0).all()  # the sign flips first
    inside = np.abs(shown.loc[shown["sign_flip"], "delta"].to_numpy())
    assert (np.diff(inside) <= 0).all()  # then the largest change


def test_the_same_key_changes_nothing():
    result = what_if(trajectories(CASES), "exact", rule=RULE)
    assert not result.steps["changed"].any() and result.nodes.empty
    assert (result.steps["why"] == "").all()
    assert result.summary()["merged"] == result.summary()["split"] == 0


def test_the_run_table_and_the_page_agree_on_every_group():
    steps = many_groups()
    params = G2POParams(gamma=0.9, w=0.8)
    table = whatif_groups(steps, COARSE, rule=RULE, params=params, min_change=0.2)
    assert list(table.columns) == RUN_COLUMNS and len(table) == steps["group_id"].nunique()
    assert table["sign_flips"].sum() > 0 and table["merged"].sum() > 0
    assert (table["train_step"] == 7).all()
    for row in pd.concat([table.head(2), table.tail(2)]).itertuples(index=False):
        one = steps[steps["group_id"] == row.group_id]
        summary = what_if(one, COARSE, rule=RULE, params=params, min_change=0.2).summary()
        assert {k: getattr(row, k) for k in summary} == pytest.approx(summary), row.group_id


def test_the_run_table_is_sorted_most_sign_flips_first():
    table = whatif_groups(many_groups(1), COARSE, rule=RULE)
    flips = table["sign_flips"].to_numpy()
    assert (np.diff(flips) <= 0).all()
    by_steps = sort_whatif(table, "steps", descending=False)
    assert (np.diff(by_steps["steps"].to_numpy()) >= 0).all()
    with pytest.raises(KeyError, match="no column 'nope'"):
        sort_whatif(table, "nope")


@pytest.mark.parametrize("key", [COARSE, "similarity:0.95"])
def test_a_run_streams_to_the_same_table(tmp_path, key):
    writer = loaders.RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    for step in (1, 2, 3):
        writer.write_step(step, synthetic_steps(600, rollouts=4, max_len=15,
                                                states_per_task=20, key_chars=60, seed=step))
    log = loaders.open_log(tmp_path / "run")
    seen = []
    streamed = whatif_log(log, key, batch_rows=300, progress=lambda d, n: seen.append((d, n)))
    whole = whatif_groups(log.load(), key, rule=log.rule())
    pd.testing.assert_frame_equal(streamed, whole, check_dtype=False)
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)
    assert whatif_log(log, key, [2])["train_step"].unique().tolist() == [2]


def test_a_log_without_admissible_actions_cannot_take_the_alfworld_key(tmp_path):
    from g2po.errors import StepTableError

    writer = loaders.RunWriter(tmp_path / "run", {})
    writer.write_step(1, synthetic_steps(200, rollouts=4, max_len=10, seed=0))
    with pytest.raises(StepTableError, match="admissible actions"):
        whatif_log(loaders.open_log(tmp_path / "run"), "alfworld")


def test_the_alfworld_key_against_the_observation_alone():
    result = what_if(alfworld_steps(), "alfworld", rule=RULE)
    parts = dict(zip(result.nodes["kind"], result.nodes["labels_before"].map(len)))
    # the observation alone merged the two shelves (heated mug or not): the anchor splits
    # them; it keys the later "Nothing happens." as the microwave it happened at and the
    # first one on its own: the observation's two nodes regrouped
    assert parts == {"split": 1, "regrouped": 2}
    assert result.summary()["nodes_before"] == 5 and result.summary()["nodes_after"] == 6


def test_merging_two_nodes_is_a_key_that_merges_them():
    steps = trajectories(CASES)
    graph = state_graph(steps, rule=RULE)
    hall, low = (int(graph.nodes.index[graph.nodes["state_key"] == k][0])
                 for k in ("Hall", "hall"))
    edited = merge_nodes(graph, hall, low, rule=RULE)
    by_key = what_if(steps, lambda keys, groups: keys.replace("hall", "Hall"), rule=RULE)
    assert edited.after.n_states == graph.n_states - 1 == by_key.after.n_states
    np.testing.assert_allclose(edited.steps["adv_after"], by_key.steps["adv_after"])
    assert edited.label_after == f"nodes {hall} and {low} merged"
    assert edited.nodes["kind"].tolist() == ["merged"]
    with pytest.raises(ValueError, match="with itself"):
        merge_nodes(graph, hall, hall, rule=RULE)
    with pytest.raises(ValueError, match="not a state node"):
        merge_nodes(graph, hall, graph.n_states, rule=RULE)  # the success terminal


def test_splitting_a_node_by_where_its_steps_lead():
    steps = trajectories(CASES)
    graph = state_graph(steps, rule=RULE)
    start = int(graph.nodes.index[graph.nodes["state_key"] == "start"][0])
    result = split_node(graph, start, rule=RULE)
    assert result.after.n_states == graph.n_states + 1
    (part,) = result.nodes.to_dict("records")
    assert part["kind"] == "split" and part["nodes_before"] == [start]
    # each part's value is the mean of its own steps' values: one step each here
    values = sorted(graph.steps.loc[graph.steps["node"] == start, "step_value"])
    assert sorted(part["values_after"]) == pytest.approx(values)
    x = int(graph.nodes.index[graph.nodes["state_key"] == "x"][0])
    with pytest.raises(ValueError, match="nothing to split it by"):
        split_node(graph, x, rule=RULE)


def test_bad_thresholds_are_errors():
    with pytest.raises(ValueError, match="min_change"):
        what_if(trajectories(CASES), "normalized", rule=RULE, min_change=-1)
    with pytest.raises(ValueError, match="min_change"):
        step_changes(np.zeros(1), np.zeros(1), float("nan"))


def test_a_verl_dump_of_the_agent_prompt_takes_the_alfworld_key(tmp_path):
    """A verl rollout dump whose inputs are the agent prompt (as g2po's verl trainer writes
    them): the admissible actions are read from each line's input."""
    from g2po.agent_format import build_prompt
    from tests.g2po.builders import EPISODES
    from tests.loaders.builders import SYSTEM, qwen_decoded, write_verl_dump

    lines = []
    for session, (reward, steps) in enumerate(EPISODES.values()):
        history = []
        for i, (obs, actions) in enumerate(steps):
            prompt = build_prompt("heat a mug", obs, actions, history)
            lines.append({"input": qwen_decoded([("system", SYSTEM), ("user", prompt)]),
                          "output": f"<think>.</think><action>{actions[0]}</action>",
                          "gts": None, "score": reward, "step": 1,
                          "uid": f"5f0c0e2a-91d3-4b7e-8c1a-0d2e6f000000_{session}_{i}"})
            history.append((obs, actions[0]))
    write_verl_dump(tmp_path / "dump", 1, lines)
    log = loaders.open_log(tmp_path / "dump")
    table = whatif_log(log, "alfworld")
    expected = what_if(alfworld_steps(), "alfworld", rule=RULE).summary()
    assert table.iloc[0][["nodes_before", "nodes_after", "merged", "split"]].tolist() == \
        [expected[k] for k in ("nodes_before", "nodes_after", "merged", "split")]
