"""Evaluation as in Table 1, on hand-built rows: ALFWorld task types from both backends' ids,
WebShop's score from the environment's reward, mean ± std (SE) over seeds; and evaluation you
can trust: one recorded panel, a noise band from its size, the bias of a best step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.evaluation import (
    ALFWORLD_TASK_TYPES,
    TASK_TYPE_LABELS,
    PanelChangedError,
    ValidationPanel,
    alfworld_task_types,
    best_step_bias,
    episode_table,
    episodes_metric,
    evaluation_metrics,
    expected_max_normal,
    metric_name,
    proportion_band,
    seed_table,
    summary_markdown,
    summary_table,
    validation_curve,
    validation_dir,
)
from g2po.outcomes import OutcomeRule


def _episodes(specs: list[tuple[str, str, float, int]], **columns) -> pd.DataFrame:
    """Step rows: per (group_id, traj_id, episode_reward, length) one episode."""
    rows = []
    for group, traj, reward, length in specs:
        for t in range(length):
            rows.append({"group_id": group, "traj_id": traj, "t": t, "state_key": f"s{t}",
                         "action": "a", "episode_reward": reward, "is_action_valid": True,
                         **{k: v(group, traj, t, length) for k, v in columns.items()}})
    return pd.DataFrame(rows)


def test_task_types_of_downloaded_and_generated_ids():
    ids = pd.Series([
        "pick_two_obj_and_place-Pencil-None-Drawer-306/trial_T20190908_121952_610012",
        "valid_seen/pick_heat_then_place_in_recep-s3",
        "train/pick_and_place_simple-s0:2",  # the local collector's trajectory id
        "look_at_obj_in_light",
        "pick_two_obj_and_placement/x",  # not a type: the name goes on
        "textworld-coin-1",
    ])
    assert alfworld_task_types(ids).tolist() == [
        "pick_two_obj_and_place", "pick_heat_then_place_in_recep", "pick_and_place_simple",
        "look_at_obj_in_light", None, None]
    assert set(TASK_TYPE_LABELS) == set(ALFWORLD_TASK_TYPES) and len(ALFWORLD_TASK_TYPES) == 6


def test_alfworld_success_per_task_type_and_overall():
    # local rows: the group is the task id; verl rows: a uid group, the task id in `task`
    specs = [("valid_seen/pick_and_place_simple-s0", "0", 10.0, 3),
             ("valid_seen/pick_and_place_simple-s0", "1", 0.0, 5),
             ("valid_seen/pick_two_obj_and_place-s1", "0", 10.0, 2),
             ("6f1c-42", "0", 0.0, 4), ("6f1c-42", "1", 10.0, 1)]
    task = {"6f1c-42": "pick_cool_then_place_in_recep-Apple-None-Fridge-7/trial_T1"}
    steps = _episodes(specs, task=lambda g, *_: task.get(g, "put a pencil in a drawer"),
                      env=lambda *_: "alfworld:valid_seen")
    metrics = evaluation_metrics(steps, OutcomeRule())
    assert metrics == {
        "val/success": 3 / 5, "val/episodes": 5.0,
        "val/success/pick_and_place_simple": 0.5, "val/episodes/pick_and_place_simple": 2.0,
        "val/success/pick_two_obj_and_place": 1.0, "val/episodes/pick_two_obj_and_place": 1.0,
        "val/success/pick_cool_then_place_in_recep": 0.5,
        "val/episodes/pick_cool_then_place_in_recep": 2.0,
    }
    episodes = episode_table(steps, OutcomeRule())
    assert episodes["length"].tolist() == [3, 5, 2, 4, 1]
    # the run's outcome rule decides success (a threshold counts 5.0 as success too)
    half = steps.assign(episode_reward=steps["episode_reward"].replace(0.0, 5.0))
    assert evaluation_metrics(half, OutcomeRule(success_threshold=5.0))["val/success"] == 1.0


def test_webshop_score_is_the_environments_reward_and_success_the_rule():
    # WebShop pays its purchase score on the last step; won = score 1 -> episode reward 10
    scores = {"goal1": [0.0, 0.0, 1.0], "goal2": [0.0, 0.75], "goal3": [0.0, 0.0, 0.0, 0.0]}
    specs = [(g, "0", 10.0 if s[-1] == 1.0 else 0.0, len(s)) for g, s in scores.items()]
    steps = _episodes(specs, step_reward=lambda g, _, t, n: scores[g][t],
                      env=lambda *_: "webshop:test")
    metrics = evaluation_metrics(steps, OutcomeRule())
    assert metrics[metric_name("score")] == pytest.approx((1.0 + 0.75 + 0.0) / 3)
    assert metrics[metric_name("success")] == pytest.approx(1 / 3)
    assert set(metrics) == {"val/success", "val/episodes", "val/score"}  # no task types
    # no score where the environment grades nothing, or the rows lack its reward
    assert "val/score" not in evaluation_metrics(steps.assign(env="textworld:x"), OutcomeRule())
    assert "val/score" not in evaluation_metrics(steps.drop(columns="step_reward"),
                                                 OutcomeRule(), env="webshop:test")


def test_metric_names_are_checked_and_bad_rows_named():
    with pytest.raises(ValueError, match="ALFWorld task type"):
        metric_name("success", "pick_and_place")
    with pytest.raises(ValueError, match="measure"):
        metric_name("reward")
    with pytest.raises(ValueError, match="episode_reward"):
        evaluation_metrics(pd.DataFrame({"group_id": ["a"], "traj_id": ["0"]}), OutcomeRule())
    with pytest.raises(ValueError, match="empty"):
        evaluation_metrics(_episodes([]).reindex(columns=["group_id", "traj_id", "t",
                                                          "episode_reward"]), OutcomeRule())
    assert validation_dir("runs/a/").as_posix() == "runs/a-val"


def _results() -> pd.DataFrame:
    rows = []
    for estimator, successes in (("g2po", [0.5, 0.7, 0.9]), ("grpo", [0.2, 0.4, 0.3])):
        for seed, s in enumerate(successes):
            rows.append({"env": "alfworld:valid_seen", "estimator": estimator, "seed": seed,
                         "val/success": s, "val/success/pick_and_place_simple": 1.0,
                         "val/success/pick_two_obj_and_place": s / 2, "val/episodes": 128.0})
    rows.append({"env": "webshop:test", "estimator": "g2po", "seed": 0, "val/success": 0.25,
                 "val/score": 0.625})
    return pd.DataFrame(rows)


def test_seed_table_is_mean_and_sample_std_over_seeds():
    stats = seed_table(_results()).set_index(["env", "estimator", "metric"])
    row = stats.loc[("alfworld:valid_seen", "g2po", "val/success")]
    assert row["mean"] == pytest.approx(0.7) and row["std"] == pytest.approx(0.2)
    assert row["n"] == 3 and row["se"] == pytest.approx(0.2 / np.sqrt(3))
    # one run's own noise: sqrt(p(1-p)/128) at p = 0.5, 0.7, 0.9, averaged
    want = np.mean([np.sqrt(p * (1 - p) / 128) for p in (0.5, 0.7, 0.9)])
    assert row["panel_se"] == pytest.approx(want)
    assert np.isnan(stats.loc[("webshop:test", "g2po", "val/success"), "panel_se"])
    one = stats.loc[("webshop:test", "g2po", "val/score")]
    assert one["n"] == 1 and np.isnan(one["std"])


def test_summary_has_table_1s_columns_in_percent():
    table = summary_table(_results()).set_index(["env", "estimator"])
    alf = table.loc[("alfworld:valid_seen", "g2po")]
    assert alf["All"] == "70.0 ± 20.0 (SE 11.5)" and alf["Pick"] == "100.0 ± 0.0 (SE 0.0)"
    assert alf["Pick2"] == "35.0 ± 10.0 (SE 5.8)" and alf["n"] == 3
    assert list(table.columns[:3]) == ["Pick", "Pick2", "All"]  # ALFWorld's order
    web = table.loc[("webshop:test", "g2po")]
    assert web["Score"] == "62.5" and web["Succ."] == "25.0"  # one seed: the mean alone
    text = summary_markdown(_results())
    assert "### alfworld:valid\\_seen" in text and "| g2po | 62.5 | 25.0 | 1 |" in text
    assert "| estimator | Pick | Pick2 | All | n |" in text  # no empty WebShop columns


def test_summary_markdown_escapes_names_from_manifests():
    results = _results().assign(estimator="[x](http://e.example)|*b*")
    text = summary_markdown(results)
    assert "\\[x\\](http://e.example)\\|\\*b\\*" in text and "[x](" not in text


# -- evaluation you can trust -------------------------------------------------------------------
def test_a_panel_round_trips_and_refuses_another():
    panel = ValidationPanel("alfworld:valid_seen", ("t1", "t2", "t3"), rollouts=2)
    assert panel.episodes == 6
    panel.check_same(None, "run")  # nothing recorded yet
    panel.check_same(panel.as_dict(), "run")
    other = ValidationPanel("alfworld:valid_seen", ("t1", "t2", "t4"), rollouts=2)
    with pytest.raises(PanelChangedError, match=r"run: .*1 task\(s\) left out \(first: "
                                                r"\['t3'\]\), 1 new \(first: \['t4'\]\)"):
        other.check_same(panel.as_dict(), "run")
    with pytest.raises(PanelChangedError, match="the same tasks in another order"):
        ValidationPanel("alfworld:valid_seen", ("t3", "t2", "t1"), 2).check_same(
            panel.as_dict(), "run")
    with pytest.raises(PanelChangedError, match=r"x 2 episode\(s\) per task, now .* x 1"):
        ValidationPanel("alfworld:valid_seen", panel.tasks, 1).check_same(panel.as_dict(), "r")
    with pytest.raises(ValueError, match="each task once; repeated: t1"):
        ValidationPanel("e", ("t1", "t1"))


def test_the_noise_band_is_the_binomial_one_and_honest_at_the_ends():
    se, low, high = proportion_band(np.array([0.5, 0.0, 1.0]), np.array([100, 16, 16]))
    assert se.tolist() == pytest.approx([0.05, 0.0, 0.0])
    # Wilson at 50 of 100: 0.4038 to 0.5962; at 0 of 16 the band still reaches 19.4 %
    assert low.tolist() == pytest.approx([0.4038, 0.0, 0.8064], abs=1e-4)
    assert high.tolist() == pytest.approx([0.5962, 0.1936, 1.0], abs=1e-4)
    # the band holds the true rate 95 % of the time: 20,000 validations of 64 episodes at 0.3
    rng = np.random.default_rng(0)
    seen = rng.binomial(64, 0.3, size=20_000) / 64
    _, low, high = proportion_band(seen, np.full(seen.shape, 64))
    assert np.mean((low <= 0.3) & (0.3 <= high)) == pytest.approx(0.95, abs=0.01)


def test_validation_curve_band_and_window_mean():
    metrics = pd.DataFrame({  # a training line without validation between validations
        "train_step": [1, 5, 6, 10, 15],
        "val/success": [np.nan, 0.25, np.nan, 0.5, 1.0],
        "val/episodes": [np.nan, 16, np.nan, 16, 8]})
    curve = validation_curve(metrics, window=2)
    assert curve["train_step"].tolist() == [5, 10, 15]
    assert curve["se"].tolist() == pytest.approx([np.sqrt(0.25 * 0.75 / 16), 0.125, 0.0])
    # the window pools its episodes: (4 + 8) / 32, then (8 + 8) / 24
    assert curve["window_mean"].tolist() == pytest.approx([0.25, 0.375, 16 / 24])
    assert curve["window_episodes"].tolist() == [16, 32, 24]
    _, low, high = proportion_band(np.array([16 / 24]), np.array([24]))
    assert (curve["window_low"].iloc[2], curve["window_high"].iloc[2]) == \
        pytest.approx((low[0], high[0]))
    assert (curve["low"] <= curve["value"]).all() and (curve["value"] <= curve["high"]).all()
    typed = validation_curve(metrics.rename(columns={
        "val/success": "val/success/pick_and_place_simple",
        "val/episodes": "val/episodes/pick_and_place_simple"}),
        "val/success/pick_and_place_simple", window=1)
    assert typed["window_mean"].tolist() == typed["value"].tolist()
    assert episodes_metric("val/score") is None
    with pytest.raises(ValueError, match="not a validation success proportion"):
        validation_curve(metrics, "val/score")
    with pytest.raises(ValueError, match="lack val/episodes"):
        validation_curve(metrics.drop(columns="val/episodes"))


def test_the_best_of_n_validations_is_biased_by_the_expected_maximum():
    # E[max of n standard normals]: 1/sqrt(pi) for two; the reports' "~1.5 sd" near n = 10
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-6)
    assert expected_max_normal(10) == pytest.approx(1.5388, abs=1e-4)
    # simulated: 30 validations of 128 episodes of a policy at a 60 % plateau
    rng = np.random.default_rng(1)
    best = (rng.binomial(128, 0.6, size=(20_000, 30)) / 128).max(axis=1)
    assert best.mean() - 0.6 == pytest.approx(best_step_bias(0.6, 128, 30), rel=0.03)
    assert best_step_bias(0.6, 128, 1) == 0.0
