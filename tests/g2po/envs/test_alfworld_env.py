"""ALFWorld adapter, without ALFWorld: messages, game selection, observations, anchors, actions.

Observations below are recorded from ALFWorld's text engine (json_2.1.1 games).
"""

from __future__ import annotations

import doctest
import json
import sys

import pytest

import g2po.envs.alfworld_env as alf
from g2po.agent_format import parse_action, parse_action_format
from g2po.envs import EnvError, MissingEnvironmentError, env_family
from g2po.envs.alfworld_env import (
    ALFWorldEnv,
    PaperAnchor,
    alfworld_anchor,
    find_games,
    split_initial_observation,
)

INITIAL = (
    "-= Welcome to TextWorld, ALFRED! =-\n\n"
    "You are in the middle of a room. Looking quickly around you, you see a bed 1, a desk 2, "
    "a desk 1, a drawer 6, a drawer 5, a drawer 4, a drawer 3, a drawer 2, a drawer 1, a "
    "garbagecan 1, a laundryhamper 1, a safe 1, a shelf 6, a shelf 5, a shelf 4, a shelf 3, a "
    "shelf 2, and a shelf 1.\n\n"
    "Your task is to: put a mug in desk."
)
ARRIVE = "You arrive at drawer 1. The drawer 1 is closed."
ADMISSIBLE = [
    "go to bed 1", "go to desk 1", "go to desk 2", "go to drawer 1", "open drawer 1",
    "inventory", "look", "examine drawer 1", "take mug 1 from desk 2",
]


@pytest.fixture
def no_alfworld(monkeypatch):
    """Make `import alfworld` fail, whether or not the package is installed here."""
    for name in list(sys.modules):
        if name == "alfworld" or name.startswith("alfworld."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "alfworld", None)


def test_missing_package_says_what_to_install_and_download(no_alfworld):
    with pytest.raises(MissingEnvironmentError) as info:
        env_family("alfworld:train")
    message = str(info.value)
    assert "pip install" in message and "alfworld" in message
    assert "alfworld-download" in message and "ALFWORLD_DATA" in message


def test_environment_without_package_raises_the_install_message(no_alfworld, tmp_path):
    with pytest.raises(MissingEnvironmentError, match="pip install"):
        ALFWorldEnv("t", tmp_path / "game.tw-pddl")


def test_missing_data_names_the_download_step_and_the_folder(tmp_path):
    with pytest.raises(MissingEnvironmentError, match="alfworld-download") as info:
        find_games(tmp_path, "train")
    assert str(tmp_path / "json_2.1.1" / "train") in str(info.value)


def _trial(root, rel, task_type, solvable=True, game=True):
    folder = root / "json_2.1.1" / "train" / rel
    folder.mkdir(parents=True)
    (folder / "traj_data.json").write_text(json.dumps({"task_type": task_type}))
    if game:
        (folder / "game.tw-pddl").write_text(json.dumps({"solvable": solvable}))


def test_find_games_follows_alfworlds_own_selection(tmp_path):
    _trial(tmp_path, "pick_and_place_simple-Mug-None-Desk-308/trial_1", "pick_and_place_simple")
    _trial(tmp_path, "pick_heat_then_place_in_recep-Egg-None-Fridge-2/trial_2",
           "pick_heat_then_place_in_recep")
    _trial(tmp_path, "pick_and_place_simple-Pen-None-Safe-1/trial_3", "pick_and_place_simple",
           solvable=False)
    _trial(tmp_path, "pick_and_place_simple-Apple-None-Desk-4/trial_4", "pick_and_place_simple",
           game=False)
    _trial(tmp_path, "pick_and_place_with_movable_recep-Pen-Bowl-Desk-1/trial_5",
           "pick_and_place_with_movable_recep")
    assert find_games(tmp_path) == [
        "pick_and_place_simple-Mug-None-Desk-308/trial_1",
        "pick_heat_then_place_in_recep-Egg-None-Fridge-2/trial_2",
    ]
    assert find_games(tmp_path, task_types=("pick_heat_then_place_in_recep",)) == [
        "pick_heat_then_place_in_recep-Egg-None-Fridge-2/trial_2",
    ]
    with pytest.raises(MissingEnvironmentError, match="no solvable games"):
        find_games(tmp_path, task_types=("look_at_obj_in_light",))


def test_family_draws_tasks_deterministically(tmp_path):
    for i in range(5):
        _trial(tmp_path, f"pick_and_place_simple-Mug-None-Desk-{i}/trial_1",
               "pick_and_place_simple")
    family = alf.ALFWorldFamily(spec="alfworld:train", data=tmp_path)
    tasks = family.tasks(3, seed=1)
    assert tasks == family.tasks(3, seed=1) and len(set(tasks)) == 3
    assert family.tasks(7, seed=1)[5:] == family.tasks(7, seed=1)[:2]  # cycles


def test_initial_observation_splits_into_room_and_task():
    observation, task = split_initial_observation(INITIAL)
    assert task == "put a mug in desk."
    assert observation.startswith("You are in the middle of a room.")
    assert "Welcome" not in observation and "Your task" not in observation


def test_anchor_is_the_observation_without_history():
    assert alfworld_anchor(ARRIVE) == ARRIVE
    assert alfworld_anchor("You arrive at drawer 1.\nThe drawer 1 is  closed.\n") == ARRIVE
    # same observation reached by two rollouts -> same key; a different one -> different key
    assert alfworld_anchor("You open the drawer 1. The drawer 1 is open. In it, you see "
                           "nothing.") != ARRIVE


def test_nothing_happens_keeps_the_state_it_happened_in():
    assert alfworld_anchor("Nothing happens.", previous=ARRIVE) == ARRIVE
    assert alfworld_anchor("Nothing happens.") == "Nothing happens."


def test_action_projection_on_recorded_admissible_commands():
    assert parse_action("<think>Check the desk.</think><action>Go to Desk 2</action>",
                        ADMISSIBLE) == ("go to desk 2", True)
    assert parse_action("<action>take mug 1 from desk 2.</action>", ADMISSIBLE) == (
        "take mug 1 from desk 2", True)
    assert parse_action("<action>go to desk 3</action>", ADMISSIBLE) == ("go to desk 3", False)
    assert parse_action("go to desk 2", ADMISSIBLE) == ("go to desk 2", False)


def test_format_rule_judges_the_tags_not_admissibility():
    # the authors' projection: any tagged action is played; validity is the format alone
    assert parse_action_format("<think>Check the desk.</think><action>Go to Desk 3</action>") \
        == ("go to desk 3", True)  # not admissible, still valid (ALFWorld: "Nothing happens.")
    assert parse_action_format("<action>go to desk 2</action>") == ("go to desk 2", False)
    assert parse_action_format("<think>desk</think> go to desk 2") == (
        "<think>desk</think> go to desk 2"[-30:], False)
    assert parse_action_format("<think>去桌子</think><action>go to desk 2</action>") == (
        "go to desk 2", False)
    # the first tag pair counts (the admissible rule takes the last)
    two = "<think>x</think><action>look</action><action>go to desk 2</action>"
    assert parse_action_format(two) == ("look", True)
    assert parse_action(two, ADMISSIBLE)[0] == "go to desk 2"


def _admissible(*actions):
    return [*actions, "help"]


def test_paper_anchor_is_the_observation_with_the_admissible_actions():
    start = PaperAnchor("You are in the middle of a room.", _admissible("go to desk 1", "look"))
    assert start.key == ("You are in the middle of a room.\nAdmissible actions:\n"
                         " 'go to desk 1'\n 'look'\n")
    # the same text with other admissible actions is another state (our default merges them)
    a = PaperAnchor(ARRIVE, _admissible("open drawer 1", "look")).key
    b = PaperAnchor(ARRIVE, _admissible("close drawer 1", "look")).key
    assert a != b and alfworld_anchor(ARRIVE) == alfworld_anchor(ARRIVE)


def test_paper_anchor_keeps_the_state_on_nothing_happens():
    anchor = PaperAnchor("You are in the middle of a room.", _admissible("go to desk 1"))
    first = anchor.key
    assert anchor.step("Nothing happens.", _admissible("go to desk 1")) == first
    at_desk = anchor.step(ARRIVE, _admissible("open drawer 1"))
    assert at_desk != first and at_desk.startswith(ARRIVE)
    assert anchor.step("Nothing happens.", _admissible("open drawer 1")) == at_desk


@pytest.mark.parametrize("effect", ["You heat the mug 1 using the microwave 1.",
                                    "You cool the apple 1 using the fridge 1.",
                                    "You clean the cloth 1 using the sinkbasin 1.",
                                    "You turn on the desklamp 1."])
def test_paper_anchor_remembers_an_invisible_effect_for_one_state(effect):
    anchor = PaperAnchor("You are in the middle of a room.", _admissible("look"))
    after_effect = anchor.step(effect, _admissible("go to desk 1"))
    assert after_effect.startswith(effect)
    arrive = anchor.step(ARRIVE, _admissible("open drawer 1"))
    # the state after the effect carries it: not the key of arriving without it
    assert arrive == after_effect + " " + PaperAnchor.entry(ARRIVE, ["open drawer 1"])
    assert arrive != PaperAnchor(ARRIVE, _admissible("open drawer 1")).key
    assert anchor.step("Nothing happens.", _admissible("open drawer 1")) == arrive
    # one state later the effect is forgotten
    later = anchor.step("You open the drawer 1.", _admissible("close drawer 1"))
    assert later == PaperAnchor.entry("You open the drawer 1.", ["close drawer 1"])


def test_paper_options_are_checked_by_name():
    with pytest.raises(EnvError, match="validity 'strict'.*admissible, format"):
        env_family("alfworld:generated", validity="strict")
    with pytest.raises(EnvError, match="anchor 'history'.*observation_admissible"):
        env_family("alfworld:generated", anchor="history")
    family = env_family("alfworld:generated", validity="format",
                        anchor="observation_admissible")
    assert (family.validity, family.anchor) == ("format", "observation_admissible")


def test_unknown_split_and_task_type_are_named():
    with pytest.raises(EnvError, match="split 'tset' is not one of train, valid_seen"):
        env_family("alfworld:tset")
    with pytest.raises(EnvError, match="task type 'pick_two' is not one of"):
        env_family("alfworld:train-pick_two")


def test_docstring_examples():
    assert doctest.testmod(alf).failed == 0
