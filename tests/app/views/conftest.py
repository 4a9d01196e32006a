"""Fixtures of the page tests: a training run with a task column and namespaced metrics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from g2po.evaluation import episodes_metric
from loaders import RunWriter
from tests.app.builders import group_steps

TRAIN_STEPS = 4
#: The validation success the runs log (with its episode counts: a noise band), per task type.
VAL_SUCCESS = "val/success/cooking"
#: Episodes of each validation of :data:`VAL_SUCCESS`.
VAL_EPISODES = 16


def write_training_run(path: Path, train_steps: int = TRAIN_STEPS, seed: int = 0) -> Path:
    """A run whose groups get new ids at every training step (``s{step}-task-k``) while the
    ``task`` column names the task, and whose metrics span several namespaces; a validation
    of :data:`VAL_EPISODES` episodes at every step (its success rising, not one of the
    charts drawn before the user picks)."""
    writer = RunWriter(path, {"env": "synthetic", "config": {"success_reward": 10.0}})
    for step in range(1, train_steps + 1):
        steps = group_steps(seed=seed + step, rows=500)
        task = steps["group_id"].astype(str)
        steps = steps.assign(task=task, group_id=f"s{step}-" + task)
        writer.write_step(step, steps, {
            "actor/pg_loss": float(np.sin(step + seed)),
            "actor/kl_loss": 0.01 * step,
            "adv/ec/std": 1.0 + 0.1 * step,
            "timing_s/update": 2.0,
            "val-core/textworld/acc": 0.1 * step if step % 2 == 0 else None,
            VAL_SUCCESS: (2 + 3 * step + seed % 3) / VAL_EPISODES,
            episodes_metric(VAL_SUCCESS): VAL_EPISODES,
            "lr": 1e-6,
            "note": "text is not a series",
        })
    return path


@pytest.fixture(scope="session")
def training_runs(tmp_path_factory) -> Path:
    """A folder with two such runs, ``train_a`` and ``train_b``."""
    root = tmp_path_factory.mktemp("training")
    write_training_run(root / "train_a", seed=0)
    write_training_run(root / "train_b", train_steps=3, seed=5)
    return root


def assert_no_markup_from_logs(at) -> None:
    """Log text reaches markdown only escaped: no link, image, tag or formula forms."""
    import re

    assert not at.exception
    for element in (*at.markdown, *at.caption, *at.error, *at.warning, *at.info,
                    *at.subheader):
        assert not re.search(r"(?<!\\)(<|\]\(|\$x)", element.value), element.value


def write_shared_task_run(path: Path, train_steps: int = 3) -> Path:
    """A run where one task, ``cook``, is held by two groups at every training step
    (``c{step}-1`` in a kitchen, ``c{step}-2`` in a garden: their states differ), beside a
    task ``other`` in one group (``o{step}``). Successes are rewarded 10."""
    import pandas as pd

    writer = RunWriter(path, {"env": "synthetic", "config": {"success_reward": 10.0}})
    for step in range(1, train_steps + 1):
        rows = []
        for group, task, place in ((f"c{step}-1", "cook", "kitchen"),
                                   (f"c{step}-2", "cook", "garden"),
                                   (f"o{step}", "other", "hall")):
            for r in range(4):
                length = 2 + (r + step) % 3
                for t in range(length):
                    rows.append({"group_id": group, "traj_id": f"{group}:{r}", "t": t,
                                 "state_key": f"{place} room {min(t, 2 + r % 2)}",
                                 "action": "go" if (t + r) % 2 else "look",
                                 "episode_reward": 10.0 if r % 2 == 0 else 0.0,
                                 "is_action_valid": True, "task": task})
        writer.write_step(step, pd.DataFrame(rows))
    return path


@pytest.fixture(scope="session")
def shared_task_run(tmp_path_factory) -> Path:
    return write_shared_task_run(tmp_path_factory.mktemp("shared") / "shared")
