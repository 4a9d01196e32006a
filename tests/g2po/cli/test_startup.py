"""The ``g2po`` command answers at once: building its parser and printing any command's help
import neither pandas, numpy nor torch (each import is seconds on a busy machine), nor the
estimators (``--estimator`` is checked against the registry only when a command runs), and what
the parser names without importing them (the alarm kinds, the log formats) stays equal to the
modules that define them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

import g2po
import loaders
from g2po.cli import main
from tests.g2po.builders import THREE, trajectories

HEAVY = ("pandas", "numpy", "torch", "pyarrow", "g2po.estimators", "g2po.analysis.alarms",
         "loaders.opener")


def _fresh(code: str) -> dict:
    """What ``code`` prints as JSON, run in a fresh interpreter (nothing imported before)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=True, timeout=300)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_parser_and_every_help_import_no_heavy_module():
    found = _fresh(f"""
        import contextlib, io, json, sys
        import g2po.cli

        parser = g2po.cli.build_parser()
        commands = sorted(parser._subparsers._group_actions[0].choices)
        after_parser = [m for m in {HEAVY!r} if m in sys.modules]
        for argv in [["--help"], *([c, "--help"] for c in commands)]:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
                g2po.cli.main(argv)
        print(json.dumps({{"commands": commands, "after_parser": after_parser,
                          "after_help": [m for m in {HEAVY!r} if m in sys.modules]}}))
    """)
    assert {"advantages", "graph", "triage", "validate", "train", "rollouts"} <= \
        set(found["commands"])
    assert found["after_parser"] == [] and found["after_help"] == []


def test_a_command_that_runs_imports_what_it_needs(tmp_path):
    """The same check fails for a command that computes: the test above can tell."""
    path = tmp_path / "steps.csv"
    trajectories(THREE).to_csv(path, index=False)
    found = _fresh(f"""
        import contextlib, io, json, sys
        import g2po.cli

        with contextlib.redirect_stdout(io.StringIO()):
            assert g2po.cli.main(["advantages", {str(path)!r}]) == 0
        print(json.dumps([m for m in ("pandas", "numpy", "g2po.estimators") if m in sys.modules]))
    """)
    assert found == ["pandas", "numpy", "g2po.estimators"]


def test_an_estimator_registered_in_the_process_is_a_choice(tmp_path, capsys):
    import numpy as np

    from g2po.estimators import register_estimator
    from g2po.estimators.registry import _REGISTRY

    path = tmp_path / "steps.csv"
    trajectories(THREE).to_csv(path, index=False)
    register_estimator("cli_plugin_ones")(lambda ix: {"adv": np.ones(ix.n_steps)})
    try:
        assert main(["advantages", str(path), "-e", "cli_plugin_ones"]) == 0
        assert "1.0000" in capsys.readouterr().out
        with pytest.raises(SystemExit) as exit_:
            main(["advantages", str(path), "-e", "no_such_estimator"])
        err = capsys.readouterr().err
        assert exit_.value.code == 2
        assert "unknown estimator 'no_such_estimator'; registered: cli_plugin_ones, " in err
        assert ", value_iteration" in err
    finally:
        del _REGISTRY["cli_plugin_ones"]


@pytest.mark.parametrize("package", [g2po, loaders])
def test_the_lazy_public_names_resolve(package):
    assert set(package.__all__) == set(package._SOURCES)
    assert set(package.__all__) <= set(dir(package))
    for name in package.__all__:
        assert getattr(package, name) is getattr(sys.modules[package._SOURCES[name]], name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


def test_from_imports_of_the_public_api_work():
    from g2po import StepIndex, compute_advantages
    from loaders import load_steps, open_log

    steps = trajectories(THREE)
    assert StepIndex.__name__ == "StepIndex" and callable(open_log) and callable(load_steps)
    assert isinstance(compute_advantages(steps), pd.DataFrame)


def test_the_state_keys_named_in_help_texts_are_the_strategies():
    """The parser's --state-key help and the trainers' configuration doc name every
    strategy g2po.state_keys offers, as g2po.params writes them."""
    from g2po.cli.logs import STATE_KEY_HELP
    from g2po.params import state_key_forms
    from g2po.state_keys import strategy_names
    from g2po.trainers.config import field_docs

    assert STATE_KEY_HELP == state_key_forms()
    assert all(name in STATE_KEY_HELP for name in strategy_names())
    assert f"state_key ({state_key_forms()})" in " ".join(field_docs()["params"].split())
