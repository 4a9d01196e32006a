"""The rollout collector and the built-in policies: groups, step rows, run directories, errors."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from g2po.cli import main
from g2po.envs import env_family
from g2po.errors import G2POError
from g2po.estimators import estimate, register_estimator, registry
from g2po.estimators.spec import StepColumn
from g2po.rollouts import (
    CollectConfig,
    RandomPolicy,
    ScriptedPolicy,
    Turn,
    collect_groups,
    collect_run,
    make_policy,
)
from g2po.steps import check_steps
from loaders.rundir import open_run
from tests.g2po.envs.corridor import CorridorFamily, MilestoneCorridor

TW = "textworld:coin_collector-level3"


@pytest.fixture(scope="module")
def tw_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("textworld-cache")


def _turn(**kw) -> Turn:
    base = dict(prompt="p", observation="o", admissible_actions=["go north", "look"], task="t",
                history=[], hint=[], env="e", group_id="g", traj_id="g:0", t=0, train_step=1)
    return Turn(**{**base, **kw})


# -- policies ---------------------------------------------------------------------------------
def test_random_policy_is_uniform_with_some_invalid_responses():
    policy = RandomPolicy(invalid_rate=0.2, seed=1)
    turns = [_turn(traj_id=f"g:{i}", t=i % 7) for i in range(400)]
    from g2po.agent_format import parse_action

    parsed = [parse_action(r, ["go north", "look"]) for r in policy.act(turns)]
    invalid = sum(not ok for _, ok in parsed)
    assert 50 < invalid < 110  # about 20 %
    chosen = [a for a, ok in parsed if ok]
    assert 0.35 < chosen.count("look") / len(chosen) < 0.65


def test_policies_are_deterministic_per_turn_not_per_batch_order():
    policy = RandomPolicy(invalid_rate=0.3, seed=4)
    turns = [_turn(traj_id=f"g:{i}") for i in range(20)]
    forward = policy.act(turns)
    backward = policy.act(turns[::-1])[::-1]
    assert forward == backward


def test_scripted_policy_follows_the_hint_and_ramps():
    policy = ScriptedPolicy(follow=1.0, invalid_rate=0.0)
    out = policy.act([_turn(hint=["go north", "take coin"])])
    assert out[0].endswith("<action>go north</action>")
    ramp = ScriptedPolicy(follow=0.2, follow_final=0.8, train_steps=4)
    assert [round(ramp.follow_at(s), 2) for s in (1, 2, 3, 4)] == [0.2, 0.4, 0.6, 0.8]
    with pytest.raises(ValueError, match="follow"):
        ScriptedPolicy(follow=1.5)


def test_make_policy_builtins_and_bad_arguments():
    assert isinstance(make_policy("scripted", follow=0.5), ScriptedPolicy)
    with pytest.raises(G2POError, match="policy 'random'.*unexpected keyword"):
        make_policy("random", temperature=0.7)


def test_a_model_policy_comes_from_the_trainers_registering_it(monkeypatch):
    """The collector sits below the trainers and never imports them: whoever wants a model
    policy imports g2po.trainers.models (the g2po rollouts command does)."""
    import g2po.rollouts as rollouts

    monkeypatch.delitem(rollouts._POLICIES, "model", raising=False)
    with pytest.raises(G2POError, match=r"import g2po.trainers.models first"):
        make_policy("/models/qwen2.5-1.5b")


def test_model_policy_without_the_train_extra_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(G2POError, match=r"pip install -e \.\[train\]"):
        make_policy("/models/qwen2.5-1.5b")


# -- collecting groups ------------------------------------------------------------------------
def test_corridor_groups_shape_and_schema():
    family = CorridorFamily()
    steps, stats = collect_groups(family, family.tasks(3), RandomPolicy(invalid_rate=0.2),
                                  group_size=8, max_steps=12, train_step=2)
    checked = check_steps(steps)
    assert checked["train_step"].eq(2).all()
    assert steps.groupby("group_id")["traj_id"].nunique().tolist() == [8, 8, 8]
    first = steps[steps["t"] == 0]
    assert first.groupby("group_id")["state_key"].nunique().eq(1).all()  # same initial state
    last = steps.sort_values("t").groupby(["group_id", "traj_id"]).tail(1)
    assert set(last.loc[last["won"], "episode_reward"]) <= {10.0}
    assert set(last.loc[~last["won"], "episode_reward"]) <= {0.0}
    assert (~steps["is_action_valid"]).any() and last["won"].any() and (~last["won"]).any()
    assert stats["truncated"] == int((~last["done"]).sum())
    assert stats["env_errors"] == [] and stats["reset_errors"] == []
    assert steps["env_error"].isna().all()


def test_a_raising_environment_is_reported_and_the_batch_survives(caplog):
    family = CorridorFamily(broken={"c1": 1, "c2": "reset"})
    policy = ScriptedPolicy(follow=0.0, invalid_rate=0.0, seed=3)
    with caplog.at_level(logging.WARNING, logger="g2po.rollouts"):
        steps, stats = collect_groups(family, family.tasks(3), policy, group_size=4,
                                      max_steps=10)
    assert len(stats["env_errors"]) == 1
    message = stats["env_errors"][0]
    assert "task c1" in message and "rollout c1:0" in message and "RuntimeError" in message
    assert "step" in message and "the game crashed" in message
    assert stats["reset_errors"] == ["task c2, rollout 0, reset: RuntimeError: the game would "
                                     "not start"]
    assert "task c1" in caplog.text
    broken = steps[steps["traj_id"] == "c1:0"]
    assert len(broken) >= 1 and broken["env_error"].iloc[-1].startswith("RuntimeError")
    assert broken["episode_reward"].eq(0.0).all() and not broken["won"].any()
    assert broken["env_error"].iloc[:-1].isna().all()
    # every other rollout went on: 4 + 4 + 3 trajectories, all valid step tables
    assert steps.groupby("group_id")["traj_id"].nunique().to_dict() == {"c0": 4, "c1": 4,
                                                                        "c2": 3}
    check_steps(steps)


def test_policy_answering_the_wrong_number_of_turns_is_an_error():
    class Short:
        def act(self, turns):
            return ["<action>wait</action>"]

    family = CorridorFamily()
    with pytest.raises(G2POError, match="1 responses for 4 turns"):
        collect_groups(family, family.tasks(1), Short(), group_size=4)


def test_policy_responses_can_carry_extra_row_fields():
    class Counting:
        def act(self, turns):
            return [{"text": "<action>go forward</action>", "response_tokens": 5 + turn.t,
                     "logprob_mean": -0.5} for turn in turns]

    family = CorridorFamily()
    steps, _ = collect_groups(family, family.tasks(1), Counting(), group_size=2)
    steps = check_steps(steps)
    assert steps["response_tokens"].tolist() == [5, 6, 7, 5, 6, 7]
    assert steps["logprob_mean"].eq(-0.5).all() and steps["won"].sum() == 2

    class Clashing:
        def act(self, turns):
            return [{"text": "<action>wait</action>", "action": "x"} for _ in turns]

    with pytest.raises(G2POError, match="overwrite"):
        collect_groups(family, family.tasks(1), Clashing(), group_size=1)


def test_a_declared_step_column_the_env_reports_reaches_the_rows():
    """MiGPO's milestone_achieved comes from each step's info: True on a step forward, the
    no-op value (False) on an invalid step and on the row of a step whose game raised."""
    family = CorridorFamily(game=MilestoneCorridor, broken={"c1": 1})
    policy = ScriptedPolicy(follow=0.0, invalid_rate=0.3, seed=3)
    steps, stats = collect_groups(family, family.tasks(2), policy, group_size=4, max_steps=6)
    steps = check_steps(steps)
    assert len(stats["env_errors"]) == 1 and steps["milestone_achieved"].dtype == bool
    played = steps["is_action_valid"] & steps["env_error"].isna()
    forward = played & steps["action"].eq("go forward")
    assert steps["milestone_achieved"].equals(forward)
    assert (~steps["is_action_valid"]).any() and forward.any()
    assert not steps.loc[steps["env_error"].notna(), "milestone_achieved"].any()
    columns, _ = estimate(steps, "migpo")  # MiGPO trains on what was collected
    assert columns["segment"].max() >= 1


def test_the_collector_copies_what_the_registry_declares_not_what_it_knows():
    class Forward:
        def act(self, turns):
            return ["<action>go forward</action>"] * len(turns)

    family, policy = CorridorFamily(game=MilestoneCorridor), Forward()
    plain, _ = collect_groups(CorridorFamily(), ["c0"], policy, group_size=2)
    assert "milestone_achieved" not in plain.columns  # the env reports nothing
    registry._REGISTRY.pop("migpo")  # the conftest fixture puts it back
    undeclared, _ = collect_groups(family, ["c0"], policy, group_size=2)
    assert "milestone_achieved" not in undeclared.columns
    register_estimator("mine", columns=(StepColumn("milestone_achieved", "bool", "a sub-goal"),))(
        lambda ix: {"adv": ix.columns["milestone_achieved"].astype(float)})
    declared, _ = collect_groups(family, ["c0"], policy, group_size=2)
    assert declared["milestone_achieved"].tolist() == [True] * 6
    assert estimate(declared, "mine")[0]["adv"].tolist() == [1.0] * 6


def test_textworld_groups(tw_cache):
    family = env_family(TW, cache=tw_cache)
    policy = ScriptedPolicy(follow=0.5, invalid_rate=0.15, seed=0)
    steps, stats = collect_groups(family, family.tasks(2, seed=0), policy, group_size=8,
                                  max_steps=12)
    steps = check_steps(steps)
    assert steps["group_id"].nunique() == 2
    assert steps.groupby("group_id")["traj_id"].nunique().eq(8).all()
    assert (~steps["is_action_valid"]).any()
    # states repeat: far fewer distinct keys per group than steps
    assert (steps.groupby("group_id")["state_key"].nunique() < steps.groupby("group_id").size()
            / 2).all()
    outcomes = steps.groupby(["group_id", "traj_id"])["episode_reward"].first()
    assert set(outcomes.unique()) <= {0.0, 10.0}
    assert steps["task"].str.len().gt(0).all() and steps["env"].eq(TW).all()
    invalid = steps[~steps["is_action_valid"]]
    assert invalid["step_reward"].eq(0).all()


# -- run directories --------------------------------------------------------------------------
def test_collect_run_writes_a_run_the_loaders_open(tmp_path, tw_cache):
    config = CollectConfig(env=TW, tasks=2, group_size=4, train_steps=2, max_steps=10,
                           env_kwargs={"cache": str(tw_cache)})
    seen = []
    out = collect_run(config, ScriptedPolicy(follow=0.5), tmp_path / "run",
                      policy_spec="scripted", on_step=lambda s, m: seen.append((s, m)))
    run = open_run(out)
    assert run.train_steps() == [1, 2] and [s for s, _ in seen] == [1, 2]
    assert run.manifest["env"] == TW and run.manifest["model"] == "scripted"
    assert run.manifest["config"]["group_size"] == 4 and len(run.manifest["tasks"]) == 2
    summary = run.summary()
    assert summary["n_groups"].tolist() == [2, 2] and summary["n_traj"].tolist() == [8, 8]
    metrics = run.metrics()
    assert {"env/errors", "g2po/merge_rate", "time/collect_s"} <= set(metrics.columns)
    assert metrics["env/errors"].eq(0).all()
    group = run.groups(1)[0]
    rows = run.load_group(1, group)
    assert rows["group_id"].eq(group).all() and rows["traj_id"].nunique() == 4


def test_resume_skips_written_steps_and_equals_an_uninterrupted_run(tmp_path, tw_cache):
    kw = dict(env=TW, tasks=1, group_size=3, max_steps=8, seed=2,
              env_kwargs={"cache": str(tw_cache)})
    full = collect_run(CollectConfig(train_steps=2, **kw), ScriptedPolicy(seed=2),
                       tmp_path / "full")
    part = collect_run(CollectConfig(train_steps=1, **kw), ScriptedPolicy(seed=2),
                       tmp_path / "part")
    collect_run(CollectConfig(train_steps=2, **kw), ScriptedPolicy(seed=2), part, resume=True)
    a, b = open_run(full), open_run(part)
    assert b.train_steps() == [1, 2]
    for step in (1, 2):
        pd.testing.assert_frame_equal(a.load_step(step), b.load_step(step))


def test_task_pool_cycles_tasks_over_training_steps():
    config = CollectConfig(env="x", tasks=2, task_pool=3)
    pool = ["a", "b", "c"]
    assert [config.step_tasks(pool, s) for s in (1, 2, 3)] == [["a", "b"], ["c", "a"],
                                                               ["b", "c"]]
    with pytest.raises(ValueError, match="task_pool"):
        CollectConfig(env="x", tasks=4, task_pool=2)
    with pytest.raises(ValueError, match="group_size"):
        CollectConfig(env="x", group_size=0)


# -- the command ------------------------------------------------------------------------------
def test_cli_collects_textworld_rollouts_from_nothing(tmp_path, capsys):
    out, cache = tmp_path / "cli-run", tmp_path / "empty-cache"
    args = ["rollouts", "--env", TW, "--policy", "random", "--tasks", "2", "--group-size", "3",
            "--max-steps", "6", "--invalid-rate", "0.3", "--out", str(out),
            "--env-arg", f"cache={cache}"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "step 1/1:" in err and "invalid" in err
    games = sorted(p.name for p in (cache / "textworld" / "coin_collector-level3").iterdir())
    assert games == ["seed0.json", "seed0.z8", "seed1.json", "seed1.z8"]  # generated here
    steps = open_run(out).load_step(1)
    assert len(steps) > 0 and (~steps["is_action_valid"]).any()
    # an existing run is never overwritten silently
    assert main(args) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    np.testing.assert_array_equal(open_run(out).load_step(1)["response"], steps["response"])


def test_cli_overwrite_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("precious")
    code = main(["rollouts", "--env", TW, "--out", str(tmp_path), "--overwrite"])
    assert code == 2 and "not a run directory" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").exists()


def test_cli_lists_environments_and_names_missing_options(capsys):
    assert main(["rollouts", "--list-envs"]) == 0
    listed = capsys.readouterr().out
    assert "textworld" in listed and "webshop" in listed
    assert main(["rollouts", "--env", TW]) == 2
    assert "--out" in capsys.readouterr().err


# -- the bundled samples ----------------------------------------------------------------------
SAMPLES = Path(__file__).resolve().parents[2] / "sample_rollouts"


@pytest.mark.parametrize("name", ["coin_collector", "treasure_hunter", "cooking"])
def test_sample_runs_open_and_have_a_realistic_shape(name):
    run = open_run(SAMPLES / name)
    assert run.manifest["format"] == "g2po-run" and run.manifest["env"].startswith("textworld:")
    summary = run.summary()
    assert summary["n_groups"].eq(4).all() and summary["n_traj"].eq(32).all()
    steps = check_steps(run.load_step(run.train_steps()[-1]))
    assert steps.groupby("group_id")["traj_id"].nunique().eq(8).all()
    outcome = steps.groupby(["group_id", "traj_id"])["won"].any()
    assert outcome.any() and not outcome.all()  # successes and failures
    assert (~steps["is_action_valid"]).any()  # invalid actions
    assert steps.groupby("group_id")["state_key"].nunique().lt(
        steps.groupby("group_id").size()).all()  # repeated states
    assert steps["env_error"].isna().all()


def test_samples_include_a_multi_step_run_and_stay_small():
    assert len(open_run(SAMPLES / "coin_collector").train_steps()) >= 3
    size = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert size < 20 * 2**20


def test_an_estimator_needing_a_column_the_environment_does_not_report_is_refused_first():
    """MiGPO on an environment that reports no milestones would stop at the first advantage
    step with a message about mapping a log's column; the trainers ask before anything runs."""
    from g2po.rollouts import check_reports

    check_reports("migpo", CorridorFamily(game=MilestoneCorridor), "c0")  # reports them
    check_reports("g2po", CorridorFamily(), "c0")  # needs none
    with pytest.raises(G2POError, match="needs the step column.*milestone_achieved.*"
                                        "'corridor:test' does not report"):
        check_reports("migpo", CorridorFamily(), "c0")
