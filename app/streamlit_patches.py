"""Patches of Streamlit's internals, each written for one Streamlit version and skipped on any
other (where the patched code may have changed; skipping only costs start-up time).

- **No scan for v2 components.** When its Runtime is created, Streamlit 1.67 looks for
  installed packages that ship a "custom component v2" (``BidiComponentManager.
  discover_and_register_components``): it parses the metadata of every installed
  distribution (~200 in the app's environment, 0.5–1 s on a small machine) before the server
  answers its first request. The app uses no v2 component (its graph is a v1 component,
  :mod:`app.graph_component`), and plugins register estimators, not components, so the scan
  finds nothing it needs.
"""

from __future__ import annotations

import logging

import streamlit

__all__ = ["PINNED_VERSION", "skip_component_scan"]

#: The Streamlit version whose internals these patches were written against.
PINNED_VERSION = "1.67.0"

_LOG = logging.getLogger(__name__)


def skip_component_scan() -> bool:
    """Make the v2-component scan a no-op, before the Runtime is created (``streamlit run``
    imports ``app/main.py`` first). Returns whether the patch applied: False, with a debug
    log line, on a Streamlit other than :data:`PINNED_VERSION`."""
    if streamlit.__version__ != PINNED_VERSION:
        _LOG.debug("Streamlit %s, not %s: the v2-component scan stays",
                   streamlit.__version__, PINNED_VERSION)
        return False
    from streamlit.components.v2.component_manager import BidiComponentManager

    def discover_and_register_components(self, *, start_file_watching: bool = True) -> None:
        """Skipped by the G2PO app (app/streamlit_patches.py): it uses no v2 component."""

    BidiComponentManager.discover_and_register_components = discover_and_register_components
    return True
