"""``g2po rollouts`` as a user runs it."""

from __future__ import annotations

import json

from g2po.cli import main
from g2po.envs import env_family
from loaders import open_run


def test_a_bare_textworld_is_the_same_default_game_as_in_train(tmp_path, capsys):
    """`--env textworld` means textworld:coin_collector-level5 in every command."""
    from g2po.trainers.config import resolve_env

    assert env_family("textworld").spec == env_family(resolve_env("textworld")).spec
    out = tmp_path / "run"
    assert main(["rollouts", "--env", "textworld", "--out", str(out), "--tasks", "1",
                 "--group-size", "2", "--max-steps", "2", "--quiet"]) == 0
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["env"] == "textworld:coin_collector-level5"
    assert open_run(out).train_steps() == [1]
