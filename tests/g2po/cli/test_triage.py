"""``g2po triage`` run as a user runs it: the same table as the library, sorted, cut, filtered,
as text, CSV or JSON, with the outcome-rule flags."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from g2po.analysis.triage import TRIAGE_COLUMNS, sort_groups, triage_log
from g2po.cli import main
from g2po.outcomes import OutcomeRule
from g2po.params import G2POParams
from loaders import RunWriter, open_log
from tests.app.builders import group_steps
from tests.g2po.analysis.groups import ALL_FAILED, cut_group
from tests.g2po.builders import trajectories


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
    assert out.startswith(f"{n} group(s) of 1 training step(s) · outcome rule: reward = "
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
    with pytest.raises(SystemExit):
        main(["triage", str(run), "--alarm", "boom"])
