"""The environment interface: projection, invalid actions as no-ops, the registry."""

from __future__ import annotations

import pytest

from g2po.envs import (
    EnvError,
    UnknownEnvError,
    env_family,
    list_envs,
    make_env,
    register_env,
)
from g2po.envs.base import INVALID_ACTION_FEEDBACK, NO_ACTION_FEEDBACK
from tests.g2po.envs.corridor import Corridor, CorridorFamily, MilestoneCorridor


def test_valid_action_is_played_and_the_state_key_follows():
    env = Corridor("c0")
    first = env.reset()
    assert first.state_key == "You are in room 0 of the corridor."
    assert first.admissible_actions == ["go forward", "go back", "wait"]
    result = env.step("<think>onwards</think><action>Go Forward</action>")
    assert result.is_action_valid and result.action == "go forward"
    assert env.calls == ["go forward"]
    assert result.state_key == "You are in room 1 of the corridor."


def test_invalid_action_is_not_sent_to_the_game_and_keeps_the_state():
    env = Corridor("c0")
    env.reset()
    env.step("<action>go forward</action>")
    result = env.step("<action>jump</action>")
    assert env.calls == ["go forward"]  # the game never saw "jump"
    assert not result.is_action_valid and result.action == "jump"
    assert result.observation == INVALID_ACTION_FEEDBACK.format(action="jump")
    assert result.state_key == "You are in room 1 of the corridor."
    assert result.admissible_actions == ["go forward", "go back", "wait"]
    assert (result.reward, result.done, result.won) == (0.0, False, False)
    # the state is unchanged, so the next valid action continues from room 1
    assert env.step("<action>go forward</action>").state_key.startswith("You are in room 2")


def test_response_without_tag_is_invalid_with_its_own_feedback():
    env = Corridor("c0")
    env.reset()
    result = env.step("go forward")
    assert not result.is_action_valid and result.action == "go forward"
    assert result.observation == NO_ACTION_FEEDBACK
    assert env.calls == []


def test_two_invalid_actions_in_a_row_stay_in_the_same_state():
    env = Corridor("c0")
    first = env.reset()
    env.step("<action>x</action>")
    again = env.step("<action>y</action>")
    assert again.state_key == first.state_key
    assert "unchanged_key" in again.info


def test_an_invalid_action_reports_the_no_op_value_of_each_step_fact():
    """A step fact of the previous step (its milestone) is not the invalid step's, though the
    no-op result keeps the rest of the previous info (the state's facts)."""
    env = MilestoneCorridor("c0")
    env.reset()
    assert env.step("<action>go forward</action>").info["milestone_achieved"] is True
    bad = env.step("<action>jump</action>")
    assert not bad.is_action_valid and bad.info["milestone_achieved"] is False
    assert env.step("<action>wait</action>").info["milestone_achieved"] is False
    assert "milestone_achieved" not in Corridor("c0").step_reports  # reports nothing


def test_env_state_key_merges_transient_feedback():
    env = Corridor("c0")
    first = env.reset()
    waited = env.step("<action>wait</action>")
    assert waited.observation == "Time passes."
    assert waited.state_key == first.state_key


def test_step_before_reset_and_after_the_end_are_errors():
    env = Corridor("c0")
    with pytest.raises(EnvError, match="before reset"):
        env.step("<action>wait</action>")
    env.reset()
    for _ in range(3):
        result = env.step("<action>go forward</action>")
    assert result.done and result.won
    with pytest.raises(EnvError, match="after the episode ended"):
        env.step("<action>wait</action>")


def test_reset_restarts_the_same_initial_state():
    env = Corridor("c0")
    first = env.reset()
    env.step("<action>go forward</action>")
    assert env.reset().state_key == first.state_key
    assert env.steps_taken == 0


def test_unknown_prefix_names_the_known_ones():
    with pytest.raises(UnknownEnvError, match="textworld") as info:
        env_family("nethack:level1")
    assert "alfworld" in str(info.value) and "webshop" in str(info.value)


def test_builtin_families_are_listed():
    assert {"textworld", "alfworld", "webshop", "appworld"} <= set(list_envs())


def test_register_env_and_make_env():
    @register_env("corridor-test", "a corridor, for tests")
    def corridor(details: str) -> CorridorFamily:
        return CorridorFamily(spec=f"corridor-test:{details}")

    env = make_env("corridor-test:x", seed=4)
    assert env.task_id == "c4"
    assert make_env("corridor-test:x", "c9").task_id == "c9"
    assert list_envs()["corridor-test"] == "a corridor, for tests"
    with pytest.raises(ValueError, match="already registered"):
        register_env("corridor-test")(lambda details: CorridorFamily())


def test_format_validity_sends_every_action_and_flags_the_format():
    env = Corridor("c0")
    env.validity = "format"  # the authors' ALFWorld rule
    env.reset()
    bad_format = env.step("<action>go forward</action>")  # no <think>: played, flagged
    assert env.calls == ["go forward"] and not bad_format.is_action_valid
    assert bad_format.state_key == "You are in room 1 of the corridor."
    inadmissible = env.step("<think>up</think><action>jump</action>")  # played, valid
    assert env.calls == ["go forward", "jump"] and inadmissible.is_action_valid
    assert inadmissible.action == "jump"
    untagged = env.step("I go back")
    assert env.calls[-1] == "i go back" and not untagged.is_action_valid
