import json
import random

import numpy as np
import torch

from g2po.synthetic import synthetic_steps
from g2po.trainers.checkpoint import (
    latest_checkpoint,
    list_checkpoints,
    load_trainer_state,
    restore_rng,
    rewind_run,
    rng_state,
    save_checkpoint,
)
from g2po.trainers.policy import load_model
from loaders import RunWriter, open_run
from tests.g2po.trainers.fixtures import tiny_path  # noqa: F401


def _draws(task_rng):
    return [random.random(), float(np.random.rand()), float(torch.rand(1)),
            float(task_rng.random())]


def test_every_generator_comes_back(tiny_path, tmp_path):  # noqa: F811
    model, tok = load_model(tiny_path, device=torch.device("cpu"), dtype=torch.float32)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.tensor([[1, 2, 3]])).logits.sum().backward()
    optim.step()  # the optimizer has moments to save
    task_rng = np.random.default_rng(3)
    ckpt = save_checkpoint(tmp_path / "checkpoints", 4, model, tok, optim, rng_state(task_rng))
    expected = _draws(task_rng)
    _draws(task_rng)  # move on
    state = load_trainer_state(ckpt)  # weights_only: nothing is unpickled
    restore_rng(state["rng"], task_rng)
    assert _draws(task_rng) == expected
    assert state["train_step"] == 4
    fresh = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fresh.load_state_dict(state["optimizer"])
    first = next(iter(fresh.state.values()))
    assert torch.equal(first["exp_avg"], next(iter(optim.state.values()))["exp_avg"])
    reloaded, _ = load_model(ckpt.path, device=torch.device("cpu"), dtype=torch.float32)
    for a, b in zip(model.parameters(), reloaded.parameters()):
        assert torch.equal(a, b)


def test_keeps_the_last_k_and_ignores_partial_saves(tiny_path, tmp_path):  # noqa: F811
    model, tok = load_model(tiny_path, device=torch.device("cpu"), dtype=torch.float32)
    optim = torch.optim.AdamW(model.parameters())
    rng = np.random.default_rng(0)
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, model, tok, optim, rng_state(rng), keep=2)
    assert [c.train_step for c in list_checkpoints(tmp_path)] == [2, 3]
    (tmp_path / ".tmp-step-000004-1").mkdir()  # a save killed midway
    (tmp_path / "step-000005").mkdir()  # no state file: not complete
    assert latest_checkpoint(tmp_path).train_step == 3
    assert latest_checkpoint(tmp_path / "nothing") is None


def test_rewind_forgets_later_steps(tmp_path):
    writer = RunWriter(tmp_path / "run", {"env": "demo"})
    for step in (1, 2, 3, 4):
        writer.write_step(step, synthetic_steps(50, seed=step), {"actor/pg_loss": step})
    metrics = tmp_path / "run" / "metrics.jsonl"
    with open(metrics, "a") as f:
        f.write('{"train_step": 5, "actor/pg')  # a line cut by a kill
    (tmp_path / "run" / "rollouts" / ".step-000005.parquet.tmp-9").write_bytes(b"x")
    (tmp_path / "run" / "checkpoints" / "step-000004").mkdir(parents=True)
    (tmp_path / "run" / "checkpoints" / "step-000004" / "trainer_state.pt").write_bytes(b"")

    assert rewind_run(tmp_path / "run", 2) == [3, 4]
    run = open_run(tmp_path / "run")
    assert run.train_steps() == [1, 2]
    lines = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert [x["train_step"] for x in lines] == [1, 2]
    assert not list((tmp_path / "run" / "rollouts").glob(".step-*"))
    assert latest_checkpoint(tmp_path / "run" / "checkpoints") is None
    assert run.metrics()["train_step"].tolist() == [1, 2]


def test_rewind_to_the_start(tmp_path):
    writer = RunWriter(tmp_path / "run", {"env": "demo"})
    writer.write_step(1, synthetic_steps(50))
    rewind_run(tmp_path / "run", 0)
    assert open_run(tmp_path / "run").train_steps() == []
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == ""


def test_resume_removes_folders_of_killed_saves(tmp_path):
    import os

    run = tmp_path / "run"
    writer = RunWriter(run, {})
    for step in (1, 2):
        writer.write_step(step, synthetic_steps(300, seed=step))
    stale = run / "checkpoints" / ".tmp-step-000002-99999"
    stale.mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(b"0" * 1000)
    mine = run / "checkpoints" / f".tmp-step-000003-{os.getpid()}"  # being written by us
    mine.mkdir()
    assert rewind_run(run, 1) == [2]
    assert not stale.exists() and mine.exists()
    assert open_run(run).train_steps() == [1]
