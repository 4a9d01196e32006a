"""The ``g2po_env`` agent loop: one rollout of a multi-turn text environment inside verl.

verl runs one agent loop per (task row, session); the N sessions of a row are the group. This
loop plays the row's task (``extra_info.env`` / ``extra_info.task_id``, written by
:mod:`g2po.trainers.verl_backend.data`), so every rollout of a group starts from the same
initial state. Each step:

1. the prompt is the agent format's (:func:`g2po.agent_format.build_prompt`: the task, the last
   ``g2po_env.history_length`` steps and the admissible actions), sent as one user message
   through the model's chat template;
2. the rollout server generates the response (the paper's ``<think>…</think><action>…</action>``);
3. the environment projects it to an action (:func:`g2po.agent_format.parse_action`); an invalid
   one is a no-op flagged ``is_action_valid=False`` (the estimator's penalty acts on it).

The loop returns one :class:`AgentLoopOutput` per step; verl turns each into a training row
keyed ``{uid}_{session}_{step}``. Every output carries the episode reward as ``reward_score``
and ``extra_fields["g2po_step"]`` (group and trajectory ids, step, state key, action, validity,
episode reward, the step columns an estimator declares that the environment reports, …),
which the G2PO trainer reads back. ``extra_fields["reward_extra_info"]`` is
set on every output: verl copies the last output's reward onto the earlier ones and reads that
field while doing so.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from g2po.agent_format import build_prompt
from g2po.envs import EnvError, StepResult, env_family
from g2po.envs.base import EnvFamily
from g2po.rollouts import reported_columns
from g2po.trainers.verl_backend.flags import PLAIN_CHAT_TEMPLATE
from g2po.trainers.verl_backend.settings import (
    AGENT_LOOP,
    STEP_FIELD,
    EnvSettings,
    VerlConfigError,
    env_settings,
)

__all__ = ["G2POEnvAgentLoop", "STEP_FIELD", "task_of_row", "cached_family"]

_FAMILIES: dict[tuple[str, str], EnvFamily] = {}
_FAMILIES_LOCK = threading.Lock()


def cached_family(settings: EnvSettings, spec: str) -> EnvFamily:
    """The environment family of ``spec``, made once per process (WebShop loads its server,
    TextWorld keeps its generated games)."""
    key = settings.family_key(spec)
    with _FAMILIES_LOCK:
        if key not in _FAMILIES:
            _FAMILIES[key] = env_family(spec, **settings.env_kwargs)
        return _FAMILIES[key]


def task_of_row(row: dict[str, Any]) -> tuple[str, str]:
    """``(env spec, task id)`` of a dataset row; raises :class:`EnvError` naming what is
    missing (rows come from :func:`g2po.trainers.verl_backend.data.task_rows`)."""
    info = row.get("extra_info")
    if not isinstance(info, dict) or not info.get("env") or not info.get("task_id"):
        raise EnvError(
            f"the {AGENT_LOOP} agent loop needs dataset rows whose extra_info holds 'env' and "
            f"'task_id' (got extra_info={info!r}); write them with data.train_files=auto or "
            "g2po.trainers.verl_backend.data.write_task_files")
    return str(info["env"]), str(info["task_id"])


@register(AGENT_LOOP)
class G2POEnvAgentLoop(AgentLoopBase):
    """Plays one episode of the row's task; returns one output per environment step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not getattr(self.tokenizer, "chat_template", None):
            raise VerlConfigError([
                "the model's tokenizer has no chat template, and the agent loop sends each "
                "prompt as a user message: set actor_rollout_ref.model.custom_chat_template "
                f"(for a model trained on bare prompts, like the tiny one: "
                f"'{PLAIN_CHAT_TEMPLATE}'; `--model tiny` sets it)"])
        self.env_settings = env_settings(self.config)
        self.response_length = int(self.rollout_config.response_length)

    async def _call(self, fn, *args):
        """Run a blocking environment call off the event loop (other rollouts keep going)."""
        return await self.loop.run_in_executor(None, fn, *args)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        spec, task_id = task_of_row(kwargs)
        settings = self.env_settings
        family = await self._call(cached_family, settings, spec)
        env = await self._call(family.make, task_id)
        outputs: list[AgentLoopOutput] = []
        records: list[dict[str, Any]] = []
        try:
            result: StepResult = await self._call(env.reset)
            history: list[tuple[str, str]] = []
            request_id = uuid4().hex  # one per episode: its turns stick to one server
            for t in range(settings.max_steps):
                if result.done:
                    break
                prompt = build_prompt(env.task, result.observation, result.admissible_actions,
                                      history, history_length=settings.history_length,
                                      role=env.role, action_hint=env.action_hint)
                output, text = await self._generate(request_id, prompt, sampling_params)
                before = result
                result = await self._call(env.step, text)
                history.append((before.observation, result.action))
                records.append({
                    "group_id": str(kwargs.get("uid", "")),
                    "traj_id": str(kwargs.get("session_id", "")),
                    "t": t, "state_key": before.state_key, "observation": before.observation,
                    "action": result.action, "response": text,
                    "is_action_valid": bool(result.is_action_valid),
                    "step_reward": float(result.reward), "done": bool(result.done),
                    "won": bool(result.won), "env": spec, "task": task_id,
                    **reported_columns(env, result),
                })
                outputs.append(output)
        finally:
            await self._call(env.close)
        won = bool(result.won)
        reward = settings.success_reward if won else 0.0
        summary = {"won": float(won), "episode_reward": reward, "steps": len(outputs)}
        for output, record in zip(outputs, records):
            record["episode_reward"] = reward
            output.reward_score = reward
            output.extra_fields[STEP_FIELD] = record
            output.extra_fields["reward_extra_info"] = dict(summary)
        return outputs

    async def _generate(self, request_id: str, prompt: str, sampling_params: dict[str, Any]
                        ) -> tuple[AgentLoopOutput, str]:
        """One model turn: the prompt as a user message, the response and its tokens."""
        messages = [{"role": "user", "content": prompt}]
        prompt_ids = await self.ct_build_initial_tokens(messages)
        start = time.perf_counter()
        generated = await self.server_manager.generate(
            request_id=request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)
        elapsed = time.perf_counter() - start
        logprobs = generated.log_probs or None
        merged, response_mask, response_logprobs = await self.ct_merge_assistant_token(
            prompt_ids, generated.token_ids, [], [] if logprobs else None,
            assistant_logprobs=logprobs)
        n = len(response_mask)
        response_ids = merged.token_ids[len(merged.token_ids) - n:] if n else []
        prompt_ids = merged.token_ids[:len(merged.token_ids) - n]
        limit = self.response_length
        response_ids, response_mask = response_ids[:limit], response_mask[:limit]
        text = self.tokenizer.decode(response_ids, skip_special_tokens=True)
        output = AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids,
            response_mask=response_mask,
            response_logprobs=response_logprobs[:limit] if response_logprobs else None,
            num_turns=2,
            metrics=AgentLoopMetrics(
                generate_sequences=elapsed,
                num_preempted=generated.num_preempted if generated.num_preempted is not None
                else -1),
            extra_fields=dict(generated.extra_fields),
        )
        return output, text
