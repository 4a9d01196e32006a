"""Fixtures for the whole suite."""

from __future__ import annotations

import sys

import pytest

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
