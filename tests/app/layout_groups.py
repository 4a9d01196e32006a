"""Generated groups of a chosen number of states, for the layout benchmark
(``scripts/bench_layout.py``) and the browser test of the explorer's first view."""

from __future__ import annotations

import pandas as pd

from g2po.analysis.state_graph import StateGraph, state_graph
from g2po.outcomes import OutcomeRule
from g2po.synthetic import synthetic_steps

SUCCESS_REWARD = 10.0


def layout_group(n_states: int, seed: int = 0) -> pd.DataFrame:
    """One generated group visiting about ``n_states`` states: 8 rollouts of up to 40 steps
    for the small ones (the shape of an ALFWorld group early in training), longer and more
    rollouts for the large ones. Group id ``rooms-<n_states>``."""
    rollouts = 8 if n_states <= 30 else 16
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
