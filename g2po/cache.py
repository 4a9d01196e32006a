"""Where the project keeps what it can make again (generated games, tiny models, summaries,
groups tables): one folder, ``$G2PO_CACHE``, else ``~/.cache/g2po``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_cache_dir"]


def user_cache_dir() -> Path:
    """The project's cache folder: ``$G2PO_CACHE`` (``~`` expanded), else ``~/.cache/g2po``."""
    root = os.environ.get("G2PO_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "g2po"
