"""The groups table, column by column, on hand-built groups; a whole run through its cache."""

from __future__ import annotations

import doctest
import os

import numpy as np
import pandas as pd
import pytest

from g2po import compute_advantages
from g2po.analysis import triage as triage_module
from g2po.analysis.alarms import credit_alarms
from g2po.analysis.checks import list_checks
from g2po.analysis.state_graph import state_graph
from g2po.analysis.triage import (
    ALARM_COLUMNS,
    TRIAGE_COLUMNS,
    assess,
    brief_view,
    filter_groups,
    run_findings,
    sort_groups,
    step_shares,
    triage_groups,
    triage_log,
    truncation_hint,
)
from g2po.errors import StepTableError
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders import RunWriter, open_log
from loaders.summary import group_summary, trajectory_table
from tests.app.builders import group_steps
from tests.g2po.analysis.groups import (
    ALL_FAILED,
    ALL_SUCCEEDED,
    aliased_group,
    cut_by_done,
    cut_group,
    hub_group,
    random_walks,
)
from tests.g2po.builders import THREE, TWO, trajectories

RULE = OutcomeRule(truncate_at=4)
#: The columns judged over the whole table (the rest is each group's own): the judgement, and
#: what the checks that need the whole run fill (:attr:`Check.whole`).
JUDGED = ["severity", "reason", "n_alarms", "run_wide"]


def whole_columns(table: pd.DataFrame) -> list[str]:
    return [c.column if name == "count" else name for c in list_checks()
            if c.whole is not None for name in c.whole(table)]


@pytest.fixture
def mixed() -> pd.DataFrame:
    """Six groups, each with something to find, one with invalid actions and two trajectory
    lengths (THREE)."""
    return pd.concat([trajectories(THREE, "three"), trajectories(TWO, "two"),
                      trajectories(ALL_FAILED, "failed"), trajectories(ALL_SUCCEEDED, "won"),
                      hub_group(), cut_group()], ignore_index=True)


def row(table: pd.DataFrame, group_id: str) -> pd.Series:
    return table.set_index("group_id").loc[group_id]


def test_every_column_against_the_estimators_graphs_and_run_summaries(mixed):
    table = triage_groups(mixed, rule=RULE)
    assert list(table.columns) == TRIAGE_COLUMNS
    assert list(table["group_id"]) == sorted(mixed["group_id"].unique())
    adv = compute_advantages(mixed, "g2po")
    summary = group_summary(trajectory_table(mixed), RULE).set_index("group_id")
    for gid, rows in mixed.groupby("group_id"):
        got = row(table, gid)
        rewards = rows.drop_duplicates("traj_id")["episode_reward"].to_numpy()
        a = adv.loc[rows.index]
        graph = state_graph(rows, rule=OutcomeRule())
        states = graph.nodes[graph.nodes["kind"] == "state"]
        assert got["task"] == gid  # no task column: the group id
        assert got["rollouts"] == rows["traj_id"].nunique() == summary.loc[gid, "n_traj"]
        assert got["steps"] == len(rows)
        assert got["success_rate"] == pytest.approx((rewards == 10).mean())
        assert got["success_rate"] == pytest.approx(summary.loc[gid, "success_rate"])
        assert got["reward_mean"] == pytest.approx(rewards.mean())
        assert got["reward_std"] == pytest.approx(rewards.std())
        assert got["zero_adv_share"] == pytest.approx((a["adv"].abs() <= 1e-6).mean())
        assert got["adv_abs_mean"] == pytest.approx(a["adv"].abs().mean())
        assert got["adv_ec_abs_mean"] == pytest.approx(a["adv_ec"].abs().mean())
        assert got["state_nodes"] == len(states)
        assert got["merge_rate"] == pytest.approx(1 - len(states) / len(rows))
        assert got["max_value_var"] == pytest.approx(states["value_var"].max())
        assert got["invalid_rate"] == pytest.approx(summary.loc[gid, "invalid_rate"])
        assert got["truncated_share"] == pytest.approx(summary.loc[gid, "truncated_rate"])
        assert got["no_signal"] == bool((a["adv"].abs() <= 1e-6).all())
        grpo = compute_advantages(rows, "grpo")["adv"]
        assert got["no_signal_grpo"] == bool((grpo.abs() <= 1e-6).all())
        wins = rows.loc[rows["episode_reward"] == 10].groupby("traj_id").size()
        assert got["shortest_win"] == (wins.min() if len(wins) else pytest.approx(np.nan,
                                                                                 nan_ok=True))
        # the explorer's alarms count what the table counts; the table's firing kinds the
        # explorer does not word are those that need the whole run or are said for it alone
        alarms = {x.kind: x.count for x in credit_alarms(graph, rule=RULE)}
        assert all(int(got[f"alarm_{k}"]) == n for k, n in alarms.items())
        firing = {c.kind for c in list_checks() if c.fired(table, "g2po")[table.index[
            table["group_id"] == gid][0]]}
        assert firing - set(alarms) <= {"partial_group", "length_weighting"}, gid


def test_what_the_hand_built_groups_show(mixed):
    table = triage_groups(mixed, rule=RULE)
    failed, won = row(table, "failed"), row(table, "won")
    assert failed["no_signal"] and failed["no_signal_grpo"] and failed["zero_adv_share"] == 1
    assert failed["adv_abs_mean"] == 0 and failed["alarm_no_signal"] == failed["steps"]
    assert not won["no_signal"] and won["no_signal_grpo"] and won["zero_adv_share"] < 1
    assert won["success_rate"] == 1 and won["reward_std"] == 0
    assert row(table, "alf")["alarm_hub"] == 1
    assert row(table, "alf")["invalid_rate"] == pytest.approx(2 / 6)
    cut = row(table, "cut")
    assert cut["truncated_share"] == pytest.approx(3 / 5) and cut["alarm_truncation"] == 3
    # without the rule, a log without done has no truncation
    assert row(triage_groups(mixed, rule=OutcomeRule()), "cut")["truncated_share"] == 0
    # the default order puts the group without a G2PO signal first, the healthy one last
    assert sort_groups(table)["group_id"].iloc[0] == "failed"
    assert row(table, "three")["severity"] == 0 and row(table, "won")["severity"] == 0


def test_groups_sharing_a_task():
    a = trajectories(THREE, "s1-cook").assign(task="cook the egg")
    b = trajectories(TWO, "s2-cook").assign(task="cook the egg")
    c = trajectories(TWO, "other").assign(task=None)
    table = triage_groups(pd.concat([a, b, c], ignore_index=True), rule=OutcomeRule())
    assert list(table["task"]) == ["other", "cook the egg", "cook the egg"]
    assert len(table) == 3  # one row per group, not per task
    cooking = filter_groups(table, task="COOK THE")
    assert sorted(cooking["group_id"]) == ["s1-cook", "s2-cook"]
    assert list(filter_groups(table, task="other")["group_id"]) == ["other"]


def test_training_steps_keep_their_groups_apart():
    one = trajectories(THREE, "g").assign(train_step=1)
    two = trajectories(ALL_FAILED, "g").assign(train_step=2)
    table = triage_groups(pd.concat([one, two], ignore_index=True), rule=OutcomeRule())
    assert list(table["train_step"]) == [1, 2] and list(table["group_id"]) == ["g", "g"]
    assert list(table["no_signal"]) == [False, True]
    # judged over the table it is in (a group is weighed against the run's others)
    pd.testing.assert_frame_equal(assess(table.iloc[[1]].reset_index(drop=True)),
                                  triage_groups(two, rule=OutcomeRule()))


def test_categorical_state_keys_give_the_same_table_under_every_strategy():
    steps = group_steps(seed=4, rows=900)
    coded = steps.assign(state_key=steps["state_key"].astype("category"),
                         action=steps["action"].astype("category"))
    for strategy in ("exact", "normalized", "regex:room \\d+", "similarity:0.9"):
        pd.testing.assert_frame_equal(
            triage_groups(coded, rule=OutcomeRule(), params=G2POParams(state_key=strategy)),
            triage_groups(steps, rule=OutcomeRule(), params=G2POParams(state_key=strategy)),
            obj=strategy,
        )
    # a missing key or action is still a missing value, named by the validation
    broken = coded.copy()
    broken.loc[5, "action"] = None
    with pytest.raises(StepTableError, match="'action' has null"):
        triage_groups(broken, rule=OutcomeRule())


def test_parameters_and_rule_change_the_numbers():
    steps = pd.concat([trajectories(THREE, "g"), random_walks(groups=2)], ignore_index=True)
    base = triage_groups(steps, rule=OutcomeRule())
    assert not np.allclose(
        triage_groups(steps, rule=OutcomeRule(), params=G2POParams(gamma=0.5))["adv_ec_abs_mean"],
        base["adv_ec_abs_mean"],
    )
    flat = triage_groups(steps, rule=OutcomeRule(), params=G2POParams(w=0.0))
    assert (flat["adv_ec_abs_mean"] == base["adv_ec_abs_mean"]).all()  # A^EC itself stays
    assert not np.allclose(flat["adv_abs_mean"], base["adv_abs_mean"])
    ones = steps.assign(episode_reward=steps["episode_reward"] / 10)
    assert (triage_groups(ones, rule=OutcomeRule())["success_rate"] == 0).all()
    np.testing.assert_allclose(triage_groups(ones, rule=OutcomeRule(success_reward=1.0)
                                             )["success_rate"], base["success_rate"])


def test_sort_and_filter():
    table = pd.DataFrame({
        "train_step": [1, 1, 2], "group_id": ["b", "a", "a"], "task": ["t", "u", "t"],
        "success_rate": [0.5, 1.0, 0.0], "no_signal": [False, True, False],
        "no_signal_grpo": [False, True, True], "n_alarms": [2, 1, 0],
        "zero_adv_share": [0.0, 1.0, 0.2],
        **{c: [0, 0, 0] for c in ALARM_COLUMNS}})
    table["alarm_hub"] = [3, 0, 0]
    # the default order is by severity (issue 27), equal severities by alarm kinds, not by step
    table["severity"], table["steps"] = [0.2, 0.2, 0.9], [5, 5, 5]
    worst = sort_groups(table)
    assert list(zip(worst["train_step"], worst["group_id"])) == [(2, "a"), (1, "b"), (1, "a")]
    by = sort_groups(table, "success_rate")
    assert list(by["success_rate"]) == [1.0, 0.5, 0.0]
    assert list(sort_groups(table, "success_rate", descending=False)["success_rate"]) == \
        [0.0, 0.5, 1.0]
    assert list(sort_groups(table, "task")["task"]) == ["t", "t", "u"]  # text: A to Z
    with pytest.raises(KeyError, match="no column 'nope'"):
        sort_groups(table, "nope")
    assert list(filter_groups(table, alarms=["hub"])["group_id"]) == ["b"]
    assert len(filter_groups(table, alarms=["hub", "no_signal_grpo"])) == 3
    assert list(filter_groups(table, alarms=["no_signal_g2po"])["success_rate"]) == [1.0]
    assert list(filter_groups(table, min_success=0.4, max_success=0.6)["group_id"]) == ["b"]
    assert list(filter_groups(table, train_steps=[2])["train_step"]) == [2]
    with pytest.raises(KeyError, match="unknown alarm"):
        filter_groups(table, alarms=["boom"])


def test_step_shares(mixed):
    parts = [mixed.assign(train_step=1),
             trajectories(ALL_FAILED, "x").assign(train_step=2)]
    table = triage_groups(pd.concat(parts, ignore_index=True), rule=RULE)
    shares = step_shares(table).set_index("train_step")
    assert list(shares["groups"]) == [6, 1]
    assert shares.loc[1, "no_signal"] == pytest.approx(1 / 6)
    assert shares.loc[1, "no_signal_grpo"] == pytest.approx(2 / 6)
    assert shares.loc[1, "alarm_hub"] == pytest.approx(1 / 6)
    # cut, and the hub group, whose failures are 5 steps long (≥ truncate_at 4)
    assert shares.loc[1, "alarm_truncation"] == pytest.approx(2 / 6)
    assert shares.loc[2, "no_signal"] == 1.0


def test_the_triage_docstring_examples_hold():
    assert doctest.testmod(triage_module).failed == 0


# -- a whole run, cached ---------------------------------------------------------------------

@pytest.fixture
def run(tmp_path):
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    for step in (1, 2, 3):
        steps = group_steps(seed=step, rows=700)
        writer.write_step(step, steps.assign(task="task " + steps["group_id"].astype(str)))
    return tmp_path / "run"


def calls():
    seen = []
    return seen, lambda done, total: seen.append((done, total))


def test_a_run_equals_its_training_steps_and_is_cached(run, tmp_path):
    log = open_log(run)
    cache = tmp_path / "cache"
    seen, progress = calls()
    table = triage_log(log, cache=cache, progress=progress)
    direct = assess(pd.concat([triage_groups(log.load_step(s), rule=log.rule())
                               for s in log.train_steps()], ignore_index=True))
    pd.testing.assert_frame_equal(table, direct)
    assert table["task"].str.startswith("task ").all()
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)
    assert len(list(cache.glob("*.parquet"))) == 1

    # opened again: every step from the cache
    seen, progress = calls()
    pd.testing.assert_frame_equal(triage_log(open_log(run), cache=cache, progress=progress),
                                  table)
    assert seen == [(3, 3)]

    # a step file that changed is computed again, and its new rows are used
    RunWriter(run, {}, resume=True).write_step(2, trajectories(ALL_FAILED, "new").assign(
        task="new"), overwrite=True)
    seen, progress = calls()
    again = triage_log(open_log(run), cache=cache, progress=progress)
    assert seen[0] == (2, 3)
    assert list(again[again["train_step"] == 2]["group_id"]) == ["new"]
    assert bool(again[again["train_step"] == 2]["no_signal"].iloc[0])
    kept = [c for c in table.columns if c not in JUDGED + whole_columns(table)]
    pd.testing.assert_frame_equal(again[again["train_step"] != 2].reset_index(drop=True)[kept],
                                  table[table["train_step"] != 2].reset_index(drop=True)[kept])

    # a touched file (same bytes, new mtime) is read again too
    path = open_log(run).step_source(3)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    seen, progress = calls()
    triage_log(open_log(run), cache=cache, progress=progress)
    assert seen[0] == (2, 3)


def test_another_rule_or_parameter_is_another_cache_entry(run, tmp_path):
    log, cache = open_log(run), tmp_path / "cache"
    base = triage_log(log, cache=cache)
    seen, progress = calls()
    other = triage_log(log, cache=cache, rule=OutcomeRule(success_reward=0.0),
                       progress=progress)
    assert seen[0] == (0, 3)
    assert not np.allclose(other["success_rate"], base["success_rate"])
    seen, progress = calls()
    triage_log(log, cache=cache, progress=progress, params=G2POParams(gamma=0.5))
    assert seen[0] == (0, 3)
    assert len(list(cache.glob("*.parquet"))) == 3
    # one step asked for: only it
    one = triage_log(log, [2], cache=cache)
    assert set(one["train_step"]) == {2}
    pd.testing.assert_frame_equal(
        one, assess(base[base["train_step"] == 2].reset_index(drop=True)))


def test_a_table_log_has_no_step_files_and_is_not_cached(tmp_path):
    path = tmp_path / "steps.csv"
    trajectories(THREE).assign(train_step=4).to_csv(path, index=False)
    log = open_log(path)
    assert log.step_source(4) is None
    table = triage_log(log, cache=tmp_path / "cache")
    assert list(table["train_step"]) == [4] and not (tmp_path / "cache").exists()


def test_the_cache_folder_follows_g2po_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path))
    assert triage_module.cache_dir() == tmp_path / "triage"


def test_a_verl_group_where_every_advantage_is_zero_says_so(tmp_path):
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    entries = agent_loop_entries(1)
    failed = entries[0]["uid"].rsplit("_", 2)[0]  # the first prompt: every score set to 0
    for e in entries:
        if e["uid"].startswith(failed):
            e["score"] = 0.0
    write_verl_dump(tmp_path / "dump", 1, entries)
    log = open_log(tmp_path / "dump")
    table = triage_log(log, cache=tmp_path / "cache").set_index("group_id")
    assert table.loc[failed, "no_signal"] and table.loc[failed, "no_signal_grpo"]
    assert table.loc[failed, "alarm_no_signal"] == table.loc[failed, "steps"]
    other = table.drop(index=failed)
    assert not other["no_signal"].any()
    graph = state_graph(log.load_group(1, failed), rule=OutcomeRule())
    assert credit_alarms(graph, rule=OutcomeRule())[0].title == "No training signal: G2PO and GRPO"
    assert list(tmp_path.joinpath("cache").glob("*.parquet"))  # dump files are cached too


# -- issues 27, 36: severity, reasons, the run's findings -----------------------------------

def test_an_alarm_on_most_groups_is_said_once_and_weighs_little():
    steps = pd.concat([*(cut_by_done(f"cut{i}") for i in range(5)), hub_group()],
                      ignore_index=True)
    table = triage_groups(steps, rule=OutcomeRule())
    findings = [f for f in run_findings(table) if f.level == "defect"]
    assert [(f.kind, f.groups, f.total) for f in findings] == [("truncation", 5, 6)]
    assert "Truncation on 5 of 6 groups" in findings[0].text and "--truncate-at" in \
        findings[0].fix
    assert "the task's own budget" in findings[0].text  # where raising it is not the fix
    cut = table[table["group_id"].str.startswith("cut")]
    assert (cut["alarm_truncation"] == 3).all()  # the raw count stays
    assert (cut["run_wide"] == "truncation").all() and (cut["n_alarms"] == 0).all()
    # weighed by how common it is: (1 - 5/10)² of its own 0.5 · 3/5 (the limit is its wins')
    assert cut["severity"].to_numpy() == pytest.approx(0.25 * 0.5 * 3 / 5)
    # the local defect comes first, with its reason
    hub = row(table, "alf")
    assert hub["run_wide"] == "" and hub["n_alarms"] == 1
    assert hub["reason"].startswith("hub: 'Nothing happens.' reached from 5 states, 100% "
                                    "through invalid actions") and hub["severity"] > 0.1
    assert sort_groups(table)["group_id"].iloc[0] == "alf"
    # counted whole (nothing weighed), the cut would outrank the hub
    plain = assess(table, exclude=())
    assert plain.loc[cut.index, "reason"].str.startswith("3 of 5 rollouts cut at the step "
                                                         "limit (4)").all()
    alf = table.index[table["group_id"] == "alf"][0]
    assert (plain.loc[cut.index, "severity"] > plain.loc[alf, "severity"]).all()
    # assessing again changes nothing (the raw counts are kept)
    pd.testing.assert_frame_equal(assess(table), table)


def test_alike_runs_rank_alike_with_no_cliff_at_half_the_groups():
    """Issue 36: the former rule dropped a kind at 50 % of the groups, so a run with 4 cut
    groups of 8 and one with 5 answered differently. The weight falls smoothly instead."""
    severity = {}
    for k in range(2, 9):
        steps = pd.concat([*(cut_by_done(f"cut{i}") for i in range(k)),
                           *(cut_group(f"done{i}").assign(done=True) for i in range(10 - k))],
                          ignore_index=True)
        table = triage_groups(steps, rule=OutcomeRule())
        severity[k] = float(table.loc[table["group_id"] == "cut0", "severity"].iloc[0])
    steps_down = np.diff([severity[k] for k in sorted(severity)])
    assert (steps_down < 0).all()  # the more common, the less each weighs ...
    assert np.abs(steps_down).max() < 0.04  # ... and never by a jump
    assert severity[4] / severity[5] < 1.3


def test_no_signal_counts_the_estimator_trained_with_and_solved_groups_are_progress():
    """Issue 36: the Groups banner counted GRPO's zeros while the page said G2PO, and said
    the solved groups again as "All succeeded"."""
    solved = [trajectories(ALL_SUCCEEDED, f"ok{i}") for i in range(5)]
    failed = trajectories(ALL_FAILED, "failed")
    table = triage_groups(pd.concat([*solved, failed], ignore_index=True), rule=OutcomeRule())
    g2po = {f.kind: f for f in run_findings(table, "g2po")}
    assert "no_signal" not in g2po  # G2PO ranks the solved groups' steps: 1 group, local
    assert g2po["all_success"].level == "note" and g2po["all_success"].groups == 5
    assert "progress" in g2po["all_success"].text
    assert row(table, "failed")["reason"].startswith("no signal under G2PO")
    assert (table.loc[table["group_id"] != "failed", "severity"] == 0).all()
    grpo_table = assess(table, "grpo")
    grpo = {f.kind: f for f in run_findings(grpo_table, "grpo")}
    # GRPO gets nothing from the solved groups either: that is progress, not the defect
    assert grpo["no_signal"].groups == 6 and grpo["no_signal"].level == "defect"
    assert "1 where every rollout failed, 5 where every rollout succeeded" in \
        grpo["no_signal"].text
    assert (grpo_table.loc[grpo_table["group_id"] != "failed", "severity"] == 0).all()
    assert row(grpo_table, "failed")["reason"].startswith("no signal under GRPO")
    # no rollout of the run ever reaches the success reward: the rule, said where it shows
    failed = [trajectories(ALL_FAILED, f"f{i}") for i in range(5)]
    table = triage_groups(pd.concat(failed, ignore_index=True), rule=OutcomeRule())
    (finding,) = [f for f in run_findings(table) if f.kind == "no_signal"]
    assert "a success reward the rewards never reach" in finding.text
    failed = [trajectories(THREE, f"f{i}").assign(episode_reward=0.0) for i in range(5)]
    table = triage_groups(pd.concat(failed, ignore_index=True), rule=OutcomeRule())
    (finding,) = [f for f in run_findings(table) if f.kind == "penalty_amplification"]
    assert "a success reward the rewards never reach" in finding.text


def test_an_alarm_on_a_few_groups_stays_the_groups_own():
    steps = pd.concat([cut_by_done("cut0"), cut_by_done("cut1"),
                       *(trajectories(THREE, f"ok{i}") for i in range(3))],
                      ignore_index=True)
    table = triage_groups(steps, rule=OutcomeRule())
    assert [f.kind for f in run_findings(table) if f.level == "defect"] == []
    cut = table[table["group_id"].str.startswith("cut")]
    assert cut["reason"].str.startswith("3 of 5 rollouts cut at the step limit (4)").all()
    assert (cut["run_wide"] == "").all() and (cut["n_alarms"] == 1).all()
    assert list(sort_groups(table)["group_id"][:2]) == ["cut0", "cut1"]


def test_an_all_success_group_is_judged_for_the_estimator_trained_with():
    steps = pd.concat([trajectories(ALL_SUCCEEDED, "won"), trajectories(TWO, "two")],
                      ignore_index=True)
    g2po = row(triage_groups(steps, rule=RULE), "won")
    grpo = row(triage_groups(steps, rule=RULE, estimator="grpo"), "won")
    # solved: progress under either estimator, never a defect to rank
    assert grpo["no_signal_grpo"] and grpo["severity"] == 0 and grpo["reason"] == ""
    assert not g2po["no_signal"] and g2po["adv_max"] > g2po["adv_min"]
    assert g2po["severity"] == 0 and g2po["alarm_all_success"] == 2
    with pytest.raises(ValueError, match="unknown estimator 'ppo'"):
        triage_groups(steps, rule=RULE, estimator="ppo")


def test_evidence_read_from_a_run_directorys_categorical_columns(tmp_path):
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    writer.write_step(1, pd.concat([aliased_group(), hub_group(), trajectories(THREE, "three")],
                                   ignore_index=True))
    log = open_log(tmp_path / "run")
    table = triage_log(log, cache=False)
    dark = row(table, "dark")
    assert dark["aliased_evidence"] == "'dark room' + go north → kitchen (2×) | entrance (1×)"
    assert dark["reason"].startswith("key merges states: 'dark room' + go north → kitchen")
    assert row(table, "alf")["hub_evidence"].startswith("'Nothing happens.' reached from 5")
    # the same words as the table of the rows in memory
    memory = triage_groups(log.load_step(1), rule=log.rule())
    assert list(memory["reason"]) == list(table["reason"])
    # declared stochastic, the split says nothing
    assert row(triage_log(log, cache=False, stochastic=True), "dark")["alarm_aliased"] == 0


def test_the_step_limit_hint_from_the_table_is_the_logs(tmp_path):
    from tests.g2po.cli.test_logs import write_cut_log

    log = open_log(write_cut_log(tmp_path / "cut.csv"))
    rule = OutcomeRule(success_reward=1.0)
    hint = truncation_hint(triage_log(log, rule=rule, cache=False), rule)
    assert hint is not None and hint == log.truncation_hint(rule)
    assert (hint.length, hint.n_cut, hint.n_failures, hint.n_traj) == (6, 8, 10, 16)
    stated = OutcomeRule(success_reward=1.0, truncate_at=6)
    assert truncation_hint(triage_log(log, rule=stated, cache=False), stated) is None
    # every rollout of one length says nothing of a limit
    same = triage_groups(trajectories(ALL_FAILED, "f"), rule=OutcomeRule())
    assert truncation_hint(same.assign(shortest=same["longest"]), OutcomeRule()) is None


def test_the_brief_view_keeps_what_tells_rows_apart():
    intro = "Welcome to TextWorld! Here is how to play! First, try to go north. Then "
    table = pd.DataFrame({
        "train_step": [1, 1, 2], "group_id": ["cooking-train-s0", "cooking-train-s1",
                                               "cooking-train-s2"],
        "task": [intro + "take the coin from the sauna.", intro + "open the passageway.",
                 intro + "take the coin from the sauna."],
        "severity": [0.9, 0.0, 0.25], "success_rate": [0.0, 0.5, 1.0],
        "reason": ["penalty is the only signal", "", "hub: …"]})
    view, prefix = brief_view(table)
    assert prefix == "cooking-train-" and list(view["group"]) == ["s0", "s1", "s2"]
    assert list(view.columns) == ["step", "group", "task", "severity", "success", "reason"]
    assert not view["task"].str.contains("Welcome").any()
    assert view["task"][0] == view["task"][2] != view["task"][1]
    assert "sauna" in view["task"][0] and "passageway" in view["task"][1]
    assert list(view["severity"]) == ["0.90", "0.00", "0.25"]
    assert list(view["success"]) == ["0%", "50%", "100%"]
    # one training step, one task, verl's short gts kept as they are
    one, _ = brief_view(table.assign(train_step=1, task="same"))
    assert list(one.columns) == ["group", "severity", "success", "reason"]
    gts, _ = brief_view(table.assign(task=["42", "7", "42"]))
    assert list(gts["task"]) == ["42", "7", "42"]


def test_the_triage_reads_what_its_state_key_strategy_needs(tmp_path):
    """The alfworld key builds each key from the observation and the admissible actions: the
    groups table reads them (a log read column by column), as What if does."""
    from g2po.analysis.group_table import read_columns
    from g2po.analysis.whatif import what_if
    from g2po.state_keys import strategy_columns
    from tests.g2po.builders import alfworld_steps

    steps = alfworld_steps("text")
    path = tmp_path / "steps.parquet"
    steps.to_parquet(path, index=False)
    params = G2POParams(state_key="alfworld")
    assert set(strategy_columns("alfworld")) <= set(read_columns("alfworld"))
    table = triage_log(open_log(path), params=params, cache=False)
    expected = what_if(steps, "alfworld", rule=OutcomeRule()).summary()
    assert table["state_nodes"].tolist() == [expected["nodes_after"]]
    exact = triage_log(open_log(path), cache=False)
    assert exact["state_nodes"].tolist() == [expected["nodes_before"]]
