"""The group explorer's headline: a 0/1-reward log read under the success reward 10 is offered
the fix wherever a group reads no success."""

import pandas as pd

from tests.app.builders import app_test, shown, texts


def write_zero_one_csv(path):
    """Rewards 0/1 and nothing else saying what a success is (no won, no run.json): group
    ``mixed`` (two of four rollouts got 1), ``solved`` (all got 1), ``failed`` (all got 0)."""
    rows = []
    for group, rewards in (("mixed", [1, 0, 1, 0]), ("solved", [1, 1, 1, 1]),
                           ("failed", [0, 0, 0, 0])):
        for i, reward in enumerate(rewards):
            for t in range(2):
                rows.append({"group_id": group, "traj_id": f"{group}:{i}", "t": t,
                             "state_key": f"{group} room {t} {i % 2}", "action": "go",
                             "episode_reward": float(reward), "is_action_valid": True})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_zero_one_reward_log_is_offered_the_fix_wherever_it_reads_no_success(tmp_path):
    csv = write_zero_one_csv(tmp_path / "zero_one.csv")
    at = app_test("group", ["--log", str(csv)])
    key = next(b.key for b in at.selectbox if (b.key or "").startswith("group:"))
    fixes = {}
    for group in ("mixed", "solved", "failed"):
        at.selectbox(key=key).select(group).run()
        assert not at.exception
        assert "success rate **0%**" in texts(at)
        fixes[group] = [b for b in at.button if b.label == "Set the success reward to 1"]
    assert len(fixes["mixed"]) == len(fixes["solved"]) == 1  # the group's own evidence
    # every rollout of "failed" got 0, which says nothing; the run's rewards do
    (offer,) = fixes["failed"]
    assert offer.key.startswith("reward_scale_offer:explorer:")
    assert "6 of 12 trajectories reach reward 1 (every reward is one of two values)" in \
        shown(texts(at))
    offer.click().run()
    assert not at.exception
    assert at.query_params["success"] == "1"
    assert "success rate **0%**" in texts(at) and "Set the success reward" not in texts(at)
    at.selectbox(key=key).select("solved").run()
    assert "success rate **100%**" in texts(at)


def test_the_groups_page_offers_the_same_fix_and_names_the_cli_flag(tmp_path):
    """The symptom (every group at 0 % success) shows on the Groups page too: the same offer,
    with the flag that does it on the command line."""
    csv = write_zero_one_csv(tmp_path / "zero_one.csv")
    at = app_test("groups", ["--log", str(csv)])
    assert not at.exception
    (offer,) = [b for b in at.button if b.label == "Set the success reward to 1"]
    assert offer.key.startswith("reward_scale_offer:groups:")
    assert "On the command line: --success-reward 1" in shown(texts(at))
    offer.click().run()
    assert not at.exception
    assert not [b for b in at.button if b.label == "Set the success reward to 1"]


def test_the_explorer_judges_a_group_against_the_run_once_the_groups_table_is_computed(
        tmp_path):
    """A partial group (3 of the run's usual 6 rollouts): the explorer says it once this server
    computed the run's groups table (the Groups page), from the same row the table shows."""
    from tests.g2po.analysis.groups import random_walks

    path = tmp_path / "partial.csv"
    pd.concat([random_walks(groups=5, rollouts=6, length=4, seed=1),
               random_walks(groups=1, rollouts=3, length=4, seed=2).assign(group_id="partial")],
              ignore_index=True).to_csv(path, index=False)

    def partial_alarm() -> list:
        at = app_test("group", ["--log", str(path)])
        key = next(b.key for b in at.selectbox if (b.key or "").startswith("group:"))
        at.selectbox(key=key).select("partial").run()
        assert not at.exception
        return [b for b in at.button if b.key == "g_alarm_partial_group"]

    assert partial_alarm() == []  # the run's table not computed yet: nothing to judge by
    groups = app_test("groups", ["--log", str(path)])
    assert not groups.exception
    (alarm,) = partial_alarm()
    assert "3" in alarm.label
