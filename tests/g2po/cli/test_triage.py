"""``g2po triage`` run as a user runs it: the same table as the library, sorted, cut, filtered,
as text, CSV or JSON, with the outcome-rule flags."""

from __future__ import annotations

import io
import json
import re
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from g2po.analysis.alarms import STOCHASTIC_NOTE
from g2po.analysis.triage import TRIAGE_COLUMNS, sort_groups, triage_log
from g2po.cli import main
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders import RunWriter, open_log
from tests.app.builders import group_steps
from tests.g2po.analysis.groups import (
    ALL_FAILED,
    ALL_SUCCEEDED,
    PENALTY_ONLY,
    aliased_group,
    cut_by_done,
    cut_group,
    hub_group,
)
from tests.g2po.builders import THREE, trajectories
from tests.g2po.cli.test_logs import write_cut_log


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "g2po-cache"))


@pytest.fixture
def run(tmp_path):
    writer = RunWriter(tmp_path / "run", {"config": {"success_reward": 10.0}})
    for step in (1, 2):
        steps = pd.concat([group_steps(seed=step, rows=600),
                           trajectories(ALL_FAILED, f"dead-{step}")], ignore_index=True)
        writer.write_step(step, steps)
    return tmp_path / "run"


def csv_out(capsys) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def test_csv_is_the_librarys_table_worst_first(run, capsys):
    assert main(["triage", str(run), "--format", "csv"]) == 0
    got = csv_out(capsys)
    want = sort_groups(triage_log(open_log(run), cache=False))
    assert list(got.columns) == TRIAGE_COLUMNS
    assert list(got["group_id"]) == list(want["group_id"])
    pd.testing.assert_series_equal(got["adv_abs_mean"], want["adv_abs_mean"],
                                   check_exact=False)
    # the groups without a training signal lead
    assert list(got["group_id"][:2]) == ["dead-1", "dead-2"] and got["no_signal"][:2].all()


def test_one_step_sorted_and_cut_as_json(run, capsys):
    assert main(["triage", str(run), "--step", "2", "--sort", "success_rate", "--top", "3",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 3 and {r["train_step"] for r in rows} == {2}
    rates = [r["success_rate"] for r in rows]
    assert rates == sorted(rates, reverse=True)
    step2 = triage_log(open_log(run), [2], cache=False)
    assert rates[0] == step2["success_rate"].max()
    assert main(["triage", str(run), "--step", "2", "--sort", "success_rate", "--ascending",
                 "--top", "1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["success_rate"] == \
        step2["success_rate"].min()


def test_alarm_and_task_filters(run, capsys):
    assert main(["triage", str(run), "--alarm", "no_signal_g2po", "--format", "csv"]) == 0
    assert sorted(csv_out(capsys)["group_id"]) == ["dead-1", "dead-2"]
    assert main(["triage", str(run), "--task", "DEAD-2", "--format", "csv"]) == 0
    assert list(csv_out(capsys)["group_id"]) == ["dead-2"]


def test_the_terminal_table_says_what_it_holds(run, capsys):
    assert main(["triage", str(run), "--step", "1", "--top", "2"]) == 0
    out = capsys.readouterr().out
    n = len(open_log(run).groups(1))
    assert out.startswith(f"{n} group(s) of training step 1 · outcome rule: reward = "
                          "success reward 10 · 2 shown")
    assert "dead-1" in out.splitlines()[2]


def test_outcome_rule_flags(tmp_path, capsys):
    path = tmp_path / "cut.csv"
    steps = cut_group().assign(episode_reward=cut_group()["episode_reward"] / 10)
    steps.to_csv(path, index=False)
    assert main(["triage", str(path), "--format", "csv"]) == 0
    plain = csv_out(capsys).iloc[0]
    assert plain["success_rate"] == 0 and plain["truncated_share"] == 0
    assert main(["triage", str(path), "--format", "csv", "--success-reward", "1",
                 "--truncate-at", "4"]) == 0
    ruled = csv_out(capsys).iloc[0]
    want = triage_log(open_log(path), rule=OutcomeRule(success_reward=1.0, truncate_at=4),
                      cache=False).iloc[0]
    assert ruled["success_rate"] == pytest.approx(1 / 5) == want["success_rate"]
    assert ruled["truncated_share"] == pytest.approx(3 / 5) and ruled["alarm_truncation"] == 3


def test_g2po_parameters_and_the_log_format_flag(run, capsys):
    assert main(["triage", str(run), "--step", "1", "-p", "gamma=0.5", "--format", "csv",
                 "--log-format", "run"]) == 0
    got = csv_out(capsys).sort_values("group_id").reset_index(drop=True)
    want = triage_log(open_log(run), [1], cache=False, params=G2POParams(gamma=0.5))
    pd.testing.assert_series_equal(got["adv_ec_abs_mean"], want["adv_ec_abs_mean"],
                                   check_exact=False)


def test_mistakes_are_one_line_errors(run, capsys):
    assert main(["triage", str(run), "--sort", "nope"]) == 2
    assert "no column 'nope' to sort by" in capsys.readouterr().err
    assert main(["triage", str(run), "--step", "9"]) == 2
    assert "no training step 9" in capsys.readouterr().err
    assert main(["triage", str(run), "-p", "success_reward=1"]) == 2
    assert "--success-reward" in capsys.readouterr().err
    # the kinds are the registry's: an unknown one names them
    assert main(["triage", str(run), "--alarm", "boom"]) == 2
    err = capsys.readouterr().err
    assert "unknown alarm 'boom'" in err and "aliased" in err and "no_signal_grpo" in err


# -- issue 27 ---------------------------------------------------------------------------------

def write(tmp_path, *groups: pd.DataFrame):
    path = tmp_path / "groups.csv"
    pd.concat(groups, ignore_index=True).to_csv(path, index=False)
    return str(path)


def test_the_estimator_you_train_with_judges_an_all_success_group(tmp_path, capsys):
    path = write(tmp_path, trajectories(ALL_SUCCEEDED, "won"), trajectories(PENALTY_ONLY, "pen"),
                 trajectories(THREE, "three"))
    assert main(["triage", path, "--format", "csv"]) == 0
    g2po = csv_out(capsys).set_index("group_id")
    # G2PO: the penalty is the only signal of one; the solved group is progress (issue 36)
    assert g2po.index[0] == "pen" and g2po["reason"].iloc[0].startswith(
        "penalty is the only signal")
    assert g2po.loc["won", "severity"] == 0 and g2po.loc["won", "alarm_all_success"] == 2
    assert main(["triage", path, "--format", "csv", "--estimator", "grpo"]) == 0
    grpo = csv_out(capsys).set_index("group_id")
    # GRPO learns nothing from the failed group; the solved one is still progress
    assert grpo.index[0] == "pen"
    assert grpo.loc["pen", "reason"].startswith("no signal under GRPO: all 2 rollouts got "
                                                "reward 0")
    assert grpo.loc["won", "severity"] == 0 and grpo.loc["won", "no_signal_grpo"]
    with pytest.raises(SystemExit):
        main(["triage", path, "--estimator", "ppo"])


def test_stochastic_says_what_the_check_cannot_tell(tmp_path, capsys):
    path = write(tmp_path, aliased_group(), trajectories(THREE, "three"))
    assert main(["triage", path, "--format", "csv"]) == 0
    out = capsys.readouterr()
    dark = pd.read_csv(io.StringIO(out.out)).set_index("group_id").loc["dark"]
    assert dark["alarm_aliased"] == 1 and "key merges states: 'dark room'" in dark["reason"]
    assert STOCHASTIC_NOTE not in out.err
    assert main(["triage", path, "--format", "csv", "--stochastic"]) == 0
    out = capsys.readouterr()
    dark = pd.read_csv(io.StringIO(out.out)).set_index("group_id").loc["dark"]
    assert dark["alarm_aliased"] == 0 and "key merges" not in str(dark["reason"])
    assert f"g2po triage: {STOCHASTIC_NOTE}." in out.err


def test_a_run_wide_finding_is_said_once_on_stderr(tmp_path, capsys):
    path = write(tmp_path, *(cut_by_done(f"cut{i}") for i in range(5)), hub_group())
    assert main(["triage", path]) == 0
    out = capsys.readouterr()
    said = [line for line in out.err.splitlines() if "run-wide" in line]
    assert len(said) == 1 and said[0].startswith("g2po triage: run-wide: Truncation on 5 of 6 "
                                                 "groups")
    table = out.out.splitlines()
    assert "hub: 'Nothing happens.'" in table[2]  # the local defect first, the cut below it
    assert all("step limit" in line for line in table[3:8])


def test_a_suspected_step_limit_is_warned_of_as_validate_does(tmp_path, capsys):
    path = str(write_cut_log(tmp_path / "cut.csv"))
    assert main(["triage", path, "--success-reward", "1", "--format", "csv"]) == 0
    err = capsys.readouterr().err
    assert "g2po triage: truncation? 8 of 10 failed trajectories (of 16) end at the same, " \
           "largest length 6" in err and "Add --truncate-at 6" in err
    assert main(["triage", path, "--success-reward", "1", "--truncate-at", "6"]) == 0
    assert "truncation?" not in capsys.readouterr().err


@pytest.mark.parametrize("width", [80, 160])
def test_the_terminal_table_fits_the_width(tmp_path, capsys, monkeypatch, width):
    intro = "Welcome to TextWorld! Here is how to play! First, try to go north. Then, "
    groups = []
    for i, (kind, place) in enumerate([("won", "sauna"), ("dark", "cellar"),
                                       ("three", "garden"), ("alf", "attic")]):
        steps = {"won": trajectories(ALL_SUCCEEDED), "dark": aliased_group(),
                 "three": trajectories(THREE), "alf": hub_group()}[kind]
        groups.append(steps.assign(group_id=f"cooking-recipe3-take2-go9-train-s{i}",
                                   task=f"{intro}take the coin from the {place}."))
    path = write(tmp_path, *groups)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["triage", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= width
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["group", "task"])
    assert "group ids after 'cooking-recipe3-take2-go9-train-'" in " ".join(lines[:header])
    assert lines[header].split() == ["group", "task", "severity", "success", "reason"]
    rows = lines[header + 1:]
    # worst first, each by its id's end, its task's place and the reason
    assert [r.split()[:2] for r in rows[:2]] == [["s3", "attic"], ["s1", "cellar"]]
    assert sorted(r.split()[0] for r in rows[2:]) == ["s0", "s2"]  # solved, and healthy
    assert "cooking-recipe3" not in "".join(rows) and "Welcome" not in "".join(rows)
    assert "hub: 'Nothing" in rows[0]
    assert "key merges states: 'dark room' + go north" in rows[1]
    if width == 160:  # room for the whole phrase
        assert "'dark room' + go north → kitchen (2×) | entrance (1×)" in rows[1]
    # CSV and JSON keep every column, whatever the width
    assert main(["triage", path, "--format", "csv"]) == 0
    assert list(csv_out(capsys).columns) == TRIAGE_COLUMNS
    assert main(["triage", path, "--all-columns"]) == 0
    assert "adv_ec_abs_mean" in capsys.readouterr().out


# -- issue 36: the group's integrity on a table of the user's own -----------------------------

def test_integrity_findings_on_a_csv(tmp_path, capsys):
    from tests.g2po.analysis.checks.examples import HEALTHY
    from tests.g2po.analysis.checks.test_starts import two_tasks

    def sized(gid, n):
        return trajectories({f"r{i}": HEALTHY["abcd"[i % 4]] for i in range(n)}, gid)

    path = write(tmp_path, *(sized(f"ok{i}", 4) for i in range(5)), sized("short", 2),
                 two_tasks("mixed"))
    assert main(["triage", path, "--format", "csv"]) == 0
    table = csv_out(capsys).set_index("group_id")
    assert list(table.index[:2]) == ["mixed", "short"]
    assert table.loc["mixed", "reason"] == ("rollouts do not share a start: 2 starts: "
                                            "'entrance' (2×), 'garden gate' (2×)")
    assert table.loc["short", "reason"] == "partial group: 2 of the run's usual 4 rollouts"
    assert main(["triage", path, "--alarm", "partial_group", "--format", "csv"]) == 0
    assert list(csv_out(capsys)["group_id"]) == ["short"]


# -- issue 37 item 3: names that do not move; the training step always said; --url ----------

INTRO = ("Welcome to TextWorld! Here is your task for today. First, try to move west. Next, "
         "venture south. With that over with, go to the east. ")


def write_tasks(path, steps=(1, 2)):
    """Six groups per training step (ids ``tw-train-s{k}``, as the generated games' seeds),
    each a task whose long TextWorld intro differs in its room, its verb and its greeting,
    so that the words telling one task apart depend on which others it is told from."""
    rooms = [("retrieve", "workshop"), ("retrieve", "canteen"), ("lift", "workshop"),
             ("recover", "studio"), ("retrieve", "attic"), ("lift", "canteen")]
    parts = []
    for step in steps:
        for k, (verb, room) in enumerate(rooms):
            group = {0: ALL_FAILED, 1: THREE}[k % 2] if k != 3 else PENALTY_ONLY
            greeting = "Hey, thanks for coming over! " if k % 3 == 0 else ""
            parts.append(trajectories(group, f"tw-train-s{k}").assign(
                train_step=step, task=f"{greeting}{INTRO}Then, {verb} the coin from the "
                                      f"floor of the {room}. That's it!"))
    pd.concat(parts, ignore_index=True).to_csv(path, index=False)
    return str(path)


def shown_rows(out: str) -> tuple[list[str], list[list[str]]]:
    """The lines above the terminal table, and the words of its rows."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines)
                  if line.split()[:2] in (["step", "group"], ["group", "task"]))
    return lines[:header], [line.split() for line in lines[header + 1:] if line.strip()]


def group_and_task(words: list[str]) -> tuple[str, str]:
    """A row's short group id and its task label (the words before its severity)."""
    first = 1 if words[0].isdigit() else 0
    severity = next(i for i, w in enumerate(words) if i > first and re.fullmatch(r"\d\.\d\d", w))
    return words[first], " ".join(words[first + 1:severity])


def test_a_groups_task_reads_the_same_whatever_is_shown(tmp_path, capsys, monkeypatch):
    path = write_tasks(tmp_path / "tasks.csv")
    seen: dict[str, set[str]] = {}
    for width in (80, 100, 160):
        monkeypatch.setenv("COLUMNS", str(width))
        for extra in ([], ["--top", "1"], ["--top", "3"], ["--sort", "task"],
                      ["--task", "canteen"], ["--step", "2"]):
            assert main(["triage", path, *extra]) == 0
            _, rows = shown_rows(capsys.readouterr().out)
            assert rows
            for words in rows:
                group, label = group_and_task(words)
                seen.setdefault(group, set()).add(label)
    assert len(seen) == 6
    assert all(len(labels) == 1 for labels in seen.values()), seen
    # the labels tell the tasks apart, by their own words, never the shared greeting
    first = {g: next(iter(labels)) for g, labels in seen.items()}
    assert len(set(first.values())) == 6
    assert not any("Welcome" in label or "Hey" in label for label in first.values())


def test_the_training_step_of_the_rows_is_always_said(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    path = write_tasks(tmp_path / "tasks.csv")
    assert main(["triage", path]) == 0
    said, rows = shown_rows(capsys.readouterr().out)
    assert "12 group(s) of 2 training steps" in " ".join(said)
    assert {r[0] for r in rows} == {"1", "2"}  # a column: the rows span both
    assert main(["triage", path, "--step", "2"]) == 0
    said, rows = shown_rows(capsys.readouterr().out)
    assert "6 group(s) of training step 2 ·" in " ".join(said)
    assert all(r[0].startswith("s") for r in rows)  # no step column: the line says it
    assert main(["triage", path, "--top", "1", "--sort", "train_step", "--ascending"]) == 0
    said, rows = shown_rows(capsys.readouterr().out)
    assert "1 shown, all of training step 1" in " ".join(said) and len(rows) == 1


def test_url_gives_each_row_its_group_in_the_explorer(tmp_path, capsys):
    path = write_tasks(tmp_path / "tasks.csv")
    assert main(["triage", path, "--format", "csv", "--url", "http://box:9000/app",
                 "--app-log", str(tmp_path)]) == 0
    table = csv_out(capsys)
    assert list(table.columns) == [*TRIAGE_COLUMNS, "url"]
    for step, group, url in zip(table["train_step"], table["group_id"], table["url"],
                                strict=True):
        parts = urlsplit(url)
        assert url.startswith("http://box:9000/app/?")
        assert parse_qs(parts.query) == {"run": ["tasks.csv"], "step": [str(step)],
                                         "group": [group]}
    # in the terminal: listed whole under the table, in the table's order
    assert main(["triage", path, "--top", "2", "--url"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    at = lines.index("the rows' views in the app:")
    _, rows = shown_rows("\n".join(lines[:at]))
    listed = lines[at + 1:]
    assert len(listed) == len(rows) == 2
    assert all(f"tw-train-{row[1]}: http://localhost:8501/?run=tasks.csv&open=" in line
               for row, line in zip(rows, listed, strict=True))
    assert "g2po triage: note: the URLs open" in out.err


def test_url_of_a_sweep_opens_each_rows_own_run(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_tasks(sweep / "a.csv", steps=(1,))
    write_tasks(sweep / "b.csv", steps=(1, 2))
    assert main(["triage", str(sweep), "--format", "json", "--url"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["run"] for r in rows} == {"a.csv", "b.csv"} and len(rows) == 18
    for r in rows:
        query = parse_qs(urlsplit(r["url"]).query)
        assert query == {"run": [r["run"]], "open": [str((sweep / r["run"]).resolve())],
                         "step": [str(r["train_step"])], "group": [r["group_id"]]}


def test_a_zero_one_reward_log_is_told_its_flag(tmp_path, capsys):
    """Every group at 0 % success because the rewards are 0/1 under the success reward 10:
    triage and validate name the flag that reads them right; with it, neither says it."""
    from tests.app.explorer.test_header import write_zero_one_csv

    path = str(write_zero_one_csv(tmp_path / "zero_one.csv"))
    for command in (["triage", path, "--format", "csv"], ["validate", path]):
        assert main(command) in (0, 1)
        said = capsys.readouterr()
        assert "reward scale?" in said.err + said.out
        assert "6 of 12 trajectories reach reward 1" in said.err + said.out
        assert "Add --success-reward 1." in said.err + said.out
        assert main([*command, "--success-reward", "1"]) in (0, 1)
        said = capsys.readouterr()
        assert "reward scale?" not in said.err + said.out
    assert main(["validate", path, "--json"]) in (0, 1)
    scale = json.loads(capsys.readouterr().out)["reward_scale"]
    assert scale["success_reward"] == 1 and scale["flag"] == "--success-reward 1"


# -- issue 36: recorded credit and what is unusual, on a table, a run and a verl dump ----------

def _recorded(steps: pd.DataFrame, estimator: str = "g2po", **params) -> pd.DataFrame:
    """``steps`` with ``estimator``'s advantage recorded as float32, as a trainer stores it."""
    import numpy as np

    from g2po.estimators import compute_advantages

    adv = compute_advantages(steps, estimator, **params)["adv"].to_numpy(np.float32)
    return steps.assign(advantage=adv.astype(np.float64))


def test_recorded_credit_on_a_csv(tmp_path, capsys):
    from tests.g2po.analysis.groups import random_walks

    steps = _recorded(random_walks(groups=10, rollouts=6, length=6, invalid_rate=0.1, seed=5))
    broken = (steps["group_id"] == "g4") & (steps["t"] < 2)
    steps.loc[broken, "advantage"] = -steps.loc[broken, "advantage"]
    path = tmp_path / "steps.csv"
    steps.to_csv(path, index=False)
    assert main(["triage", str(path), "--format", "csv"]) == 0
    table = csv_out(capsys)
    assert table["group_id"].iloc[0] == "g4"
    assert table["reason"].iloc[0].startswith("recorded credit: ")
    assert table.loc[table["group_id"] != "g4", "credit_kind"].isna().all()
    assert main(["triage", str(path), "--alarm", "recorded_credit", "--format", "csv"]) == 0
    assert list(csv_out(capsys)["group_id"]) == ["g4"]
    # judged for GRPO, a log of G2PO's credit differs everywhere: said once, with its cause
    assert main(["triage", str(path), "--estimator", "grpo", "--format", "csv"]) == 0
    err = capsys.readouterr().err
    assert "run-wide: Recorded credit differs on 10 of 10 groups" in err
    assert "most are reproduced by g2po(" in err


def test_recorded_credit_and_unusual_on_a_run_directory(tmp_path, capsys):
    """A GiGPO run whose manifest states its estimator and keyword arguments records GiGPO's
    credit (healthy, whatever the triage's own parameters); one group holds three times the
    rollouts of its peers (unusual for this run)."""
    from tests.g2po.analysis.checks.test_unusual import THRICE, alike

    steps = alike(11, {"odd": THRICE})
    kwargs = {**G2POParams().for_estimator("gigpo", OutcomeRule()), "omega": 0.5}
    writer = RunWriter(tmp_path / "run", {"estimator": "gigpo", "estimator_params": kwargs,
                                          "config": {"success_reward": 10.0}})
    writer.write_step(1, _recorded(steps, "gigpo", **kwargs))
    assert main(["triage", str(tmp_path / "run"), "-p", "gamma=0.9", "--format", "csv"]) == 0
    table = csv_out(capsys).set_index("group_id")
    assert (table["recorded_steps"] == table["steps"]).all()
    assert table["credit_kind"].isna().all() and (table["credit_stated"] == "gigpo").all()
    assert table.index[0] == "odd" and table.loc["odd", "alarm_unusual"] > 0
    assert table.loc["odd", "reason"].startswith("unusual for this run: rollouts 12 (peers' "
                                                 "usual 4)")
    assert main(["triage", str(tmp_path / "run")]) == 0  # the terminal table says it too
    assert "unusual for this run" in capsys.readouterr().out


def test_recorded_credit_on_a_verl_dump_extra(tmp_path, capsys):
    from tests.loaders.builders import agent_loop_entries, write_verl_dump

    entries = agent_loop_entries(3, prompts=3, sessions=4)
    write_verl_dump(tmp_path / "plain", 3, entries)
    rows = open_log(tmp_path / "plain").load_step(3)  # the dump's rows, in line order
    adv = _recorded(rows)["advantage"].to_numpy(copy=True)
    first = rows["group_id"] == rows["group_id"].iloc[0]
    adv[first.to_numpy()] = 0.0  # the first prompt's group: no credit recorded (SkyRL #1507)
    write_verl_dump(tmp_path / "dump", 3, [{**e, "advantage": float(a)}
                                           for e, a in zip(entries, adv, strict=True)])
    assert main(["triage", str(tmp_path / "dump"), "--format", "csv"]) == 0
    table = csv_out(capsys).set_index("group_id")
    fired = table.index[table["alarm_recorded_credit"] > 0].tolist()
    assert fired == [rows["group_id"].iloc[0]]
    assert table.loc[fired[0], "credit_kind"] == "zeroed"
    assert main(["triage", str(tmp_path / "plain"), "--format", "csv"]) == 0
    assert (csv_out(capsys)["recorded_steps"] == 0).all()  # no extra: silent
