"""Generated groups of a chosen number of states, for the layout benchmark
(``scripts/bench_layout.py``) and the browser tests of the explorer's first view and matrix:
as a step table, a state graph, or a verl rollout dump."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from g2po.analysis.state_graph import StateGraph, state_graph
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps
from tests.loaders.builders import SYSTEM, qwen_decoded, write_verl_dump

SUCCESS_REWARD = 10.0


def layout_group(n_states: int, seed: int = 0, rollouts: int | None = None) -> pd.DataFrame:
    """One generated group visiting about ``n_states`` states: 8 rollouts (or ``rollouts``) of
    up to 40 steps for the small ones (the shape of an ALFWorld group early in training),
    longer and more rollouts for the large ones. Group id ``rooms-<n_states>``."""
    rollouts = rollouts or (8 if n_states <= 30 else 16)
    max_len = max(40, int(n_states * 0.8))
    steps = synthetic_steps(int(rollouts * (1 + max_len) / 2), rollouts=rollouts,
                            max_len=max_len, states_per_task=n_states, key_chars=80,
                            seed=seed)
    first = steps["group_id"] == steps["group_id"].iloc[0]
    return steps[first].assign(group_id=f"rooms-{n_states}",
                               observation=lambda f: f["state_key"])


def layout_graph(n_states: int, seed: int = 0) -> StateGraph:
    return state_graph(layout_group(n_states, seed),
                       rule=OutcomeRule(success_reward=SUCCESS_REWARD))


def write_verl_group(directory: Path, n_states: int, seed: int = 0,
                     rollouts: int | None = None) -> str:
    """A verl rollout dump (``directory/1.jsonl``, verl 0.9.1's multi-turn agent-loop shape:
    one line per turn, ``uid`` = ``{uid}_{session}_{turn}``, the episode's score on every turn)
    of the rollouts of :func:`layout_group`: one group of about ``n_states`` states. Returns
    the group's id (its uid)."""
    steps = layout_group(n_states, seed, rollouts)
    uid = f"5f0c0e2a-91d3-4b7e-8c1a-{n_states:04d}{seed:08d}"
    entries = []
    for session, (_, rows) in enumerate(steps.groupby("traj_id", sort=False)):
        history = [("system", SYSTEM)]
        for turn, row in enumerate(rows.sort_values("t").itertuples()):
            history.append(("user", str(row.state_key)))
            output = f"<think>turn {turn}</think><action>{row.action}</action>"
            entries.append({"input": qwen_decoded(history), "output": output, "gts": None,
                            "score": float(row.episode_reward), "step": 1,
                            "uid": f"{uid}_{session}_{turn}"})
            history.append(("assistant", output))
    write_verl_dump(directory, 1, entries)
    return uid
