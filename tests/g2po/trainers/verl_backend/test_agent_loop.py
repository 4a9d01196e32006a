"""The g2po_env agent loop, run by verl's own agent-loop worker against a tiny transformer on the
bundled TextWorld environment; its outputs become v1 training rows in TransferQueue."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch

from g2po.agent_format import build_prompt, normalize_action, parse_action
from g2po.envs import make_env
from g2po.trainers.verl_backend.agent_loop import task_of_row
from g2po.trainers.verl_backend.rows import split_key
from tests.g2po.trainers.verl_backend.conftest import (
    ENV,
    MAX_STEPS,
    N_ROLLOUTS,
    RESPONSE_LENGTH,
    play,
)
from tests.g2po.trainers.verl_backend.servers import TransformerReplica

FIELDS = ["uid", "session_id", "prompts", "responses", "response_mask", "rm_scores",
          "rollout_log_probs", "extra_fields", "num_turns", "data_source"]


@pytest.fixture(scope="module")
def played(config, task_files, tiny_model_dir, transfer_queue):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(0)
    replica = TransformerReplica(model, tokenizer, RESPONSE_LENGTH, seed=0)
    result = play(config, replica, task_files[0])
    data = transfer_queue.kv_batch_get(keys=result.batch.keys, partition_id="train",
                                       select_fields=FIELDS)
    rows = []
    for i, key in enumerate(result.batch.keys):
        rows.append({field: data[field][i] for field in FIELDS} | {"key": key,
                                                                   "tag": result.batch.tags[i]})
    yield result, rows, tokenizer, replica
    transfer_queue.kv_clear(keys=result.batch.keys + result.uids, partition_id="train")


def sessions(rows):
    out = defaultdict(list)
    for row in rows:
        uid, session, index = split_key(row["key"])
        out[(uid, session)].append((index, row))
    return out


def test_every_session_of_every_task_gives_one_row_per_step(played):
    result, rows, _, _ = played
    by_session = sessions(rows)
    assert {uid for uid, _ in by_session} == set(result.uids)
    assert len(by_session) == len(result.uids) * N_ROLLOUTS
    for (uid, session), steps in by_session.items():
        indices = [i for i, _ in steps]
        assert indices == list(range(len(indices))) and 1 <= len(indices) <= MAX_STEPS
        records = [row["extra_fields"]["g2po_step"] for _, row in steps]
        assert [r["t"] for r in records] == indices
        # An episode stops early only when the environment says it is over.
        assert len(indices) == MAX_STEPS or records[-1]["done"]
        assert all(not r["done"] for r in records[:-1])
        for _, row in steps:
            assert row["uid"] == uid and str(row["session_id"]) == session
            record = row["extra_fields"]["g2po_step"]
            assert (record["group_id"], record["traj_id"]) == (uid, session)
            assert row["data_source"] == f"g2po/{ENV}" and row["num_turns"] == 2
    # One generation per row: nothing generated is dropped, nothing is made up.
    assert result.client.calls == len(rows)


def test_prompts_are_the_agent_format_and_what_the_server_saw(played):
    result, rows, tokenizer, replica = played
    sent = {tuple(p) for p in replica.prompts}
    for row in rows:
        assert tuple(row["prompts"].tolist()) in sent
        assert row["tag"]["prompt_len"] == len(row["prompts"])
    first = next(row for row in rows if split_key(row["key"])[2] == 0)
    spec, task = task_of_row({"extra_info": {"env": ENV, "task_id": result.tasks[
        split_key(first["key"])[0]]}})
    with make_env(spec, task) as env:
        start = env.reset()
        want = build_prompt(env.task, start.observation, start.admissible_actions, [],
                            history_length=2, role=env.role, action_hint=env.action_hint)
    assert tokenizer.decode(first["prompts"].tolist()) == want
    later = [row for row in rows if split_key(row["key"])[2] == 1]
    for row in later:
        text = tokenizer.decode(row["prompts"].tolist())
        assert "you have already taken 1 step(s)" in text


def test_responses_masks_and_log_probs(played):
    _, rows, tokenizer, _ = played
    for row in rows:
        n = len(row["responses"])
        assert 1 <= n <= RESPONSE_LENGTH and row["tag"]["response_len"] == n
        assert row["response_mask"].tolist() == [1] * n  # every response token is the model's
        logprobs = row["rollout_log_probs"]
        assert logprobs.shape == (n,) and bool((logprobs <= 0).all())
        record = row["extra_fields"]["g2po_step"]
        assert record["response"] == tokenizer.decode(row["responses"].tolist(),
                                                      skip_special_tokens=True)


def test_rewards_and_fields_are_on_every_row(played):
    result, rows, _, _ = played
    for (uid, _), steps in sessions(rows).items():
        records = [row["extra_fields"]["g2po_step"] for _, row in steps]
        reward = 10.0 if records[-1]["won"] else 0.0
        for _, row in steps:
            scores = row["rm_scores"]
            assert float(scores[-1]) == reward and float(scores[:-1].abs().sum()) == 0.0
            info = row["extra_fields"]["reward_extra_info"]
            assert info == {"won": float(reward > 0), "episode_reward": reward,
                            "steps": len(steps)}
        for record in records:
            assert record["episode_reward"] == reward
            assert record["env"] == ENV and record["task"] == result.tasks[uid]
            # TextWorld reports MiGPO's milestones: the steps that raised the score
            assert record["milestone_achieved"] is (record["step_reward"] > 0)
            action, tagged = parse_action(record["response"], None)
            if record["is_action_valid"]:  # the environment played the tagged action
                assert tagged and normalize_action(action) == normalize_action(record["action"])
            if not tagged:  # no <action> tag: never valid
                assert not record["is_action_valid"]


def test_rollouts_of_a_group_start_from_the_same_state(played):
    result, rows, _, _ = played
    starts = defaultdict(set)
    for row in rows:
        uid, _, index = split_key(row["key"])
        if index == 0:
            starts[uid].add(row["extra_fields"]["g2po_step"]["state_key"])
    assert all(len(keys) == 1 for keys in starts.values())
    assert len(set.union(*starts.values())) == len(result.uids)  # tasks differ


def test_invalid_actions_keep_the_state(played):
    _, rows, _, _ = played
    for steps in sessions(rows).values():
        records = [row["extra_fields"]["g2po_step"] for _, row in steps]
        for before, after in zip(records, records[1:]):
            if not before["is_action_valid"]:
                assert after["state_key"] == before["state_key"]


def make_loop(config, tokenizer):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from g2po.trainers.verl_backend.agent_loop import G2POEnvAgentLoop

    return G2POEnvAgentLoop(trainer_config=DictConfigWrap(config), server_manager=None,
                            tokenizer=tokenizer, processor=None, dataset_cls=RLHFDataset,
                            data_config=DictConfigWrap(config.data), hf_model_type="llama")


def test_a_tokenizer_without_chat_template_is_refused_with_the_fix(config, tiny_model_dir):
    from transformers import AutoTokenizer

    from g2po.trainers.verl_backend import VerlConfigError
    from g2po.trainers.verl_backend.flags import PLAIN_CHAT_TEMPLATE

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert not tokenizer.chat_template
    with pytest.raises(VerlConfigError, match="custom_chat_template"):
        make_loop(config, tokenizer)
    tokenizer.chat_template = PLAIN_CHAT_TEMPLATE
    loop = make_loop(config, tokenizer)
    assert loop.env_settings.name == ENV and loop.response_length == RESPONSE_LENGTH


def test_rows_without_a_task_are_named():
    from g2po.envs import EnvError

    with pytest.raises(EnvError, match="extra_info holds 'env' and 'task_id'"):
        task_of_row({"extra_info": {"index": 0}})
