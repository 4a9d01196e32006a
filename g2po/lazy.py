"""Public names of a package imported on first use (PEP 562), so importing one of its
submodules (the ``g2po`` command, ``loaders.formats``) does not import pandas and numpy."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, sources: Mapping[str, str], namespace: dict[str, Any],
               public: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: ``sources`` maps each public name to the
    module it comes from; a name is imported once and then kept in the package's
    ``namespace`` (its ``globals()``), so later look-ups do not come back here."""

    def getattr_(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_
