"""The state graph inside the app: a Streamlit component that stays loaded between reruns.

``st.iframe`` would rebuild the page (and re-parse vis-network's 470 kB) on every rerun; this
component's page loads vis-network once, over HTTP from the app's own server, then redraws from
the data each rerun sends it (``postMessage``): switching group swaps the data, choosing a
trajectory only recolours. Clicking a node sends its id back to the app.

The component's files are our templates plus vis-network's JavaScript copied from the installed
pyvis package into a folder of the user's cache (Streamlit serves a component from one folder);
the page's Content-Security-Policy allows scripts from the app's own origin only, and no network
access.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import streamlit.components.v1 as components

from app.graph.page import TEMPLATES, vis_network_js

__all__ = ["component_dir", "graph_component", "COMPONENT_NAME"]

COMPONENT_NAME = "g2po_graph"
#: ``graph.js`` is one file (vis-network, then our drawing code: its marks, its core, then the
#: component glue): one request instead of four that the iframe would fetch one after another.
_SCRIPTS = ("graph_marks.js", "graph_core.js", "component/component.js")


@functools.cache
def component_dir() -> Path:
    """The folder the component is served from, written once per content version:
    ``index.html``, ``graph.css`` and ``graph.js``."""
    scripts = [vis_network_js()] + [(TEMPLATES / name).read_text(encoding="utf-8")
                                    for name in _SCRIPTS]
    contents = {"graph.css": (TEMPLATES / "graph.css").read_text(encoding="utf-8"),
                "graph.js": "\n;\n".join(scripts)}
    legend = (TEMPLATES / "legend.html").read_text(encoding="utf-8")
    contents["index.html"] = (TEMPLATES / "component" / "index.html").read_text(
        encoding="utf-8").replace("__LEGEND__", legend)
    digest = hashlib.sha256("\0".join(f"{k}\0{v}" for k, v in sorted(contents.items()))
                            .encode("utf-8")).hexdigest()[:16]
    parent = _cache_root()
    folder = parent / f"graph-component-{digest}"
    if not (folder / "index.html").is_file():
        staging = Path(tempfile.mkdtemp(prefix=".graph-component-", dir=parent))
        for name, text in contents.items():
            (staging / name).write_text(text, encoding="utf-8")
        try:
            staging.rename(folder)  # atomic: another process may be doing the same
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def _cache_root() -> Path:
    """The user's own cache folder (not a shared /tmp, where another user could plant files
    the app would then serve): ``$XDG_CACHE_HOME/g2po/app``, else ``~/.cache/g2po/app``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    root = Path(base) / "g2po" / "app"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable home: a private temporary folder
        root = Path(tempfile.mkdtemp(prefix="g2po-app-"))
    return root


def graph_component(data: dict, *, height: int = 620, key: str = "g2po_graph",
                    on_change: Callable[[], None] | None = None) -> dict | None:
    """Mount the graph (``data`` from :func:`app.graph.page.network_data`); returns the last
    click, ``{"node": id, "graph_id": …, "click": n}``, or None."""
    component = components.declare_component(COMPONENT_NAME, path=str(component_dir()))
    return component(graph=data, height=height, key=key, default=None, on_change=on_change)
