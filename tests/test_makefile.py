"""`make run` sets up once: after a full set-up (`make setup`, `make test`) it installs nothing
and prints nothing before the app's own output; without one, it installs the app's light extras
with uv, quietly. Run on a copy of the Makefile with a stand-in venv whose programs only say
how they were called (nothing is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: `make run` compiles the project's modules first (up-to-date ones are skipped: quick)
COMPILE = "python -m compileall -q app g2po loaders tests scripts\n"


def _fake(path: Path, name: str) -> None:
    """A program that appends its name and arguments to calls.log."""
    path.write_text(f'#!/bin/sh\necho "{name} $*" >> "$(dirname "$0")/../../calls.log"\n')
    path.chmod(0o755)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for name in ("python", "uv", "streamlit"):
        _fake(bin_ / name, name)
    return tmp_path


def _make_run(project: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(["make", "--no-print-directory", "run"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=60, check=True)


def test_after_a_full_set_up_make_run_installs_nothing_and_says_nothing(project):
    stamp = project / ".venv" / ".installed"
    stamp.touch()
    later = time.time() + 5
    os.utime(stamp, (later, later))  # the full set-up ran after pyproject.toml last changed
    out = _make_run(project)
    assert out.stdout == "" and out.stderr == ""
    assert (project / "calls.log").read_text() == COMPILE + "streamlit run app/main.py\n"
    assert (project / ".venv" / ".installed-app").exists()
    _make_run(project)  # and again: still only the app
    assert (project / "calls.log").read_text().count("streamlit") == 2


def test_without_a_full_set_up_make_run_installs_the_app_with_uv_quietly(project):
    stamp = project / ".venv" / ".installed"
    stamp.touch()
    os.utime(stamp, (0, 0))  # older than pyproject.toml: it no longer vouches for the extras
    out = _make_run(project)
    assert out.stdout.splitlines() == [
        "Installing the app into .venv (extras app,envs; about a minute)"]
    calls = (project / "calls.log").read_text().splitlines()
    assert calls[0].startswith("python -m pip install --quiet")
    assert calls[1].startswith("uv pip install --quiet --compile-bytecode")
    assert calls[1].endswith("-e .[app,envs]")
    assert calls[2:4] == [COMPILE.strip(), "streamlit run app/main.py"]
    _make_run(project)  # set up now: the second run only opens the app
    assert (project / "calls.log").read_text().splitlines()[4:] == [COMPILE.strip(),
                                                                    "streamlit run app/main.py"]
