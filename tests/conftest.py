"""Fixtures for the whole suite."""

from __future__ import annotations

import pytest

from g2po import estimators


@pytest.fixture(autouse=True)
def _estimator_registry():
    """Each test leaves the estimator registry as it found it: an estimator a test (or a plugin
    it loads) registers must not reach tests that run every registered estimator."""
    saved = dict(estimators._REGISTRY)
    yield
    estimators._REGISTRY.clear()
    estimators._REGISTRY.update(saved)
