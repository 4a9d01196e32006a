"""The view in the URL: run, training step, group, trajectories, node and every parameter live
in ``st.query_params``, so a view can be bookmarked, shared and reloaded.

The URL is read once per browser session (when the page is opened or reloaded): each value seeds
its widget's state before the widget is drawn. From then on the widgets are the truth and every
script run writes them back to the URL. The page itself is the URL's path (``st.navigation``).
The names, which page reads each, and how a value is written are :mod:`g2po.app_url`'s, which
``g2po url`` reads too (:data:`URL_KEYS`; :data:`PAGE_ONLY`: the names only one page keeps,
which every other page drops, so a stale one never overrides the sidebar's choices).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import streamlit as st

from g2po.app_url import PAGE_ONLY, URL_KEYS, url_text

__all__ = ["seed_from_url", "reseed", "write_url", "url_value", "url_once", "URL_KEYS",
           "PAGE_ONLY", "drop_other_pages_names", "unread_url_value", "mark_read"]

_SEEDED = "_g2po_url_seeded"


def url_value(name: str) -> str | None:
    """The URL's raw value of ``name`` (None when absent)."""
    value = st.query_params.get(name)
    return None if value is None else str(value)


def unread_url_value(name: str) -> str | None:
    """The URL's ``name`` while this session has not read it yet (None after :func:`url_once`
    or :func:`mark_read`); a look that leaves it unread."""
    return None if name in st.session_state.get(_SEEDED, ()) else url_value(name)


def mark_read(*names: str) -> None:
    """Treat the URL's ``names`` as read: they seed nothing more this session."""
    st.session_state.setdefault(_SEEDED, set()).update(names)


def url_once(name: str) -> str | None:
    """The URL's ``name`` the first time a session asks for it (as :func:`url_value`), None
    after: from then on the page's own choices are the truth."""
    value = unread_url_value(name)
    mark_read(name)
    return value


def seed_from_url(widget_key: str, name: str, parse: Callable[[str], Any] = str,
                  allowed: Collection | None = None) -> bool:
    """Once per session, set the state of widget ``widget_key`` from the URL's ``name``
    (parsed by ``parse``; ignored when it does not parse or is not in ``allowed``). Returns
    whether it did."""
    raw = url_once(name)
    if raw is None:
        return False
    try:
        value = parse(raw)
    except (TypeError, ValueError):
        return False
    if allowed is not None and value not in allowed:
        return False
    st.session_state[widget_key] = value
    return True


def reseed(*names: str) -> None:
    """Let the URL's ``names`` seed their widgets once more, as on a fresh page load: for a
    page that opens another page on a view within the session
    (``st.switch_page(page, query_params=…)``)."""
    st.session_state.setdefault(_SEEDED, set()).difference_update(names)


def drop_other_pages_names(page: str) -> None:
    """On ``page``, drop the names other pages keep for themselves (:data:`PAGE_ONLY`)."""
    for owner, names in PAGE_ONLY.items():
        if owner != page:
            mark_read(*names)
            write_url(**dict.fromkeys(names))


def write_url(**values: object) -> None:
    """Put ``values`` into the query string (None removes a name); unchanged names are not
    rewritten."""
    for name, value in values.items():
        if value is None or value == "" or value == []:
            if name in st.query_params:
                del st.query_params[name]
            continue
        text = url_text(value)
        if st.query_params.get(name) != text:
            st.query_params[name] = text
