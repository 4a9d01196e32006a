"""Pages move between each other only through :mod:`app.navigation`: no page imports another
(at the top or inside a function), so the pages form no import circle; and every page opens at
its own path."""

import ast
from pathlib import Path

from app.shell import PAGES
from tests.app.builders import app_test

VIEWS = Path(__file__).resolve().parents[2] / "app" / "views"


def imported_modules(source: str) -> set[str]:
    """Every module an ``import`` or ``from … import`` in ``source`` names (with the names it
    takes from a package: ``from app import views`` names ``app.views``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_check_sees_imports_inside_functions():
    source = "def f():\n    from app.views.overview import goto_step\n    from app import views\n"
    assert {"app.views.overview", "app.views"} <= imported_modules(source)


def test_no_page_imports_another_page():
    pages = sorted(VIEWS.glob("*.py"))
    assert len(pages) > 8
    for path in pages:
        views = {m for m in imported_modules(path.read_text())
                 if m == "app.views" or m.startswith("app.views.")}
        assert not views, f"{path.name} imports {sorted(views)}: use app.navigation"


def test_every_page_has_its_own_path_and_the_start_page_the_root_too(runs_root):
    at = app_test("group", ["--log", str(runs_root)])
    assert not at.exception
    paths = [info["url_pathname"] for info in at._registered_pages.values()]
    # "/group" opens the explorer as "/" does (it was "Page not found"); the others as before
    assert {"", *(url for _, _, url in PAGES.values())} <= set(paths)
    assert paths.count("group") == 1 and paths[0] == ""


def test_the_pages_are_the_url_tables_each_drawn_by_a_view():
    import importlib

    from app.shell import VIEWS as DRAWN_BY
    from g2po.app_url import PAGES as URL_PAGES

    assert list(DRAWN_BY) == list(URL_PAGES) == list(PAGES)  # g2po url names the same pages
    for key, module in DRAWN_BY.items():
        assert module.startswith("app.views."), key
        assert (VIEWS / f"{module.rpartition('.')[2]}.py").is_file(), module
        assert callable(importlib.import_module(module).render), key
