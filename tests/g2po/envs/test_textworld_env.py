"""TextWorld: specs, offline game generation and caching, the environment and its state key.

These tests generate real games (about a second each) into a session cache.
"""

from __future__ import annotations

import doctest

import pytest

import g2po.envs.textworld_env as tw_env
from g2po.envs import EnvError, env_family
from g2po.envs.textworld_env import (
    TextWorldEnv,
    clean_feedback,
    game_file,
    parse_spec,
    textworld_anchor,
)

COIN = "textworld:coin_collector-level3"
HUNTER = "textworld:treasure_hunter-level3"


@pytest.fixture(scope="module")
def coin(tw_cache):
    return env_family(COIN, cache=tw_cache)


def _walk(env: TextWorldEnv, actions):
    results = [env.reset()]
    for a in actions:
        results.append(env.step(f"<action>{a}</action>"))
    return results


def test_parse_spec_levels_flags_and_choices():
    game = parse_spec("coin_collector-level5")
    assert game.challenge == "tw-coin_collector" and game.settings_dict() == {"level": 5}
    assert game.name == "coin_collector-level5"
    cooking = parse_spec("cooking-train-cut-recipe2-go6-open")
    settings = cooking.settings_dict()
    assert settings["recipe"] == 2 and settings["go"] == 6
    assert settings["open"] and settings["cut"] and not settings["cook"]
    assert settings["split"] == "train"
    assert cooking.name == "cooking-recipe2-go6-open-cut-train"  # the challenge's order


def test_parse_spec_errors_name_the_token_and_the_settings():
    with pytest.raises(EnvError, match="'speed3'.*level") as info:
        parse_spec("coin_collector-speed3")
    assert "coin_collector" in str(info.value)
    with pytest.raises(EnvError, match="level"):
        parse_spec("treasure_hunter")  # --level is required
    with pytest.raises(EnvError, match="unknown TextWorld challenge 'zork'.*cooking"):
        parse_spec("zork-level1")
    with pytest.raises(EnvError, match="go"):
        parse_spec("cooking-go5")  # go must be 1, 6, 9 or 12


def test_games_are_generated_once_and_cached(tw_cache):
    game = parse_spec("coin_collector-level2")
    path = game_file(game, 7, cache=tw_cache)
    assert path == tw_cache / "textworld" / "coin_collector-level2" / "seed7.z8"
    assert path.is_file() and path.with_suffix(".json").is_file()
    stamp = path.stat().st_mtime_ns
    assert game_file(game, 7, cache=tw_cache).stat().st_mtime_ns == stamp
    leftovers = [p.name for p in path.parent.iterdir() if p.name.startswith(".gen-")]
    assert leftovers == []


def test_task_ids_are_spec_and_seed(coin):
    assert coin.spec == COIN
    assert coin.tasks(2, seed=5) == ["coin_collector-level3-s5", "coin_collector-level3-s6"]
    with pytest.raises(EnvError, match="-sSEED"):
        coin.make("coin_collector-level3")


def test_rollouts_of_a_task_start_from_the_same_state(coin):
    task = coin.tasks(1, seed=5)[0]
    a, b = coin.make(task), coin.make(task)
    ra, rb = a.reset(), b.reset()
    assert ra.state_key == rb.state_key and ra.observation == rb.observation
    assert ra.admissible_actions == rb.admissible_actions and a.task == b.task
    assert a.task and "-= " in ra.observation  # objective is the task, the room the observation
    a.close(), b.close()


def test_walkthrough_wins(coin):
    env = coin.make(coin.tasks(1, seed=5)[0])
    first = env.reset()
    plan = first.info["policy_commands"]
    assert plan and all(isinstance(c, str) for c in plan)
    results = _walk(env, plan)
    last = results[-1]
    assert last.done and last.won and last.reward > 0
    assert all(r.is_action_valid for r in results[1:])
    assert "RESTART" not in last.observation
    env.close()


def test_state_key_is_room_and_inventory_not_feedback(coin):
    env = coin.make(coin.tasks(1, seed=5)[0])
    first = env.reset()
    looked = env.step("<action>look</action>")
    inv = env.step("<action>inventory</action>")
    assert looked.observation != inv.observation  # different feedback …
    assert first.state_key == looked.state_key == inv.state_key  # … same world state
    assert first.state_key == textworld_anchor(first.info["description"],
                                               first.info["inventory"])
    assert first.state_key.endswith("You are carrying nothing.")
    moved = env.step(f"<action>{first.info['policy_commands'][0]}</action>")
    assert moved.state_key != first.state_key
    env.close()


def test_taking_the_coin_changes_the_inventory_part_of_the_key(coin):
    env = coin.make(coin.tasks(1, seed=5)[0])
    results = _walk(env, env.reset().info["policy_commands"])
    assert "coin" in results[-1].state_key.split("\n\n")[-1]
    env.close()


def test_invalid_action_does_not_spend_a_move(coin):
    env = coin.make(coin.tasks(1, seed=5)[0])
    env.reset()
    moved = env.step("<action>look</action>")
    bad = env.step("<action>dance wildly</action>")
    assert not bad.is_action_valid and bad.state_key == moved.state_key
    assert bad.info["moves"] == moved.info["moves"]
    assert env.step("<action>look</action>").info["moves"] == moved.info["moves"] + 1
    env.close()


def test_treasure_hunter_can_be_lost(tw_cache):
    """Taking a wrong object ends a treasure hunt as a failure: done, not won."""
    family = env_family(HUNTER, cache=tw_cache)
    for task in family.tasks(4, seed=0):
        env = family.make(task)
        first = env.reset()
        target = first.info["policy_commands"][-1]
        result = first
        for _ in range(40):  # explore, taking anything that is not the target
            takes = [a for a in result.admissible_actions
                     if a.startswith("take ") and a != target]
            moves = [a for a in result.admissible_actions if a.startswith("go ")]
            action = takes[0] if takes else moves[env.steps_taken % len(moves)]
            result = env.step(f"<action>{action}</action>")
            if result.done:
                break
        env.close()
        if result.done:
            assert not result.won and result.info["lost"]
            return
    pytest.fail("no treasure hunt was lost by taking wrong objects")


def test_a_step_that_raises_the_score_achieves_a_milestone(tw_cache):
    """A cooking game scores its sub-goals (the ingredient taken, the meal prepared, eaten):
    each scoring step of the walkthrough achieved a milestone, nothing else did, and an
    invalid action after a milestone achieved none."""
    family = env_family("textworld:cooking-recipe1-take1-go1-train", cache=tw_cache)
    env = family.make(family.tasks(1, seed=0)[0])
    first = env.reset()
    assert first.info["milestone_achieved"] is False
    plan = first.info["policy_commands"]
    env.step("<action>look</action>")
    results = [env.step(f"<action>{plan[0]}</action>")]
    results.append(env.step("<action>dance wildly</action>"))
    results += [env.step(f"<action>{a}</action>") for a in plan[1:]]
    assert results[-1].won and first.info["max_score"] >= 3
    milestones = [r.info["milestone_achieved"] for r in results]
    assert milestones == [r.info["score"] > before.info["score"]
                          for before, r in zip([first, *results], results)]
    assert sum(milestones) == first.info["max_score"] and milestones[1] is False
    env.close()


def test_clean_feedback_drops_prompt_status_line_and_restart_question():
    raw = ("\nYou pick up the coin.\n\n\n\n>        -= Chamber =-0/4\n\n                    "
           "*** The End ***\n\nWould you like to RESTART, RESTORE a saved game, QUIT or UNDO?")
    assert clean_feedback(raw) == "You pick up the coin.\n\n*** The End ***"


def test_docstring_examples():
    assert doctest.testmod(tw_env).failed == 0


_THREADED_RESETS = """
import sys, threading
from concurrent.futures import ThreadPoolExecutor
from g2po.envs import env_family

family = env_family(sys.argv[1], cache=sys.argv[2])
envs = [family.make(task) for task in sys.argv[3:]]
barrier = threading.Barrier(len(envs))

def play(env):
    barrier.wait()  # every thread loads its game at the same moment
    try:
        first = env.reset()
        env.step("<action>look</action>")
        return f"ok {first.won}"
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    finally:
        env.close()

with ThreadPoolExecutor(len(envs)) as pool:
    print("\\n".join(pool.map(play, envs)))
"""


def test_fresh_envs_reset_concurrently_in_a_new_process(coin, tw_cache):
    """TextWorld's parsers are module-level and not thread-safe: in a process where nothing
    loaded a game before, four threads resetting fresh envs at once all failed (IndexError /
    TypeError inside tatsu) before the parse lock. A new process, because a warm one hides it."""
    import subprocess
    import sys

    tasks = coin.tasks(4, seed=0)  # generated here, so the child only loads them
    done = subprocess.run([sys.executable, "-c", _THREADED_RESETS, COIN, str(tw_cache), *tasks],
                          capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split("\n")[:4] == ["ok False"] * 4, done.stdout + done.stderr


def test_making_games_shows_a_bar_and_a_cached_game_none(tmp_path, capsys):
    family = env_family("textworld:coin_collector-level1", cache=tmp_path)
    family.tasks(3, seed=7)  # about a second each: made here
    assert f"making {family.spec} games" in capsys.readouterr().err
    env_family("textworld:coin_collector-level1", cache=tmp_path).tasks(3, seed=7)  # cached
    assert "making" not in capsys.readouterr().err
