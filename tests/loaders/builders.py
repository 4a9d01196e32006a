"""Logs the loader tests build on disk: step tables, verl dumps in verl's own layout."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from loaders.rundir import META_KEY

SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def step_table(groups: int = 2, trajs: int = 3, length: int = 3, train_step: int | None = None,
               seed: int = 0) -> pd.DataFrame:
    """A small valid step table: ``groups`` x ``trajs`` trajectories of 1..``length`` steps."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        for i in range(trajs):
            reward = 10.0 if (g + i) % 2 == 0 else 0.0
            for t in range(int(rng.integers(1, length + 1))):
                rows.append({"group_id": f"g{g}", "traj_id": f"r{i}", "t": t,
                             "state_key": f"room {t}", "action": f"go {(t + i) % 2}",
                             "episode_reward": reward, "is_action_valid": t % 3 != 2})
    frame = pd.DataFrame(rows)
    if train_step is not None:
        frame.insert(0, "train_step", train_step)
    return frame


def qwen_decoded(messages: list[tuple[str, str]], generation_prompt: bool = True) -> str:
    """A chat rendered with Qwen's template, then decoded with ``skip_special_tokens=True``
    (what verl's ``tokenizer.batch_decode(prompts, skip_special_tokens=True)`` returns)."""
    text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)
    if generation_prompt:
        text += "<|im_start|>assistant\n"
    return text.replace("<|im_start|>", "").replace("<|im_end|>", "")


def write_verl_dump(directory: Path, global_step: int, entries: list[dict]) -> Path:
    """Write ``{global_step}.jsonl`` exactly as verl 0.9.1's ``_write_generations`` does."""
    directory.mkdir(parents=True, exist_ok=True)
    filename = directory / f"{global_step}.jsonl"
    with open(filename, "w") as f:
        for entry in entries:
            f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
    return filename


def agent_loop_entries(global_step: int, prompts: int = 2, sessions: int = 2,
                       turns: int = 3, valid_extra: bool = False) -> list[dict]:
    """Lines of a v1-trainer agent-loop dump: ``uid`` = ``{uid}_{session}_{index}``, one line
    per turn, the final score copied onto every turn, sorted by (uid, session, index).

    Field order as verl builds it: input, output, gts, score, step, then the reward extras
    (here ``uid``, and ``is_action_valid`` when ``valid_extra``).
    """
    entries = []
    for p in range(prompts):
        uid = f"5f0c{p}e2a-91d3-4b7e-8c1a-0d2e6f{global_step:02d}{p:04d}"
        task = f"Your task is to: put a clean mug {p} on the shelf."
        for s in range(sessions):
            won = (p + s) % 2 == 0
            n = turns if won else turns + 1
            history: list[tuple[str, str]] = [("system", SYSTEM),
                                              ("user", f"{task}\nYou are in room 0.")]
            for i in range(n):
                action = f"go to room {i + 1}" if (i + s) % 3 else "look"
                output = f"<think>Turn {i}: try something.</think><action>{action}</action>"
                entry = {
                    "input": qwen_decoded(history),
                    "output": output,
                    "gts": None,
                    "score": 10.0 if won else 0.0,
                    "step": global_step,
                    "uid": f"{uid}_{s}_{i}",
                }
                if valid_extra:
                    entry["is_action_valid"] = action != "look"
                entries.append(entry)
                obs = "Nothing happens." if action == "look" else f"You are in room {i + 1}."
                history += [("assistant", output), ("user", obs)]
    return entries


def legacy_entries(global_step: int, prompts: int = 2, n: int = 3) -> list[dict]:
    """Lines of an older dump (legacy ``RayPPOTrainer``): no ``uid``; reward extras (``acc``)
    and ``request_id``; one line per whole trajectory."""
    entries = []
    for p in range(prompts):
        prompt = qwen_decoded([("system", SYSTEM), ("user", f"What is {p} + {p}?")])
        for k in range(n):
            correct = (p + k) % 2 == 0
            entries.append({
                "input": prompt,
                "output": f"The answer is {2 * p if correct else 2 * p + 1}.",
                "gts": str(2 * p),
                "score": 1.0 if correct else 0.0,
                "step": global_step,
                "acc": correct,
                "request_id": f"req-{global_step}-{p}-{k}",
            })
    return entries


def rewrite_footer(path: Path, edit: Callable[[dict], None] | bytes) -> None:
    """Rewrite a step file keeping its row groups, with its g2po.step footer edited."""
    file = pq.ParquetFile(path)
    meta = dict(file.schema_arrow.metadata)
    footer = json.loads(meta[META_KEY])
    if not isinstance(edit, bytes):
        edit(footer)  # edits in place
    meta[META_KEY] = edit if isinstance(edit, bytes) else json.dumps(footer)
    tables = [file.read_row_group(i) for i in range(file.num_row_groups)]
    schema = tables[0].schema.with_metadata(meta)
    with pq.ParquetWriter(path, schema) as writer:
        for table in tables:
            writer.write_table(table.replace_schema_metadata(meta))


def _curve_metrics(step: int, scale: float = 1.0) -> dict:
    """What verl's trainer logs at a step: its namespaces, numpy scalars among them."""
    out = {"actor/pg_loss": scale * 0.1 * step, "actor/entropy": np.float32(2.0 - 0.1 * step),
           "critic/score/mean": np.float64(scale * step), "timing_s/gen": 1.5 + step,
           "timing_s/step": 10.0 * step,
           "perf/throughput": 100.0 * step, "response_length/mean": 50.0 + step}
    if step % 2 == 0:
        out["val-core/alfworld/reward/mean@1"] = 0.1 * step
    return out


def _log_run(backends: list[str], steps, env: dict, scale: float = 1.0) -> None:
    """One verl run (or its resumption) logging ``steps`` through verl's ``Tracking``."""
    import pytest
    from verl.utils.tracking import Tracking

    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, str(value))
        tracker = Tracking(project_name="g2po", experiment_name="exp", default_backend=backends)
        for step in steps:
            tracker.log(data=_curve_metrics(step, scale), step=step)
        tracker.finish()


def write_verl_curves(root: Path) -> Path:
    """Training curves written by verl's own ``Tracking`` class under ``root`` (skips the test
    when verl or torch's TensorBoard writer is not installed; importing verl is slow):

    - ``both/exp.jsonl`` and ``both/tb/``: one run, steps 1-6, to the file and tensorboard
      backends at once;
    - ``resumed.jsonl``: steps 1-6, then a run resumed at step 4 logging 4-8 at twice the
      values (the file is opened "wb" again);
    - ``tensorboard_log/g2po/{a,b}``: TensorBoard's default layout with two runs; ``a`` steps
      1-6, resumed at 4 up to 8 at twice the values (a second event file); ``b`` steps 1-3;
    - ``root/g2po/exp.jsonl``: the file backend's default place under
      ``$VERL_FILE_LOGGER_ROOT``, steps 1-2.
    """
    import pytest

    pytest.importorskip("verl.utils.tracking")
    pytest.importorskip("torch.utils.tensorboard")
    both = root / "both"
    _log_run(["file", "tensorboard"], range(1, 7),
             {"VERL_FILE_LOGGER_PATH": both / "exp.jsonl", "TENSORBOARD_DIR": both / "tb"})
    resumed = root / "resumed.jsonl"
    _log_run(["file"], range(1, 7), {"VERL_FILE_LOGGER_PATH": resumed})
    _log_run(["file"], range(4, 9), {"VERL_FILE_LOGGER_PATH": resumed}, scale=2.0)
    tb = root / "tensorboard_log" / "g2po"
    _log_run(["tensorboard"], range(1, 7), {"TENSORBOARD_DIR": tb / "a"})
    _log_run(["tensorboard"], range(1, 4), {"TENSORBOARD_DIR": tb / "b"})
    _log_run(["tensorboard"], range(4, 9), {"TENSORBOARD_DIR": tb / "a"}, scale=2.0)
    _log_run(["file"], range(1, 3), {"VERL_FILE_LOGGER_ROOT": root / "root"})
    return root
