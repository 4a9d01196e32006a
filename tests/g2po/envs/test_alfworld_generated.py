"""alfworld:generated: games made here from the alfworld package, played by ALFWorld's own
TextWorld engine, wrappers and hand-coded expert (no download, nothing faked).

Resets are slow (Fast Downward grounds the problem at each, 0.5-9 s), so one session fixture
makes the six games (one per task type) that the tests share.
"""

from __future__ import annotations

import doctest
import json

import pytest

import g2po.envs.alfworld_games as games
from g2po.envs import EnvError, env_family
from g2po.envs.alfworld_env import EXPERT_STEP_LIMIT, GeneratedFamily
from g2po.envs.alfworld_games import TASK_TYPES, make_game
from g2po.rollouts import ScriptedPolicy, collect_groups

WELCOME = "-= Welcome to TextWorld, ALFRED! =-"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[GeneratedFamily, list[str]]:
    """The family and game 0 of each task type, made in a fresh cache (seed 0: the expert
    wins every first draw, where pick-two games often take several, see the docs)."""
    family = env_family("alfworld:generated", cache=tmp_path_factory.mktemp("alfworld-cache"))
    tasks = [f"train/{task_type}-s0" for task_type in TASK_TYPES]
    for task_id in tasks:
        family._file(task_id)
    return family, tasks


def test_tasks_cycle_through_the_task_types():
    family = env_family("alfworld:generated")
    assert family.task_ids(7, seed=2) == [
        f"train/{t}-s{2 + i}" for i, t in enumerate(TASK_TYPES)] + [
        "train/pick_and_place_simple-s8"]
    one = env_family("alfworld:generated-valid_unseen-pick_two_obj_and_place")
    assert one.task_ids(2) == ["valid_unseen/pick_two_obj_and_place-s0",
                               "valid_unseen/pick_two_obj_and_place-s1"]


def test_games_are_made_deterministically_from_a_seed():
    for task_type in TASK_TYPES:
        first = make_game(task_type, seed=3)
        again = make_game(task_type, seed=3)
        assert first == again, task_type
        assert make_game(task_type, seed=4).game["pddl_problem"] != first.game["pddl_problem"]
        assert make_game(task_type, seed=3, attempt=1) != first
        assert make_game(task_type, seed=3, split="valid_seen") != first
        params = first.traj_data["pddl_params"]
        assert first.traj_data["task_type"] == task_type and params["object_target"]
        # the task sentence sits where ALFWorld puts it, and nothing is left of the placeholder
        assert f"Your task is to: {first.traj_data['g2po']['task']}." in first.game["grammar"]
        assert "UNKNOWN GOAL" not in first.game["grammar"]


def test_unseen_split_uses_alfreds_held_out_floor_plans():
    from alfworld.gen import constants

    for seed in range(4):
        seen = make_game("pick_and_place_simple", seed)
        unseen = make_game("pick_and_place_simple", seed, split="valid_unseen")
        assert seen.traj_data["scene"]["scene_num"] in constants.TRAIN_SCENE_NUMBERS
        assert unseen.traj_data["scene"]["scene_num"] in constants.TEST_SCENE_NUMBERS
    heat = make_game("pick_heat_then_place_in_recep", 0)
    assert heat.traj_data["scene"]["scene_num"] in constants.SCENE_TYPE["Kitchen"]


def test_every_task_type_is_solved_by_alfworlds_expert(generated):
    family, tasks = generated
    for task_id in tasks:
        path = family._file(task_id)
        data = json.loads(path.read_text())
        traj = json.loads((path.parent / "traj_data.json").read_text())
        assert data["solvable"] is True and set(data) >= {"pddl_domain", "grammar",
                                                          "pddl_problem"}
        assert traj["task_type"] == task_id.split("/")[1].removesuffix("-s0")
        actions = traj["g2po"]["expert_actions"]
        assert 0 < len(actions) <= EXPERT_STEP_LIMIT, task_id
        # the game is the seed's draw the expert won, remade exactly from its arguments
        remade = make_game(traj["task_type"], 0, "train", traj["g2po"]["attempt"])
        assert remade.game["pddl_problem"] == data["pddl_problem"]
    # cached: asking again makes nothing new
    stamps = [family._file(t).stat().st_mtime_ns for t in tasks]
    again = env_family("alfworld:generated", cache=family.cache)
    assert [again._file(t).stat().st_mtime_ns for t in tasks] == stamps


def test_scripted_policy_follows_the_expert_to_a_win_in_alfworlds_own_text(generated):
    family, tasks = generated
    env = family.make(tasks[0])
    first = env.reset()
    assert first.info["feedback"].startswith(WELCOME)
    assert first.observation.startswith("You are in the middle of a room. Looking quickly "
                                        "around you, you see ")
    traj = json.loads((family._file(tasks[0]).parent / "traj_data.json").read_text())
    assert env.task == traj["g2po"]["task"] + "."
    assert first.info["policy_commands"] == ["look"]  # the expert's first move, as in ALFWorld
    env.close()

    policy = ScriptedPolicy(follow=1.0, invalid_rate=0.0, seed=0)
    steps, stats = collect_groups(family, tasks[:1], policy, group_size=1,
                                  max_steps=EXPERT_STEP_LIMIT + 5)
    assert not stats["env_errors"] and not stats["reset_errors"]
    assert steps["won"].iloc[-1] and steps["is_action_valid"].all()
    assert (steps["episode_reward"] == 10.0).all()
    assert steps["action"].iloc[0] == "look"


def test_an_inadmissible_action_gets_alfworlds_reply(generated):
    family, tasks = generated
    env = family.make(tasks[1])
    first = env.reset()
    result = env.step("<think>hm</think><action>jump over the fridge</action>")
    assert not result.is_action_valid and result.observation.endswith("Nothing happens.")
    assert result.state_key == first.state_key  # the invalid action loops on its state
    # the engine itself (the wrapped TextWorld env) answers ALFWorld's "Nothing happens."
    state, _, done = env._start().step("jump over the fridge")
    assert state["feedback"] == "Nothing happens." and not done
    env.close()


def test_bad_options_are_named():
    with pytest.raises(EnvError, match="'pick_two'.*one split .*one task type"):
        env_family("alfworld:generated-pick_two")
    with pytest.raises(EnvError, match="at most one split"):
        env_family("alfworld:generated-train-valid_unseen")
    with pytest.raises(EnvError, match="not `data`"):
        env_family("alfworld:generated", data="/tmp")
    with pytest.raises(EnvError, match="is not one of train, valid_seen, valid_unseen"):
        make_game("pick_and_place_simple", 0, split="test")
    family = env_family("alfworld:generated-valid_unseen-look_at_obj_in_light")
    assert family.spec == "alfworld:generated-valid_unseen-look_at_obj_in_light"
    assert family.task_types == ("look_at_obj_in_light",)
    with pytest.raises(EnvError, match="SPLIT/TASKTYPE-sSEED"):
        family.make("pick_and_place_simple-3")


def test_docstring_examples():
    assert doctest.testmod(games).failed == 0


def test_one_local_training_step_on_generated_games(tmp_path):
    """The local trainer takes one step on generated games with a tiny model built for them
    (the trainer tests' small recipe; shipped with g2po, g2po/trainers/tiny_models/)."""
    pytest.importorskip("torch")
    from g2po.trainers.local import train
    from loaders import open_run
    from tests.g2po.trainers.fixtures import TINY, small_config

    env = "alfworld:generated-pick_and_place_simple"
    config = small_config(env=env, model=TINY, task_pool=1, tasks_per_step=1,
                          rollouts_per_task=2, max_steps=2, total_steps=1)
    result = train(config, tmp_path / "run", log=lambda _line: None)
    assert result.steps == [1]
    run = open_run(tmp_path / "run")
    assert run.manifest["config"]["env"] == env
    steps = run.load_step(1)
    assert len(steps) == 4 and steps["group_id"].nunique() == 1
    assert steps["observation"].str.startswith("You are in the middle of a room.").any()
    assert "actor/pg_loss" in run.metrics().columns


def test_making_games_shows_a_bar_and_a_cached_game_none(tmp_path, capsys):
    family = env_family("alfworld:generated-pick_and_place_simple", cache=tmp_path)
    assert family.tasks(2, seed=0) == ["train/pick_and_place_simple-s0",
                                       "train/pick_and_place_simple-s1"]  # 1-4 s each: made
    assert f"making {family.spec} games" in capsys.readouterr().err
    family = env_family("alfworld:generated-pick_and_place_simple", cache=tmp_path)
    family.tasks(2, seed=0)  # from the cache, at once
    assert "making" not in capsys.readouterr().err
