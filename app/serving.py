"""Whom the server serves: this machine only (loopback, ``app/.streamlit/config.toml``'s
default) or a network (``--server.address``). Read by the start-up warning
(:func:`app.main.sharing_warning`) and by what the path box may open
(:func:`app.open_logs.roots`). Imports only Streamlit's config, so the entry point stays
light."""

from __future__ import annotations

__all__ = ["shared_address", "LOOPBACK"]

#: Addresses that serve this machine only.
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def shared_address() -> str | None:
    """The address the server listens on when it reaches beyond this machine (an address
    other than loopback or a Unix socket; Streamlit's own default, no address, is every
    interface: ``0.0.0.0``), else None."""
    from streamlit import config

    address = config.get_option("server.address") or "0.0.0.0"
    if address in LOOPBACK or address.startswith("unix://"):
        return None
    return address
