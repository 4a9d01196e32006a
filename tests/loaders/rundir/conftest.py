"""The run every run-directory test reads: three training steps of synthetic rows."""

from __future__ import annotations

import pytest

from g2po.synthetic import synthetic_steps
from loaders import RunWriter

MANIFEST = {"config": {"gamma": 0.95, "success_reward": 10.0}, "estimator": "g2po",
            "env": "demo", "model": "tiny"}


@pytest.fixture
def run(tmp_path):
    writer = RunWriter(tmp_path / "run", MANIFEST)
    for s in (1, 2, 3):
        writer.write_step(s, synthetic_steps(2500, seed=s), {"actor/loss": 0.1 * s})
    return tmp_path / "run"
