"""Credit alarms: per group, the places where G2PO's credit is likely not what the user thinks.

Each alarm names the steps it is about, so a view can show them:

- ``aliased``: a state node where one action led to both success and failure, or whose merged
  step values vary widely; merging may hide a difference the state key leaves out;
- ``penalty_amplification``: under ``mean_std_norm``, a group whose rollouts all got the same
  reward, so the only spread left is the invalid-action penalty, which normalisation turns into
  unit-size advantages (invalid steps strongly negative, every valid step positive, whatever it
  did);
- ``disagreement``: steps where G2PO's and GRPO's advantages have opposite signs;
- ``truncation``: trajectories cut at the step limit, valued as failures;
- ``no_merging``: a merge rate near 0 (the state key probably includes the history or a step
  counter), so the graph is a set of chains and the node terms carry no signal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from g2po.estimators import compute_advantages
from g2po.graph import StateGraph
from g2po.steps import OPTIONAL_COLUMNS, REQUIRED_COLUMNS

__all__ = ["Alarm", "credit_alarms", "ALARM_KINDS"]

ALARM_KINDS = ("aliased", "penalty_amplification", "disagreement", "truncation", "no_merging")
#: A node's value spread (std of its merged step values) counts as high at this share of the
#: success reward.
VALUE_STD_SHARE = 0.25
#: Merge rates below this count as "no merging".
NO_MERGE_RATE = 0.05


@dataclass(frozen=True)
class Alarm:
    """One credit alarm of a group.

    kind : one of :data:`ALARM_KINDS`.
    title : a short name with the count.
    detail : one or two sentences saying what was found and why it matters.
    count : how many nodes, steps or trajectories it is about (the unit is in ``title``).
    steps : (traj_id, t) of the steps concerned.
    nodes : node ids concerned (may be empty).
    """

    kind: str
    title: str
    detail: str
    count: int
    steps: pd.DataFrame
    nodes: tuple[int, ...] = ()


def _pairs(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[["traj_id", "t"]].sort_values(["traj_id", "t"]).reset_index(drop=True)


def credit_alarms(
    graph: StateGraph,
    *,
    gamma: float = 0.95,
    w: float = 1.0,
    mode: str = "mean_std_norm",
    penalty: float = 0.1,
    success_reward: float = 10.0,
    terminal: str = "binary",
    state_key: str = "exact",
    success_threshold: float | None = None,
) -> list[Alarm]:
    """The alarms that fire for one group's graph (built with the same parameters).

    G2PO and GRPO advantages come from :func:`g2po.compute_advantages` on the group's rows, so
    the numbers are exactly those the trainer would use.

    Examples
    --------
    >>> import pandas as pd
    >>> from g2po.graph import state_graph
    >>> steps = pd.DataFrame({"group_id": "g", "traj_id": ["a", "a", "b", "b"],
    ...     "t": [0, 1, 0, 1], "state_key": ["s0", "s1", "s0", "s1"], "action": "go",
    ...     "episode_reward": 0.0, "is_action_valid": [True, False, True, True]})
    >>> [a.kind for a in credit_alarms(state_graph(steps))]
    ['penalty_amplification']
    """
    steps = graph.steps
    alarms: list[Alarm] = []
    states = graph.nodes[graph.nodes["kind"] == "state"]
    success = steps["success"].to_numpy(dtype=bool)

    # aliased states: one (node, action) leading to both outcomes, or a wide value spread
    outcome = pd.DataFrame({"node": steps["node"].to_numpy(), "action": steps["action"]
                            .astype(str).to_numpy(), "success": success})
    mixed = outcome.groupby(["node", "action"])["success"].agg(["min", "max"])
    mixed_nodes = set(mixed.index[(mixed["min"] != mixed["max"]).to_numpy()]
                      .get_level_values(0).astype(int))
    spread = np.sqrt(states["value_var"].to_numpy(dtype=np.float64))
    scale = max(abs(float(success_reward)), 1e-12)
    wide = set(states.index[(spread >= VALUE_STD_SHARE * scale) &
                            (states["visits"].to_numpy() >= 2)].astype(int))
    aliased = sorted(mixed_nodes | wide)
    if aliased:
        rows = steps[np.isin(steps["node"].to_numpy(), aliased)]
        alarms.append(Alarm(
            "aliased", f"Aliased states: {len(aliased)} node(s)",
            f"{len(mixed_nodes)} node(s) where the same action led to both success and failure"
            f", {len(wide)} whose merged step values spread by ≥ {VALUE_STD_SHARE:.0%} of the "
            "success reward (std). Merging may hide a difference the state key leaves out.",
            len(aliased), _pairs(rows), tuple(aliased)))

    # penalty amplification: equal outcomes, so the penalty is all the spread normalisation sees
    rewards = steps["episode_reward"].to_numpy(dtype=np.float64)
    invalid = ~steps["is_action_valid"].to_numpy(dtype=bool)
    if mode == "mean_std_norm" and penalty > 0 and len(steps) > 1 and \
            np.ptp(rewards) == 0 and invalid.any() and not invalid.all():
        adv_ep = steps["adv_ep"].to_numpy(dtype=np.float64)
        outcome_word = "succeed" if success.all() else "fail" if not success.any() else \
            "get the same reward"
        alarms.append(Alarm(
            "penalty_amplification",
            f"Penalty amplification: {int(invalid.sum())} invalid step(s)",
            f"All rollouts {outcome_word} (reward {rewards[0]:g}): the only spread left is the "
            f"invalid-action penalty p = {penalty:g}, and mean_std_norm scales it to unit size. "
            f"Invalid steps get A^EP ≈ {adv_ep[invalid].mean():.2f}, every valid step "
            f"≈ {adv_ep[~invalid].mean():+.2f}, whatever it did. Consider mode = mean_norm or "
            "a smaller penalty.",
            int(invalid.sum()), _pairs(steps[invalid])))

    # outcome disagreement: G2PO against GRPO, same rows, same normalisation
    raw = steps[[c for c in steps.columns if c in REQUIRED_COLUMNS or c in OPTIONAL_COLUMNS]]
    g2po = compute_advantages(raw, "g2po", gamma=gamma, w=w, mode=mode, penalty=penalty,
                              success_reward=success_reward, terminal=terminal,
                              state_key=state_key, success_threshold=success_threshold
                              )["adv"].to_numpy(dtype=np.float64)
    grpo = compute_advantages(raw, "grpo", mode=mode)["adv"].to_numpy(dtype=np.float64)
    tol = 1e-9
    opposite = ((g2po > tol) & (grpo < -tol)) | ((g2po < -tol) & (grpo > tol))
    if opposite.any():
        alarms.append(Alarm(
            "disagreement", f"Outcome disagreement: {int(opposite.sum())} step(s)",
            f"{int(opposite.sum())} of {len(steps)} steps get advantages of opposite sign from "
            "G2PO and GRPO: the graph credits a step that the episode outcome blames, or the "
            "other way round.",
            int(opposite.sum()), _pairs(steps[opposite])))

    # truncation treated as failure
    truncated = steps["truncated"].to_numpy(dtype=bool) if "truncated" in steps.columns else \
        np.zeros(len(steps), dtype=bool)
    if truncated.any():
        cut = steps[truncated]
        n_traj = int(cut["traj_id"].nunique())
        last = cut.loc[cut.groupby("traj_id")["t"].idxmax()]
        alarms.append(Alarm(
            "truncation", f"Truncation treated as failure: {n_traj} trajectory(ies)",
            f"{n_traj} trajectory(ies) were cut at the step limit (done is false on the last "
            "step); the estimator values them as failures (terminal value "
            f"{'R_i' if terminal == 'reward' else '0'}), so their last step is blamed for "
            "running out of steps.",
            n_traj, _pairs(last)))

    # no merging: every step its own state
    n_steps, n_states = len(steps), len(states)
    rate = 1.0 - n_states / n_steps if n_steps else 0.0
    if n_steps >= 10 and rate < NO_MERGE_RATE:
        alarms.append(Alarm(
            "no_merging", f"No merging: merge rate {rate:.0%}",
            f"{n_states} state nodes for {n_steps} steps: almost no two steps share a state "
            "key, so A^NC has no reference sets. The key probably includes the history or a "
            "step counter; try another state-key strategy (normalized, regex).",
            n_states, _pairs(steps)))
    return alarms
