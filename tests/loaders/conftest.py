"""Fixtures of the loader tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test keeps its summary caches (``$G2PO_CACHE``) in its own folder: nothing is read
    from or left in the user's cache, and no test sees another's."""
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "g2po-cache"))
