"""scripts/bench_triage_defects.py in a small mode: it plants every kind of defect (issue 36's
three and a zeroed recorded advantage included) beside solved groups, ranks the defects first,
with and without a run-wide step limit and with converged groups, and reports precision@K,
each check's rate on the other groups, the first screen and a summary over seeds; another
generator with the same interface plugs in."""

from __future__ import annotations

import re

from tests.scripts import load_script


def runs_of(out: str) -> list[str]:
    return [r for r in out.split("\n== ")[1:] if not r.startswith("summary")]


def summary_of(out: str) -> list[str]:
    return out.split("\n== summary")[1].strip().splitlines()[1:]


def test_a_small_run_ranks_the_planted_defects_first_and_reports_the_rates(tmp_path, capsys):
    bench = load_script("bench_triage_defects")
    assert bench.main(["--healthy", "24", "--per-kind", "1", "--seed", "0", "--step-limit",
                       "--converged", "0,0.3", "--keep", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    runs = runs_of(out)
    assert len(runs) == 3 and "step limit of 5" in runs[1] and "30% of healthy" in runs[2]
    for run in runs:
        assert re.search(r"\d+ groups, 9 planted defects, \d+ solved", run)
        precision = float(re.search(r"precision@9 of the default order: ([0-9.]+)", run)[1])
        assert precision >= 8 / 9  # the behaviour issue 36 asks for, on this fixed seed
        assert "solved groups among the first 9: 0" in run
        screen = re.search(r"first screen \((\d+) rows\): (\d+) not planted, (\d+) of them "
                           r"there by the unusual check", run)
        assert int(screen[1]) == 20 and int(screen[3]) <= 2  # at most 10 % of the screen
        rates = {k: float(v) for k, v, note in
                 re.findall(r"^  (\w+) +([0-9.]+)%(.*)$", run, flags=re.M)
                 if "said once" not in note}
        assert {"mixed_start", "partial_group", "prefix_tree", "hub", "recorded_credit",
                "unusual"} <= set(rates)
        assert all(rate <= 10 for rate in rates.values())
        ranks = re.findall(r"^ +(\d+) \((\w+)\)  (.*)$", run, flags=re.M)
        assert {kind for _, kind, _ in ranks} >= set(bench.KINDS)
        assert all(reason for _, kind, reason in ranks if kind in bench.KINDS)
    # the step limit is said once for the run, not counted against the groups
    assert "checks said once for the run (defects): none" in runs[0]
    assert "checks said once for the run (defects): truncation" in runs[1]
    assert runs[1].count("said for the run: Truncation on") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-s0-0.parquet", "run-s0-1.parquet",
                                                          "run-s0-2.parquet"]
    # the summary: one line per converged share (the cut run apart)
    assert [line.split("|")[0].strip() for line in summary_of(out)] == ["0%", "30%"]


def test_another_generator_plugs_in(tmp_path, capsys):
    other = tmp_path / "gen.py"
    other.write_text(
        "import pandas as pd\n"
        "KINDS = ('no_signal',)\nPROGRESS = ()\n"
        "def generate(healthy, per_kind, seed, converged):\n"
        "    rows = []\n"
        "    for g in range(healthy + per_kind):\n"
        "        dead = g >= healthy\n"
        "        for r in range(4):\n"
        "            rows.append((f'g{g}', f'g{g}/r{r}', 0, 's0', 'go',\n"
        "                         0.0 if dead else 10.0 * (r % 2), True, True, 'task', 0))\n"
        "    steps = pd.DataFrame(rows, columns=['group_id', 'traj_id', 't', 'state_key',\n"
        "        'action', 'episode_reward', 'is_action_valid', 'done', 'task', 'train_step'])\n"
        "    return steps, {f'g{g}': 'no_signal' for g in range(healthy, healthy + per_kind)}\n")
    bench = load_script("bench_triage_defects")
    assert bench.main(["--healthy", "10", "--per-kind", "2", "--generator", str(other)]) == 0
    (run,) = runs_of(capsys.readouterr().out)
    assert "12 groups, 2 planted defects, 0 solved" in run
    assert "precision@2 of the default order: 1.00" in run


def test_a_generator_with_defect_runs_bs_interface_plugs_in(tmp_path, capsys):
    """make_run / write_run and a truth table, as scripts/defect_runs_b.py has them."""
    other = tmp_path / "gen_b.py"
    other.write_text(
        "import pandas as pd\n"
        "from g2po.outcomes import OutcomeRule\n"
        "from g2po.estimators import compute_advantages\n"
        "def make_run(seed, converged=0.0, per_kind=1):\n"
        "    rows, truth = [], []\n"
        "    for g in range(10):\n"
        "        kind = 'no_signal' if g < per_kind else 'rec_sign' if g == 9 else 'healthy'\n"
        "        for r in range(4):\n"
        "            reward = 0.0 if kind == 'no_signal' else float(r % 2)\n"
        "            rows.append((0, f'g{g}', f'g{g}/r{r}', 0, 's0', 'go', reward, True, True))\n"
        "        truth.append((0, f'g{g}', kind, {'no_signal': 'alarm', 'rec_sign':\n"
        "                      'recorded'}.get(kind, 'healthy')))\n"
        "    steps = pd.DataFrame(rows, columns=['train_step', 'group_id', 'traj_id', 't',\n"
        "        'state_key', 'action', 'episode_reward', 'is_action_valid', 'done'])\n"
        "    adv = compute_advantages(steps, 'g2po', success_reward=1.0)['adv']\n"
        "    steps['advantage'] = adv.where(steps['group_id'] != 'g9', -adv)\n"
        "    truth = pd.DataFrame(truth, columns=['train_step', 'group_id', 'kind', 'family'])\n"
        "    truth.attrs['run'] = {'rule': OutcomeRule(success_reward=1.0)}\n"
        "    return steps, truth\n"
        "def write_run(steps, path, rule, format='run'):\n"
        "    path = path.with_suffix('.csv')\n"
        "    steps.to_csv(path, index=False)\n"
        "    return path\n")
    bench = load_script("bench_triage_defects")
    assert bench.main(["--per-kind", "2", "--generator", str(other), "--keep",
                       str(tmp_path / "runs")]) == 0
    (run,) = runs_of(capsys.readouterr().out)
    # the recorded-credit kind is planted too (the recorded_credit check's concern)
    assert "10 groups, 3 planted defects, 0 solved" in run
    assert "precision@3 of the default order: 1.00" in run
