"""The step index: canonical codes, next-step links, bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from g2po.errors import StepTableError
from g2po.index import MAX_ABS_REWARD, index_steps
from g2po.state_keys import resolve_state_key
from tests.g2po.builders import THREE, TWO, trajectories


def _steps() -> pd.DataFrame:
    return pd.concat([trajectories(THREE), trajectories(TWO, group="h")], ignore_index=True)


def test_codes_do_not_depend_on_row_order():
    steps = _steps()
    ix = index_steps(steps)
    shuffled = steps.sample(frac=1.0, random_state=4)
    again = index_steps(shuffled)
    pos = pd.Series(np.arange(len(shuffled)), index=shuffled.index).loc[steps.index].to_numpy()
    for name in ("group", "traj", "node", "exact_node", "t", "length", "reward", "invalid"):
        assert getattr(again, name)[pos].tolist() == getattr(ix, name).tolist(), name
    assert steps.index[ix.order].tolist() == shuffled.index[again.order].tolist()
    assert ix.traj_reward.tolist() == again.traj_reward.tolist()


def test_groups_and_trajectories_are_numbered_in_sorted_order():
    ix = index_steps(_steps())  # group g: trajectories a, c, b in the rows
    assert ix.group.tolist() == [0] * 8 + [1] * 5
    assert ix.traj[:8].tolist() == [0, 0, 2, 2, 2, 1, 1, 1]  # a < b < c
    assert ix.node[ix.order][:3].tolist() == [0, 1, 0]  # first seen trajectory by trajectory


def test_next_rows_and_remaining_steps():
    ix = index_steps(trajectories(TWO).iloc[::-1])  # rows reversed: b2 b1 b0 a1 a0
    assert ix.next_row.tolist() == [-1, 0, 1, -1, 3]
    assert ix.remaining.tolist() == [0, 1, 2, 0, 1]


def test_strategies_see_rows_trajectory_by_trajectory():
    seen = []

    def record(keys, groups):
        seen.append(list(keys))
        return keys

    index_steps(trajectories(THREE).iloc[::-1], record)
    assert seen == [["s0", "s1", "s0", "s2", "s1", "s0", "s0", "s1"]]  # a, b, c in step order


def test_similarity_merges_without_touching_exact_nodes():
    steps = trajectories({"a": (10, [("room one", "x", True)]),
                          "b": (0, [("room one!", "x", True)])})
    ix = index_steps(steps, resolve_state_key("similarity:0.9"))
    assert ix.node.tolist() == [0, 0] and ix.exact_node.tolist() == [0, 1]


def test_rewards_beyond_the_bound_are_named():
    steps = trajectories(TWO)
    steps.loc[3, "episode_reward"] = MAX_ABS_REWARD * 10
    steps.loc[[2, 4], "episode_reward"] = MAX_ABS_REWARD * 10
    with pytest.raises(StepTableError, match=r"'episode_reward' exceeds .* 3 row\(s\): 2, 3, 4"):
        index_steps(steps)


def test_an_incomplete_trajectory_is_estimated_over_the_turns_it_kept():
    """A trajectory whose turn was lost (its logged t skips, marked incomplete) is indexed as
    the turns it kept, in order: the same codes, links and lengths as those turns logged
    without the gap; its step table keeps the logged t."""
    kept = trajectories(THREE)
    gapped = kept.copy()
    last = gapped.index[gapped["traj_id"] == "b"][-1]
    gapped.loc[last, "t"] += 4  # lost turns between, as a loader would leave them
    gapped["incomplete"] = gapped["traj_id"] == "b"
    ix, want = index_steps(gapped), index_steps(kept)
    for name in ("t", "next_row", "length", "node", "traj"):
        assert getattr(ix, name).tolist() == getattr(want, name).tolist(), name
    assert ix.remaining.min() == 0
    with pytest.raises(StepTableError, match="skips a step index"):
        index_steps(gapped.drop(columns="incomplete"))


@pytest.mark.parametrize("estimator", ["g2po", "gigpo", "hgpo", "value_iteration"])
def test_every_estimator_gives_an_incomplete_trajectory_the_credit_of_its_kept_turns(
        estimator):
    from g2po import compute_advantages

    kept = pd.concat([trajectories(THREE), trajectories(TWO, group="h")], ignore_index=True)
    gapped = kept.copy()
    rows = gapped.index[(gapped["group_id"] == "g") & (gapped["traj_id"] == "c")]
    gapped.loc[rows[1:], "t"] += 1  # c lost its turn 1
    gapped["incomplete"] = gapped.index.isin(rows)
    got = compute_advantages(gapped, estimator)
    want = compute_advantages(kept, estimator)
    added = [c for c in want.columns if c not in kept.columns]
    pd.testing.assert_frame_equal(got[added], want[added])
