"""Fixtures for the whole suite."""

from __future__ import annotations

import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression  # how pytest itself reads -m; no public twin

from g2po.estimators import registry


@pytest.fixture(autouse=True)
def _estimator_registry():
    """Each test leaves the estimator registry as it found it: an estimator a test (or a plugin
    it loads) registers must not reach tests that run every registered estimator."""
    saved = dict(registry._REGISTRY)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


@pytest.fixture(autouse=True)
def _main_module():
    """Each test leaves ``__main__`` as it found it. Streamlit's AppTest installs its temporary
    script there and never restores it; a process pool started later (forkserver, spawn)
    would re-run that script in every worker."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """No test inherits a terminal width: pytest-xdist's workers run with ``COLUMNS=80``, which
    the CLI takes for a terminal and fits its tables to (``make test-fast`` runs on two
    workers). A test that wants a width sets ``COLUMNS`` itself."""
    monkeypatch.delenv("COLUMNS", raising=False)


# -- markers of the slow tests (registered in pyproject.toml; ``make test-fast`` leaves them out) --
ROOT = Path(__file__).resolve().parent.parent
#: Test files and folders every test of which carries a marker (globs; a folder holds all below it).
FILE_MARKERS = {
    "browser": ("tests/app/test_browser.py", "tests/*_browser.py"),
    "verl": ("tests/g2po/trainers/verl_backend", "tests/g2po/trainers/test_loss.py",
             "tests/g2po/trainers/test_local.py"),
    # games made and played (TextWorld, ALFWorld's planner at every reset), fresh interpreters,
    # the benchmark scripts' own runs
    "slow": ("tests/g2po/envs", "tests/g2po/test_rollouts.py", "tests/g2po/cli/test_rollouts.py",
             "tests/loaders/test_bad_inputs.py", "tests/scripts"),
}
#: The fixture of the tests that use a real verl run (tests/g2po/cli/verl_runs.py).
VERL_RUN_FIXTURE = "verl_cpu_run"
#: Fixtures that make a test slow, with the marker they give it.
FIXTURE_MARKERS = {
    "tiny_path": "slow",  # builds the tiny model on a machine's first use (minutes)
    "verl_cpu_run": "verl",  # g2po train --backend verl --device cpu: Ray and verl's trainer
    "local_ray": "slow",  # a local Ray cluster started for the sweep tests (~10 s)
}


def _file_markers(path: Path) -> set[str]:
    try:
        rel = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return set()
    return {name for name, globs in FILE_MARKERS.items()
            if any(fnmatch(rel, g) or rel.startswith(g + "/") for g in globs)}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Do not even import a marked file (or folder) that ``-m`` leaves out: importing verl
    alone takes about 40 s of CPU. None (not False) leaves the decision to pytest's other rules."""
    markers = _file_markers(collection_path)
    expression = config.option.markexpr
    if markers and expression:
        if not Expression.compile(expression).evaluate(lambda name, **_: name in markers):
            return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each test the markers of its file and of the fixtures it uses. This hook runs
    before ``-m`` deselects (pytest's own hook runs last), so the markers count there."""
    for item in items:
        names = _file_markers(item.path) | {FIXTURE_MARKERS[f] for f in item.fixturenames
                                            if f in FIXTURE_MARKERS}
        for name in sorted(names):
            item.add_marker(name)
    # The tests that wait for a verl run go last, so that the rest of the suite runs while the
    # runs take the other core (deselection keeps this order).
    waiting = [item for item in items if VERL_RUN_FIXTURE in item.fixturenames]
    items[:] = [item for item in items if VERL_RUN_FIXTURE not in item.fixturenames] + waiting


# -- verl's real trainer on CPU, in the background (tests/g2po/cli/verl_runs.py) --
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the verl runs the selected tests use, in their order."""
    if session.config.option.collectonly:
        return
    rollouts = dict.fromkeys(item.callspec.params[VERL_RUN_FIXTURE] for item in session.items
                             if VERL_RUN_FIXTURE in item.fixturenames)
    if rollouts:
        from tests.g2po.cli import verl_runs

        verl_runs.start(list(rollouts))


def pytest_sessionfinish(session: pytest.Session) -> None:
    if "tests.g2po.cli.verl_runs" in sys.modules:
        sys.modules["tests.g2po.cli.verl_runs"].stop()
