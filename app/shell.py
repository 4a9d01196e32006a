"""The app's shell, drawn on every script run: page config, command-line options, plugins, the
sidebar (:func:`app.sidebar.build_context`) and the page navigation.

Pages are declared with ``st.navigation`` in :func:`run`; the sidebar's choices reach every
page as one :class:`app.context.AppContext` argument. The entry file is ``app/main.py``. No
page shows a traceback: bad input is a message from the view itself, and anything else a view
or the sidebar raises is caught here, shown as a short message and logged in full.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from app import open_logs
from app.context import AppContext
from app.options import OptionsError, parse_options
from app.sidebar import build_context, warn_missing_run
from app.ui import show_error, show_internal_error
from app.url_state import drop_other_pages_names
from g2po.app_url import PAGES as APP_PAGES
from g2po.app_url import START_PAGE

__all__ = ["run", "PAGES", "VIEWS", "load_plugins"]

#: Page key → the module of app.views that draws it (``render(ctx)``); a page's title and URL
#: path are :data:`g2po.app_url.PAGES`' (which ``g2po url`` reads too). A page's module is
#: imported when the page is first shown, so start-up pays only for the page on screen.
VIEWS = {
    "group": "app.views.explorer",
    "groups": "app.views.triage",
    "overview": "app.views.overview",
    "curves": "app.views.curves",
    "state_history": "app.views.state_history",
    "step_diff": "app.views.step_diff",
    "compare": "app.views.compare",
    "diagnostics": "app.views.diagnostics",
    "whatif": "app.views.whatif",
    "export": "app.views.export",
}
#: name → (module of app.views with render(ctx), title, url path), in the navigation's order;
#: the group explorer opens first. No ":material/…:" icons: Streamlit fetches such a favicon
#: from fonts.gstatic.com, and the app must not reach the internet.
PAGES = {key: (VIEWS[key], page.title, page.path) for key, page in APP_PAGES.items()}


#: The start page is the root URL; Streamlit still wants a path of its own for it, unique and
#: never shown, since its usual path belongs to its hidden twin (:func:`run`).
START_SUFFIX = "--start"


def _render(name: str, module: str, title: str, ctx) -> None:
    """One page; a bug in it is a short message on the page (the traceback goes to the
    server's log), never a traceback page."""
    try:
        drop_other_pages_names(name)
        importlib.import_module(module).render(ctx)
    except Exception as err:  # noqa: BLE001 - st.rerun / st.stop are BaseExceptions, not caught
        show_internal_error(f"The page “{title}”", err)


@functools.cache
def load_plugins(plugins: tuple[str, ...]) -> None:
    """Import each plugin (a dotted module name or a ``.py`` file) once per process, so the
    estimators it registers appear in the comparison."""
    for plugin in plugins:
        path = Path(plugin)
        if path.suffix == ".py":
            if not path.is_file():
                raise OptionsError(f"--plugin {plugin}: no such file")
            spec = importlib.util.spec_from_file_location(f"g2po_plugin_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            importlib.import_module(plugin)


def run(argv: Sequence[str] | None = None, start_page: str | None = None) -> None:
    """Draw the app. ``argv``: the arguments after ``--`` (default ``sys.argv[1:]``);
    ``start_page``: the page opened first (a key of :data:`PAGES`; tests use it)."""
    st.set_page_config(page_title="G2PO inspector", page_icon="🕸️", layout="wide")
    try:
        options = parse_options(sys.argv[1:] if argv is None else argv)
        load_plugins(options.plugins)
    except OptionsError as err:
        show_error("Bad command-line options", err)
        return
    except Exception as err:  # a user's plugin: show what broke instead of a traceback
        show_error("A --plugin failed to import", err)
        return
    try:
        ctx = build_context(options)
    except Exception as err:  # noqa: BLE001 - as in _render: a message, details in the log
        show_internal_error("The sidebar", err)
        ctx = AppContext(options=options)
    start = start_page if start_page in PAGES else START_PAGE
    pages = {
        name: st.Page(functools.partial(_render, name, module, title, ctx), title=title,
                      url_path=f"{url}{START_SUFFIX}" if name == start else url,
                      default=name == start)
        for name, (module, title, url) in PAGES.items()
    }
    ctx.pages = pages
    if ctx.missing_run is not None:  # above every page: no other run is shown in its place
        warn_missing_run(ctx.missing_run)
    module, title, url = PAGES[start]
    # The start page is served at the root; its own path opens it too (a hidden twin), not
    # "Page not found" (Streamlit gives the default page no path of its own).
    twin = st.Page(functools.partial(_render, start, module, title, ctx), title=title,
                   url_path=url, visibility="hidden")
    st.navigation([*pages.values(), twin]).run()
    open_logs.load_reports(ctx)  # after the page: what its reads skipped is named too

