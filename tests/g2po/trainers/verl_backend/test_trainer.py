"""The g2po trainer mode: verl's advantage hook on rows the agent loop wrote to TransferQueue,
with the g2po library's advantages, the diagnostics, and the rollouts in the run directory."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf
from transfer_queue import KVBatchMeta

from g2po import compute_advantages
from g2po.analysis.diagnostics import batch_metrics
from g2po.estimators import estimate
from g2po.trainers.verl_backend.rows import split_key
from g2po.trainers.verl_backend.settings import OWN_KEYS
from loaders import open_run
from tests.g2po.trainers.verl_backend.conftest import RESPONSE_LENGTH, play
from tests.g2po.trainers.verl_backend.servers import ScriptedReplica


@pytest.fixture(scope="module")
def scripted(config, task_files, tiny_model_dir, transfer_queue):
    """One training step's rows: scripted episodes that win, lose, merge and act invalidly."""
    from transformers import AutoTokenizer

    import g2po.trainers.verl_backend.plugin  # noqa: F401

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    result = play(config, ScriptedReplica(tokenizer, RESPONSE_LENGTH), task_files[0])
    # Stands in for the actor's log-prob pass (FSDP, on GPUs), which runs before the advantage:
    # verl's rollout correction in the advantage hook reads old_log_probs.
    data = transfer_queue.kv_batch_get(keys=result.batch.keys, partition_id="train",
                                       select_fields=["rollout_log_probs"])
    data["old_log_probs"] = data.pop("rollout_log_probs")
    transfer_queue.kv_batch_put(keys=result.batch.keys, partition_id="train", fields=data)
    yield result
    transfer_queue.kv_clear(keys=result.batch.keys + result.uids, partition_id="train")


@pytest.fixture
def trainer(config, tmp_path):
    """The registered trainer class, built by its real constructor (no GPU needed for that)."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    import g2po.trainers.verl_backend.plugin  # noqa: F401  (registers the g2po mode)

    cfg = OmegaConf.merge(config, {"g2po_log": {"run_dir": str(tmp_path / "run")}})
    OmegaConf.set_readonly(cfg, False)
    return get_trainer_cls(cfg.trainer.v1.trainer_mode)(cfg)


def step_table(tq, batch: KVBatchMeta) -> pd.DataFrame:
    """The batch's agent steps rebuilt independently from the stored rows (batch order)."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                           select_fields=["extra_fields", "rm_scores"])
    rows = []
    for key, extra, scores in zip(batch.keys, list(data["extra_fields"]), data["rm_scores"]):
        uid, session, index = split_key(key)
        record = extra["g2po_step"]
        rows.append({"group_id": uid, "traj_id": session, "t": index,
                     "state_key": record["state_key"], "action": record["action"],
                     "episode_reward": float(scores.sum()),
                     "is_action_valid": record["is_action_valid"]})
    return pd.DataFrame(rows)


def stored_advantages(tq, batch: KVBatchMeta) -> list[torch.Tensor]:
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                           select_fields=["advantages", "returns", "response_mask"])
    return [data["advantages"][i] for i in range(len(batch.keys))], data


def test_the_mode_behaves_as_verls_sync_mode(trainer):
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

    assert trainer.trainer_mode == "sync" and trainer.parameter_sync_step == 1
    assert isinstance(trainer.replay_buffer, ReplayBuffer)
    assert not isinstance(trainer.replay_buffer, ReplayBufferAsync)


def test_the_batch_is_a_realistic_one(transfer_queue, scripted):
    steps = step_table(transfer_queue, scripted.batch)
    assert (~steps["is_action_valid"]).any()
    assert steps["episode_reward"].gt(0).any() and steps["episode_reward"].eq(0).any()
    _, ix = estimate(steps)
    assert ix.n_nodes < len(steps)  # states merge


@pytest.mark.parametrize("estimator", ["g2po", "gigpo"])
def test_advantage_hook_matches_the_library(transfer_queue, scripted, trainer, estimator):
    trainer.config.algorithm.adv_estimator = estimator
    steps = step_table(transfer_queue, scripted.batch)
    metrics: dict = {}
    trainer._compute_advantage(scripted.batch, metrics)
    stored, data = stored_advantages(transfer_queue, scripted.batch)
    params = OmegaConf.to_container(trainer.config.algorithm[estimator], resolve=True)
    for key in OWN_KEYS:
        params.pop(key, None)
    want = compute_advantages(steps, estimator, **params)["adv"].to_numpy()
    assert np.abs(want).sum() > 0
    for i, row in enumerate(stored):
        mask = data["response_mask"][i].to(torch.float32)
        assert torch.equal(row, torch.tensor(want[i], dtype=torch.float32) * mask), i
        assert torch.equal(data["returns"][i], row)
    columns, ix = estimate(steps, estimator, **params)
    expected = batch_metrics(ix, columns)
    assert {k: metrics[k] for k in expected} == pytest.approx(expected)


def test_padding_rows_added_by_verl_get_zero(transfer_queue, scripted, trainer, config):
    from verl.trainer.ppo.padding_utils import upsample_batch_to_divisible_size

    n = len(scripted.batch.keys)
    batch = KVBatchMeta(partition_id="train", keys=list(scripted.batch.keys),
                        tags=[dict(t) for t in scripted.batch.tags])
    padded = upsample_batch_to_divisible_size(batch, n + 3, eos_token_id=1)
    assert len(padded.keys) == n + 3 and padded.tags[-1]["is_padding"]
    trainer._compute_advantage(padded, {})
    stored, _ = stored_advantages(transfer_queue, padded)
    assert all(float(row.abs().sum()) == 0.0 for row in stored[n:])
    steps = step_table(transfer_queue, scripted.batch)
    want = compute_advantages(steps, "g2po")["adv"].to_numpy()
    assert [float(r[0]) for r in stored[:n]] == pytest.approx(want.astype(np.float32).tolist())
    # what the trainer records as trained: the padding rows' 0, every real row's own value
    _, trained = trainer._trained
    assert [trained[k] for k in padded.keys[n:]] == [0.0, 0.0, 0.0]
    assert [trained[k] for k in padded.keys[:n]] == pytest.approx(want.tolist(), rel=1e-6)
    transfer_queue.kv_clear(keys=padded.keys[n:], partition_id="train")


def test_each_training_step_lands_in_the_run_directory(transfer_queue, scripted, trainer):
    metrics = {"actor/pg_loss": 0.5}  # what the actor update would have added
    trainer._compute_advantage(scripted.batch, metrics)
    # verl's own metrics pass over the batch, then ours writes the step.
    trainer.resource_pool_manager = SimpleNamespace(get_n_gpus=lambda: 1)
    timing = {"step": 2.0, "gen": 1.0, "adv": 0.1, "update_actor": 0.5}
    trainer._compute_metrics(scripted.batch, metrics, timing, global_steps=1, epoch=0)
    run = open_run(trainer.config.g2po_log.run_dir)
    assert run.train_steps() == [1]
    assert run.manifest["estimator"] == "g2po" and run.manifest["backend"] == "verl"
    logged = run.load_step(1)
    steps = step_table(transfer_queue, scripted.batch)
    key = ["group_id", "traj_id", "t"]
    logged = logged.sort_values(key).reset_index(drop=True)
    steps = steps.sort_values(key).reset_index(drop=True)
    for column in steps.columns:
        assert logged[column].tolist() == steps[column].tolist(), column
    assert logged["response"].str.len().gt(0).all()
    assert logged["response_tokens"].gt(0).all() and logged["prompt_tokens"].gt(0).all()
    line = run.metrics().iloc[0]
    assert line["train_step"] == 1 and line["actor/pg_loss"] == 0.5
    assert 0 <= line["g2po/merge_rate"] < 1 and "training/num_turns/mean" in line
    # The app recomputes exactly what the trainer optimised from the run's own record, and the
    # record holds the advantage each step was trained with (verl's float32 tokens).
    manifest = run.manifest
    recomputed = compute_advantages(logged, manifest["estimator"],
                                    state_key=manifest["state_key"],
                                    **manifest["estimator_params"])["adv"].to_numpy()
    assert np.abs(recomputed).sum() > 0 and logged["advantage"].dtype == np.float64
    assert logged["advantage"].tolist() == pytest.approx(recomputed, rel=1e-6, abs=1e-7)


def test_the_rollout_dump_carries_the_advantage_each_row_was_trained_with(
        transfer_queue, scripted, trainer, tiny_model_dir, tmp_path):
    """verl's trainer.rollout_data_dir lines get the key ``advantage``: the value on that row's
    tokens, so a dump can be audited without the run directory."""
    import json

    from transformers import AutoTokenizer

    trainer._compute_advantage(scripted.batch, {})
    stored, data = stored_advantages(transfer_queue, scripted.batch)
    on_tokens = {k: float(row[int(data["response_mask"][i].argmax())])
                 for i, (k, row) in enumerate(zip(scripted.batch.keys, stored))}
    trainer.tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    trainer.global_steps = 1
    trainer._init_dump_executor()
    trainer._log_rollout_data(scripted.batch, {}, str(tmp_path / "dump"))
    trainer._shutdown_dump_executor()
    lines = [json.loads(x) for x in (tmp_path / "dump" / "1.jsonl").read_text().splitlines()]
    assert sorted(x["uid"] for x in lines) == sorted(scripted.batch.keys)
    assert {x["uid"]: x["advantage"] for x in lines} == pytest.approx(on_tokens)
    assert any(x["advantage"] != 0 for x in lines)
