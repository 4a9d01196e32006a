"""The app's entry point: ``streamlit run app/main.py`` (bundled sample rollouts) or
``streamlit run app/main.py -- --log PATH [--log PATH …]`` (your own runs).

This file is read twice, for two jobs:

- ``streamlit run`` imports it once, as the module ``main``, and finds ``streamlit_app`` (a
  :class:`streamlit.App`; Streamlit then serves it with uvicorn). Before that, the patches of
  :mod:`app.streamlit_patches` apply (they must precede Streamlit's Runtime). The App's
  lifespan starts :func:`warm_up` in a thread: the modules the first page needs (pandas,
  pyarrow, pyvis, the loaders, the group explorer, …) are imported while the browser is still
  loading Streamlit's frontend, instead of during the first script run, and the graph
  component's folder is ready.
- every script run (each browser session, each rerun) executes it as ``__main__``, which draws
  the app (:func:`app.shell.run`).

Only the standard library and Streamlit are imported at the top, so the server answers as soon
as Streamlit itself is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import inspect
import logging
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run app/main.py` puts app/ first, not the repo
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

__all__ = ["warm_up", "WARM_MODULES", "browser_url", "sharing_warning"]

#: What the first script run imports, in dependency order: the shell and sidebar (loaders,
#: pandas, pyarrow), the group explorer (graph, pyvis, tables and their pandas Styler), and the
#: modules Streamlit itself imports lazily on that page (the emoji check of the page icon, the
#: Styler and Arrow serialisation of st.dataframe), and pyarrow's dataset reader, which the
#: group picker's summaries use to read a step file's few columns.
WARM_MODULES = (
    "app.shell",
    "loaders.discover",  # the sidebar finds the logs (the loaders package imports on use)
    "loaders.verl",  # what the format registry's detectors call (imported on first call)
    "loaders.pickles",
    "app.views.explorer",
    "streamlit.emojis",
    "streamlit.elements.lib.pandas_styler_utils",
    "streamlit.elements.lib.column_config_utils",
    "streamlit.dataframe_util",
    "streamlit.components.v1.component_arrow",
    "pyarrow.pandas_compat",
    "pyarrow.vendored.version",
    "pyarrow.dataset",
    "pandas.core.methods.to_dict",
    # then the pages a user who restarts the app to look at a run opens first: the Run
    # overview (plotly, and what Streamlit's plotly_chart imports lazily) and the Groups page
    "app.views.overview",
    "app.views.triage",
    "plotly.tools",
    "plotly.offline",
    "plotly.io._json",
    "pandas.io.formats.string",
    "pandas.core.arrays.arrow.extension_types",
)


def warm_up() -> None:
    """Import :data:`WARM_MODULES`, write the graph component's folder and make the colour
    scales' first lookup. Runs once per server process, in a thread, so a failure here only
    costs time: the script run imports what it needs anyway and shows its own errors."""
    # Imports make ~150,000 long-lived objects; the collector would scan them again and again
    # while they are made (~0.2 s of the ~0.65 s here), so it pauses until they are made.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for name in WARM_MODULES:
            importlib.import_module(name)
        from app.graph_component import component_dir

        component_dir()
        from app.colors import value_colors

        value_colors([0.0], 0.0, 1.0)  # plotly lists its named scales once (~50 ms)
        import pandas as pd

        from app.charts import history_figure, overview_figure

        # plotly imports a figure's parts (line, margin, axis titles) when first used
        frame = pd.DataFrame({"run": ["r"], "train_step": [1], "m": [0.0]})
        overview_figure(frame, "m", colors={"r": "#000000"}).to_json()
        history_figure(frame, {"m": "m"}, "m", y_title="m", percent=True).to_json()
        # Streamlit's first element of a process calls inspect.stack() (is this a REPL?) and
        # declare_component looks up its caller's module; both walk every loaded module once
        # (~2,000 here) and inspect caches what it found. Walking now moves that off the
        # first script run.
        inspect.getmodule(sys._getframe())
    except Exception:  # noqa: BLE001 - the first script run reports the real error
        logging.getLogger(__name__).debug("warm-up failed", exc_info=True)
    finally:
        # What was imported lives as long as the server: out of the collector's view, so the
        # full collection Streamlit runs after every script run (runner.postScriptGC) scans
        # only what that run made (~80 ms less per run).
        gc.freeze()
        if collecting:
            gc.enable()


def browser_url() -> str | None:
    """The URL to open in the user's browser once the server is up, or None when headless
    (plain ``streamlit run`` opens it itself; served as an ASGI app, Streamlit leaves that to
    the app)."""
    from streamlit import config
    from streamlit.web.server.server_util import get_url

    if config.get_option("server.headless"):
        return None
    if config.is_manually_set("browser.serverAddress"):
        return get_url(config.get_option("browser.serverAddress"))
    return get_url("localhost")


def sharing_warning() -> str | None:
    """The warning printed at start when the server listens beyond this machine (an address
    other than loopback given with ``--server.address``), else None. ``app/.streamlit/
    config.toml`` makes 127.0.0.1 the default."""
    from app.serving import shared_address

    address = shared_address()
    if address is None:
        return None
    return (f"WARNING: the G2PO app listens on {address}: anyone who can reach this machine "
            "can use it, with no login, and open the logs under its --log and --allow-dir "
            "paths. Leave out --server.address to serve only this machine (127.0.0.1).")


@contextlib.asynccontextmanager
async def _lifespan(_app: st.App) -> AsyncIterator[None]:
    warning = sharing_warning()
    if warning:
        print(warning, file=sys.stderr, flush=True)
    threading.Thread(target=warm_up, name="g2po-warm-up", daemon=True).start()
    url = browser_url()
    if url is not None:
        from streamlit.cli_util import open_browser

        asyncio.get_running_loop().call_soon(open_browser, url)  # once the server listens
    yield


if __name__ == "__main__":  # a script run
    from app.shell import run

    run()
elif __name__ == "main":  # `streamlit run app/main.py` looking for the ASGI app to serve
    from app.streamlit_patches import skip_component_scan

    skip_component_scan()
    streamlit_app = st.App(__file__, lifespan=_lifespan)
