"""The examples in the library's docstrings run, so they cannot drift from the code.

Every module of ``g2po/``, ``loaders/`` and ``app/`` whose source has a ``>>>`` line is imported
and its examples run with :mod:`doctest`. Modules without examples are not imported here, so a
module with import side effects (``app/main.py``, a page script) never runs outside Streamlit.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("g2po", "loaders", "app")
_EXAMPLE = re.compile(r"^\s*>>> ", re.MULTILINE)
#: Modules whose examples compose verl's configuration, which imports verl (about 40 s of CPU).
IMPORT_VERL = {"g2po.trainers.verl_backend.compose"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_with_examples() -> list[str]:
    """Dotted names of the library modules whose source has a docstring example."""
    return sorted(_module_name(p) for package in PACKAGES
                  for p in (ROOT / package).rglob("*.py")
                  if _EXAMPLE.search(p.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.verl) if name in IMPORT_VERL else name
    for name in modules_with_examples()])
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, verbose=False)
    # an example doctest cannot find (e.g. in a nested function) would silently never run
    assert result.attempted > 0, f"{name} has '>>>' lines but doctest finds no example"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} fail"
