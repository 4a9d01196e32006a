import statistics

import numpy as np
import pandas as pd
import pytest

from g2po.analysis.compare import (
    compare_estimators,
    contributions,
    disagreement_counts,
    explain_disagreements,
    parameter_choices,
    part_label,
    rank_correlation,
    sign_disagreements,
    step_location,
    trajectory_facts,
    zscore,
)
from g2po.analysis.state_graph import state_graph
from g2po.estimators import Part, compute_advantages, get_spec, register_estimator
from g2po.outcomes import OutcomeRule
from tests.app.builders import group_steps
from tests.g2po.builders import THREE, trajectories


def one_group():
    steps = group_steps(rows=400)
    return steps[steps["group_id"] == "task-0"]


def test_columns_are_the_estimators_advantages_in_step_order():
    steps = one_group()
    result = compare_estimators(steps, ["g2po", "grpo", "gigpo"], {"g2po": {"w": 0.5}},
                                rule=OutcomeRule())
    assert result.estimators == ["g2po", "grpo", "gigpo"] and not result.errors
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    expected = compute_advantages(ordered, "g2po", w=0.5)["adv"].to_numpy()
    np.testing.assert_allclose(result.table["g2po"], expected)
    np.testing.assert_allclose(result.table["grpo"],
                               compute_advantages(ordered, "grpo")["adv"].to_numpy())


def test_a_failing_estimator_is_reported_and_the_others_still_run():
    result = compare_estimators(one_group(), ["value_iteration", "rloo"],
                                {"value_iteration": {"gamma": 1.0}}, rule=OutcomeRule())
    assert result.estimators == ["rloo"]
    assert "gamma" in result.errors["value_iteration"]


def test_rank_correlation_is_one_on_the_diagonal():
    result = compare_estimators(one_group(), ["g2po", "gigpo", "g2po_ep"], rule=OutcomeRule())
    corr = rank_correlation(result.table, result.estimators)
    np.testing.assert_allclose(np.diag(corr), 1.0)
    assert corr.shape == (3, 3)


def test_sign_disagreements_counts_opposite_signs_only():
    table = pd.DataFrame({"traj_id": ["a"] * 4, "t": range(4), "action": "x", "observation": "s",
                          "episode_reward": 1.0, "a": [1.0, -1.0, 0.0, 2.0],
                          "b": [-0.5, -2.0, 3.0, -3.0]})
    diff = sign_disagreements(table, "a", "b")
    assert sorted(diff["t"]) == [0, 3]  # zero never disagrees, equal signs never do
    with pytest.raises(ValueError, match="two different"):
        sign_disagreements(table, "a", "a")


def pz(values: list[float]) -> list[float]:
    """z-scores by hand: (x - mean) / population std."""
    mean, std = statistics.mean(values), statistics.pstdev(values)
    return [(v - mean) / std for v in values]


def test_sign_disagreements_are_ordered_by_the_z_scored_gap_not_the_raw_one():
    """A on a wide scale (as GiGPO's mean_norm), B on a narrow one: the raw gap would put
    steps 0 and 3 first, where only A is large; on one scale steps 1 and 2 differ most."""
    a, b = [10.0, 1.0, -1.0, -10.0], [-0.1, -3.0, 3.0, 0.1]
    table = pd.DataFrame({"traj_id": "r", "t": range(4), "action": "x", "a": a, "b": b,
                          "observation": list("wxyz")})
    diff = sign_disagreements(table, "a", "b")
    want = [abs(x - y) for x, y in zip(pz(a), pz(b))]
    assert diff["t"].tolist() == [1, 2, 0, 3]
    assert diff["z gap"].tolist() == pytest.approx([want[1], want[2], want[0], want[3]])
    assert diff["a"].tolist() == [1.0, -1.0, 10.0, -10.0]  # the raw values stay
    # numbers first, text last
    assert diff.columns.tolist() == ["traj_id", "t", "a", "b", "z gap", "action", "observation"]


def test_disagreements_carry_node_outcome_and_each_estimators_parts():
    steps = one_group()
    result = compare_estimators(steps, ["g2po", "gigpo", "grpo"], rule=OutcomeRule())
    assert list(result.parts) == ["g2po", "gigpo"]  # GRPO exposes no parts
    assert result.parts["g2po"].columns.tolist() == ["A^EP", "A^NC", "A^EC"]
    assert result.parts["gigpo"].columns.tolist() == ["A^EP", "A^S"]
    diff = sign_disagreements(result.table, "g2po", "gigpo", result.parts)
    assert len(diff) > 0
    assert diff.columns.tolist()[:4] == ["traj_id", "t", "node", "outcome"]
    assert diff.columns.tolist()[-2:] == ["action", "observation"]
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    g2po = compute_advantages(ordered, "g2po").set_index(["traj_id", "t"])
    gigpo = compute_advantages(ordered, "gigpo").set_index(["traj_id", "t"])
    at = list(zip(diff["traj_id"], diff["t"], strict=True))
    for label, col in (("A^EP", "adv_ep"), ("A^NC", "adv_nc"), ("A^EC", "adv_ec")):
        np.testing.assert_allclose(diff[f"g2po · {label}"], g2po.loc[at, col])
    np.testing.assert_allclose(diff["gigpo · A^S"], gigpo.loc[at, "adv_step"])
    np.testing.assert_allclose(diff["g2po"], diff["g2po · A^EP"] + diff["g2po · A^NC"]
                               + diff["g2po · A^EC"])
    assert (np.sign(diff["g2po"]) * np.sign(diff["gigpo"]) < 0).all()
    assert diff["z gap"].is_monotonic_decreasing


def test_nodes_are_the_explorers_and_outcomes_the_trajectories():
    steps = trajectories(THREE).sample(frac=1.0, random_state=4)  # rows in any order
    steps["done"] = True
    steps.loc[(steps["traj_id"] == "b") & (steps["t"] == 2), "done"] = False  # cut at the limit
    result = compare_estimators(steps, ["grpo"], rule=OutcomeRule())
    graph = state_graph(steps, rule=OutcomeRule())
    want = graph.steps.set_index(["traj_id", "t"])["node"]
    got = result.table.set_index(["traj_id", "t"])["node"]
    assert got.to_dict() == want.loc[got.index].to_dict()
    outcome = result.table.groupby("traj_id")["outcome"].agg(set).to_dict()
    assert outcome == {"a": {"success"}, "b": {"truncated"}, "c": {"failure"}}
    facts = trajectory_facts(result.table)
    assert facts.loc["c", "length"] == 3 and facts.loc["a", "outcome"] == "success"
    # the success rule is the one given: a threshold below 0 makes every trajectory succeed
    lenient = compare_estimators(steps, ["grpo"], rule=OutcomeRule(success_threshold=-1.0))
    assert set(lenient.table["outcome"]) == {"success"}


def test_rows_come_in_natural_trajectory_order_and_text_last():
    steps = trajectories({"s0:10": THREE["a"], "s0:2": THREE["b"]})
    result = compare_estimators(steps, ["grpo", "rloo"], rule=OutcomeRule())
    assert result.table["traj_id"].drop_duplicates().tolist() == ["s0:2", "s0:10"]
    assert result.table.columns.tolist() == ["traj_id", "t", "node", "outcome",
                                             "episode_reward", "valid", "grpo", "rloo",
                                             "action", "state_key"]


def test_a_users_estimator_shows_its_adv_columns_as_parts():
    from g2po.estimators import registry

    @register_estimator("test_parts_est", overwrite=True)
    def test_parts_est(ix):
        half = ix.reward / 2
        return {"adv": 2 * half, "adv_half": half, "note": half}

    try:
        result = compare_estimators(trajectories(THREE), ["test_parts_est"], rule=OutcomeRule())
        assert result.parts["test_parts_est"].columns.tolist() == ["A^half"]
    finally:
        registry._REGISTRY.pop("test_parts_est", None)
    assert part_label("gigpo", "adv_step") == "A^S" and part_label("hgpo", "adv_k3") == "A^k3"
    assert part_label("graphhca", "adv_credit") == "A^credit"


def test_step_location_is_the_steps_node_and_edge():
    graph = state_graph(trajectories(THREE), rule=OutcomeRule())
    for step in graph.steps.itertuples():
        node, edge = step_location(graph, step.traj_id, step.t)
        assert node == step.node
        row = graph.edges.iloc[edge]
        assert (row["source"], row["target"], row["action"]) == (step.node, step.next_node,
                                                                  step.action)
    assert step_location(graph, "nobody", 0) is None


def test_zscore_puts_every_estimator_on_one_scale():
    table = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [100.0, 300.0, 200.0], "c": [5.0] * 3})
    z = zscore(table, ["a", "b", "c"])
    np.testing.assert_allclose(z["a"], [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    np.testing.assert_allclose(z["b"], [-1.2247449, 1.2247449, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(z["c"], 0.0)
    assert table["a"].tolist() == [1.0, 2.0, 3.0]  # the caller's table is untouched


def test_parameter_choices_come_from_literal_annotations():
    assert parameter_choices("g2po") == {"mode": ("mean_std_norm", "mean_norm"),
                                         "terminal": ("binary", "reward")}
    assert parameter_choices("rloo") == {}


def test_the_text_column_is_named_for_what_it_is():
    steps = one_group()
    assert compare_estimators(steps, ["grpo"], rule=OutcomeRule()).text_column == "observation"
    result = compare_estimators(steps.drop(columns="observation"), ["grpo"], rule=OutcomeRule())
    assert result.text_column == "state_key" and "state_key" in result.table.columns


def _signed(v: float) -> str:
    return f"{v:+.2f}".replace("-", "\u2212")


def test_contributions_are_the_weighted_parts_that_add_up_to_the_advantage():
    result = compare_estimators(one_group(), ["g2po", "gigpo", "hgpo", "grpo"],
                                {"g2po": {"w": 0.5}, "gigpo": {"omega": 0.7}},
                                rule=OutcomeRule())
    for name in ("g2po", "gigpo", "hgpo"):
        shares = contributions(result, name)
        np.testing.assert_allclose(shares.sum(axis=1), result.table[name], atol=1e-9)
    g2po = contributions(result, "g2po")
    np.testing.assert_allclose(g2po["A^NC"], 0.5 * result.parts["g2po"]["A^NC"])
    np.testing.assert_allclose(g2po["A^EP"], result.parts["g2po"]["A^EP"])
    np.testing.assert_allclose(contributions(result, "gigpo")["A^S"],
                               0.7 * result.parts["gigpo"]["A^S"])
    assert contributions(result, "grpo") is None  # no parts


def test_a_users_parts_that_do_not_add_up_give_no_contributions():
    from g2po.estimators import registry

    @register_estimator("test_square_est", overwrite=True)
    def test_square_est(ix):
        x = ix.reward - ix.reward.mean()
        return {"adv": x * np.abs(x), "adv_x": x}

    try:
        result = compare_estimators(one_group(), ["test_square_est", "grpo"],
                                    rule=OutcomeRule())
        assert contributions(result, "test_square_est") is None
        why = explain_disagreements(result, "test_square_est", "grpo",
                                    result.table[["traj_id", "t"]].head(3))
        assert why["why"].str.contains("no parts to tell apart").all()
    finally:
        registry._REGISTRY.pop("test_square_est", None)


def test_each_disagreement_names_the_term_that_sets_each_sign():
    result = compare_estimators(one_group(), ["g2po", "grpo", "gigpo"], {"g2po": {"w": 0.5}},
                                rule=OutcomeRule())
    diff = sign_disagreements(result.table, "g2po", "grpo", result.parts)
    why = explain_disagreements(result, "g2po", "grpo", diff)
    assert len(why) == len(diff) > 0 and (why.index == diff.index).all()
    shares = contributions(result, "g2po")
    where = {(t, s): i for i, (t, s) in enumerate(zip(result.table["traj_id"],
                                                        result.table["t"], strict=True))}
    decided = set()
    for row, (by, said) in zip(diff.itertuples(), zip(why["decided by"], why["why"],
                                                         strict=True), strict=True):
        mine, theirs = by.split(" vs ")
        assert theirs == "grpo" and mine.startswith("g2po · ")
        term = mine.removeprefix("g2po · ")
        share = shares.iloc[where[(row.traj_id, row.t)]]
        sign = np.sign(row.g2po)
        # the deciding part pushes the way the advantage goes, more than any other part
        assert sign * share[term] > 0 and sign * share[term] == (sign * share).max()
        words = get_spec("g2po").part(term).words
        assert f"the {words} {term} {_signed(share[term])}" in said
        assert said.startswith(f"g2po {'>' if sign > 0 else '<'} 0 ({_signed(row.g2po)})")
        assert f"grpo {'<' if sign > 0 else '>'} 0" in said
        decided.add(term)
    assert decided & {"A^NC", "A^EC"}  # the step terms flip signs against GRPO here
    counts = disagreement_counts(why)
    assert counts.sum() == len(diff) and counts.is_monotonic_decreasing
    assert set(counts.index) == set(why["decided by"])


def test_the_edge_term_says_where_its_td_error_ranks_in_the_group():
    steps = one_group()
    result = compare_estimators(steps, ["g2po", "grpo"], rule=OutcomeRule())
    why = explain_disagreements(result, "g2po", "grpo")
    edge = why[why["decided by"] == "g2po · A^EC vs grpo"]
    assert len(edge) > 0
    diff = sign_disagreements(result.table, "g2po", "grpo", result.parts)
    ordered = steps.sort_values(["traj_id", "t"], kind="stable")
    td = compute_advantages(ordered, "g2po").set_index(["traj_id", "t"])["td_error"]
    for i in edge.index:
        step = diff.loc[i]
        v = td.loc[(step["traj_id"], step["t"])]
        if step["g2po"] > 0:
            want = f"top {max(1, int(np.ceil(100 * np.mean(td >= v))))} %"
        else:
            want = f"bottom {max(1, int(np.ceil(100 * np.mean(td <= v))))} %"
        assert f"TD error is in the group's {want}" in edge.loc[i, "why"]


def test_episode_level_values_are_rebuilt_with_their_set_normalisation_and_penalty():
    """THREE by hand: GRPO normalises R = 10, 0, 0 over the 3 rollouts (mean 3.33, std 5.77);
    G2PO's A^EP normalises R − 0.1·invalid over the 8 step rows (mean 19.9 / 8 = 2.49), and
    rollout c's first step pays the penalty; GiGPO's A^EP is the same in mean_norm."""
    result = compare_estimators(trajectories(THREE), ["g2po", "grpo", "gigpo"],
                                rule=OutcomeRule())
    rows = result.table[["traj_id", "t"]]
    episode = explain_disagreements(result, "g2po", "grpo", rows)["episode"]
    c0 = rows.index[(rows["traj_id"] == "c") & (rows["t"] == 0)][0]
    a0 = rows.index[(rows["traj_id"] == "a") & (rows["t"] == 0)][0]
    text = episode[c0]
    assert "grpo −0.58 = (R 0 − mean 3.33) / std 5.77 over the group's 3 rollouts" in text
    assert "(R 0 − penalty 0.1 − mean 2.49) / std " in text
    assert "over the group's 8 step rows" in text
    assert "g2po: step rows vs grpo: rollouts" in text
    assert "the invalid-action penalty: g2po's 0.1 vs none in grpo's, on 1 of the group's " \
           "step rows, this one among them" in text
    assert "this one among them" not in episode[a0] and "penalty 0.1 −" not in episode[a0]
    modes = explain_disagreements(result, "g2po", "gigpo", rows)["episode"][c0]
    assert "normalisation mean_std_norm vs mean_norm" in modes
    assert "gigpo's A^EP −2.59 = R 0 − penalty 0.1 − mean 2.49 over" in modes
    assert "normalise over different sets" not in modes
    # values that agree are not explained
    same = compare_estimators(trajectories(THREE), ["g2po", "grpo_steps"], rule=OutcomeRule())
    assert (explain_disagreements(same, "g2po", "grpo_steps", rows)["episode"] == "").all()


def test_the_comparison_keeps_the_response_and_the_whole_prompt():
    steps = one_group()
    steps = steps.assign(response="<action>" + steps["action"] + "</action>",
                         prompt="system\nBe brief.\nuser\n" + steps["observation"])
    result = compare_estimators(steps, ["grpo"], rule=OutcomeRule())
    assert result.table.columns.tolist()[-3:] == ["action", "observation", "response"]
    assert "prompt" not in result.table.columns
    assert result.texts.columns.tolist() == ["observation", "response", "prompt"]
    ordered = steps.set_index(["traj_id", "t"])
    for i in (0, len(result.table) - 1):
        key = (result.table["traj_id"].iloc[i], result.table["t"].iloc[i])
        assert result.texts["prompt"].iloc[i] == ordered.loc[key, "prompt"]
        assert result.texts["response"].iloc[i] == ordered.loc[key, "response"]


def test_a_part_explained_within_its_own_sets_says_so():
    """A part normalised within sets of the estimator's own (declared ``peers`` column) is
    explained against the other steps of the step's set, in the words it declares."""
    from g2po.estimators import registry

    @register_estimator(
        "test_sets_est", overwrite=True, title="Sets", summary="the reward within its set",
        parts=(Part("adv_set", "A^Q", "set term", explain="peers", of="its reward is",
                    peers="bucket", among="in the same bucket"),))
    def test_sets_est(ix):
        bucket = (ix.t >= 1).astype(np.int64)
        x = ix.reward.copy()
        for b in (0, 1):
            x[bucket == b] -= x[bucket == b].mean()
        return {"adv": x, "adv_set": x, "bucket": bucket}

    try:
        steps = trajectories(THREE)  # rows a0 a1 | c0 c1 c2 | b0 b1 b2 by trajectory
        result = compare_estimators(steps, ["test_sets_est", "grpo"], rule=OutcomeRule())
        assert result.peer_sets["test_sets_est"]["bucket"].tolist() == [0, 1, 0, 1, 1, 0, 1, 1]
        why = explain_disagreements(result, "test_sets_est", "grpo",
                                    result.table[["traj_id", "t"]])
        # a1 (R 10) in bucket 1 beside b1, b2, c1, c2 (R 0): 10 - mean 2, more than all 4
        a1 = why["why"].iloc[1]
        assert "the set term A^Q +8.00 — its reward is more than at 4 of the 4 other steps " \
               "in the same bucket —" in a1
    finally:
        registry._REGISTRY.pop("test_sets_est", None)


def test_every_part_of_a_builtin_is_named_and_explained_as_declared():
    result = compare_estimators(one_group(), ["hgpo", "graphhca", "grpo"],
                                {"hgpo": {"base_group": True}}, rule=OutcomeRule())
    assert result.parts["hgpo"].columns.tolist()[:2] == ["A^EP", "A^k1"]
    assert result.parts["graphhca"].columns.tolist() == ["A^traj", "A^credit"]
    why = explain_disagreements(result, "hgpo", "graphhca")
    said = " ".join(why["why"])
    assert "history term A^k" in said or "episode term A^EP" in said
    assert "trajectory term A^traj" in said or "credit term A^credit" in said
