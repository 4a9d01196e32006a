"""Fixtures of the app's tests: run directories on disk and clean Streamlit caches."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st

from tests.app.browser import ARTIFACTS, chromium, chromium_missing
from tests.app.builders import write_run


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """The app's tests (and the servers they start) keep the user cache (run colours, summary
    caches) out of the user's own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("G2PO_CACHE", str(tmp_path_factory.mktemp("g2po-cache")))
        yield


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test keeps the user cache (run colours, summary caches) in its own folder."""
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path / "g2po-cache"))


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """``st.cache_data`` / ``st.cache_resource`` outlive an AppTest; start each test clean."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield


@pytest.fixture(autouse=True)
def _g2po_cache(tmp_path_factory, monkeypatch):
    """The on-disk caches (the groups table's, which the Run overview and the Groups page
    fill) in a temporary folder, not the user's; app servers a test starts inherit it."""
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path_factory.getbasetemp() / "g2po-cache"))


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory) -> Path:
    """A folder holding two runs (``run_a``, ``run_b``), like ``sample_rollouts/``."""
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "run_a", 3, seed=0)
    write_run(root / "run_b", 2, seed=10)
    return root


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory) -> Path:
    """A run whose ids, observations and actions carry XSS payloads."""
    return write_run(tmp_path_factory.mktemp("hostile") / "hostile", 2, hostile_text=True)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, one per test module (tests/app/browser.py)."""
    why = chromium_missing()
    if why:
        pytest.fail(why)
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as b:
        yield b
