"""The local trainer's validation: held-out episodes written as the run beside the training
run, their metrics (g2po.evaluation's, recomputed from the rows) in both runs, success per
ALFWorld task type on generated games, training's sampling untouched, and resume."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from g2po.evaluation import ALFWORLD_TASK_TYPES, evaluation_metrics, validation_dir
from g2po.trainers.config import ConfigError
from g2po.trainers.local import train
from loaders import open_run
from tests.g2po.trainers.fixtures import ENV, small_config, tiny_path  # noqa: F401

pytestmark = [pytest.mark.verl, pytest.mark.filterwarnings("ignore:.*engine is not available")]


def _quiet(_line: str) -> None:
    pass


def _metric_lines(run_dir) -> list[int]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["train_step"] for line in lines]


def test_validation_run_beside_the_training_run(tiny_path, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    config = small_config(val_tasks=2, val_every=1, val_before_train=True, threads=1)
    result = train(config, out, log=_quiet)
    assert sorted(result.validations) == [0, 1, 2]

    val = open_run(validation_dir(out))
    assert val.train_steps() == [0, 1, 2]
    assert val.manifest["validation_of"] == str(out) and val.manifest["env"] == ENV
    assert len(val.manifest["tasks"]) == 2
    train_metrics = open_run(out).metrics().set_index("train_step")
    val_metrics = val.metrics().set_index("train_step")
    for step in (0, 1, 2):
        rows = val.load_step(step)
        assert rows.groupby(["group_id", "traj_id"]).ngroups == 2  # 2 tasks x 1 episode
        assert rows["t"].max() < config.max_steps
        own = evaluation_metrics(rows, config.outcome, env=ENV)
        assert {k: val_metrics.loc[step, k] for k in own} == own
        assert result.validations[step] == {**own, "time/validate_s":
                                            result.validations[step]["time/validate_s"]}
        if step:  # the training step's line carries its validation too
            assert train_metrics.loc[step, "val/success"] == own["val/success"]
    # validation tasks are held out: other games than training's pool
    train_tasks = set(open_run(out).load_step(1)["group_id"])
    assert not train_tasks & set(val.load_step(1)["group_id"])

    # validating draws from its own random stream: training samples what it would without
    plain = tmp_path / "plain"
    train(small_config(threads=1), plain, log=_quiet)
    for step in (1, 2):
        a, b = (open_run(p).load_step(step) for p in (out, plain))
        pd.testing.assert_series_equal(a["response"], b["response"])

    # resuming validates the new steps only, each logged once
    train(config.replace(total_steps=3), out, log=_quiet)
    assert open_run(validation_dir(out)).train_steps() == [0, 1, 2, 3]
    assert _metric_lines(validation_dir(out)) == [0, 1, 2, 3]

    # one panel: recorded in both runs, played whole at every validation, before and after
    # the resume (which drew its panel again from the settings and found the same)
    panel = open_run(out).manifest["validation_panel"]
    assert panel == open_run(validation_dir(out)).manifest["validation_panel"]
    assert panel["env"] == ENV and panel["episodes"] == 2 and len(panel["tasks"]) == 2
    val = open_run(validation_dir(out))
    for step in (0, 1, 2, 3):
        played = val.load_step(step).groupby("group_id")["traj_id"].nunique()
        assert played.to_dict() == dict.fromkeys(panel["tasks"], 1), step


def test_a_resume_that_would_validate_on_another_panel_is_refused(tiny_path, tmp_path):  # noqa: F811
    """Settings that list the tasks are part of the run (val_tasks, val_seed, … may not
    change); a panel listed otherwise by the same settings (an environment whose task list
    changed since) is refused too, before anything is trained or rewound."""
    out = tmp_path / "run"
    config = small_config(total_steps=1, val_tasks=2, threads=1)
    train(config, out, log=_quiet)
    with pytest.raises(ConfigError, match=r"another configuration \(val_tasks: 2 -> 3\)"):
        train(config.replace(total_steps=2, val_tasks=3), out, log=_quiet)
    manifest = json.loads((out / "run.json").read_text())
    recorded = manifest["validation_panel"]["tasks"]
    manifest["validation_panel"]["tasks"] = [recorded[0], "another-game"]
    (out / "run.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match=r"validated on another panel of tasks \(1 task\(s\) "
                                          r"left out.*'another-game'.*val_env, val_tasks"):
        train(config.replace(total_steps=2), out, log=_quiet)
    assert open_run(out).train_steps() == [1]  # nothing was trained or rewound


@pytest.mark.slow
def test_validation_on_generated_alfworld_reports_each_task_type(tiny_path, tmp_path):  # noqa: F811
    """Training on TextWorld, validating on six generated ALFWorld games (one per task type,
    ALFRED's in-distribution floor plans): every task type gets its success and count."""
    out = tmp_path / "run"
    config = small_config(total_steps=1, val_tasks=6, val_env="alfworld:generated-valid_seen",
                          threads=1)
    result = train(config, out, log=_quiet)
    metrics = result.validations[1]
    for task_type in ALFWORLD_TASK_TYPES:
        assert metrics[f"val/episodes/{task_type}"] == 1.0
        assert metrics[f"val/success/{task_type}"] in (0.0, 1.0)
    assert metrics["val/episodes"] == 6.0
    val = open_run(validation_dir(out))
    assert val.manifest["env"] == "alfworld:generated-valid_seen"
    assert val.load_step(1)["group_id"].str.startswith("valid_seen/").all()
    logged = open_run(out).metrics().set_index("train_step").loc[1]
    assert logged["val/success/pick_two_obj_and_place"] == \
        metrics["val/success/pick_two_obj_and_place"]
