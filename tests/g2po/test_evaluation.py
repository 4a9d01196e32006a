"""Evaluation as in Table 1, on hand-built rows: ALFWorld task types from both backends' ids,
WebShop's score from the environment's reward, mean ± std over seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.evaluation import (
    ALFWORLD_TASK_TYPES,
    TASK_TYPE_LABELS,
    alfworld_task_types,
    episode_table,
    evaluation_metrics,
    metric_name,
    seed_table,
    summary_markdown,
    summary_table,
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
    assert row["n"] == 3
    one = stats.loc[("webshop:test", "g2po", "val/score")]
    assert one["n"] == 1 and np.isnan(one["std"])


def test_summary_has_table_1s_columns_in_percent():
    table = summary_table(_results()).set_index(["env", "estimator"])
    alf = table.loc[("alfworld:valid_seen", "g2po")]
    assert alf["All"] == "70.0 ± 20.0" and alf["Pick"] == "100.0 ± 0.0"
    assert alf["Pick2"] == "35.0 ± 10.0" and alf["n"] == 3
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
