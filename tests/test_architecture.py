"""The shape of the code: imports go down, and modules and functions stay readable in size.
No import circle among the modules of ``g2po/``, ``loaders/`` and ``app/``, counting imports
inside functions, a package's ``__init__`` (run by every import of one of its modules from
outside the package) and imports by name: a string that is exactly a project module's dotted
name (``importlib.import_module(name)``, a table of pages or commands, a lazy package's
sources) counts as importing it, so a loop closed through a string is seen too; pages never
import pages."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("g2po", "loaders", "app")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _named(tree: ast.AST, modules: set[str]) -> set[str]:
    """The project modules a module names in a string (dotted, exactly the name): imports by
    name, which ``import`` statements do not show."""
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and "." in node.value and node.value in modules}


def _imported(module: str, path: Path, modules: set[str] = frozenset()) -> set[str]:
    """Every module name ``module`` imports (absolute, as written or resolved from a relative
    import), with each ``from X import name`` also as ``X.name`` (a submodule or not), and
    the project modules among ``modules`` it names in a string (:func:`_named`)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = _named(tree, modules)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> nx.DiGraph:
    """Module → the project modules it imports (and the packages whose ``__init__`` that runs)."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for name in _imported(module, path, set(modules)):
            while name and name not in modules:  # `from pkg.mod import function` → pkg.mod
                name = name.rpartition(".")[0]
            if not name or name == module:
                continue
            graph.add_edge(module, name)
            parts = name.split(".")
            for i in range(1, len(parts)):  # importing a.b.c runs a and a.b first
                parent = ".".join(parts[:i])
                if parent in modules and not module.startswith(parent + "."):
                    graph.add_edge(module, parent)
    return graph


def test_the_import_graph_sees_imports_inside_functions_and_package_inits():
    graph = import_graph()
    # state_graph calls the estimators (a package __init__); an estimator registers itself
    # through the registry module, which runs its own package's __init__ only as its parent
    assert graph.has_edge("g2po.analysis.state_graph", "g2po.estimators")
    assert graph.has_edge("g2po.estimators.g2po", "g2po.estimators.registry")
    assert not graph.has_edge("g2po.estimators.g2po", "g2po.estimators")  # its own package


def test_imports_by_name_are_edges_too():
    graph = import_graph()
    assert graph.has_edge("g2po.cli", "g2po.cli.train")  # its command table names it
    assert graph.has_edge("app.shell", "app.views.curves")  # the page table
    # the bundled environments are imported plainly by the catalog above them, and the
    # collector below the trainers names no trainer module
    assert graph.has_edge("g2po.envs.catalog", "g2po.envs.textworld_env")
    assert not graph.has_edge("g2po.envs.base", "g2po.envs.textworld_env")
    assert not any(b.startswith("g2po.trainers") for b in graph.successors("g2po.rollouts"))


def test_no_import_circles():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert circles == []


def test_pages_never_import_pages():
    graph = import_graph()
    pages = [m for m in graph if m.startswith("app.views.")]
    crossing = [(a, b) for a in pages for b in graph.successors(a) if b.startswith("app.views.")]
    assert crossing == []


#: A module holds one job: past this many lines it holds several (split by responsibility).
MAX_MODULE_LINES = 600
#: A function past this many lines does several things; a few long ones (a page's render
#: that reads top to bottom) are tolerated, no more than this many.
LONG_FUNCTION, MAX_LONG_FUNCTIONS = 100, 3


def test_modules_and_functions_stay_readable_in_size():
    modules = _modules()
    big = {m: n for m, p in modules.items()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert big == {}
    long = sorted(f"{m}.{node.name} ({node.end_lineno - node.lineno + 1} lines)"
                  for m, p in modules.items()
                  for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                  if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.end_lineno - node.lineno + 1 > LONG_FUNCTION)
    assert len(long) <= MAX_LONG_FUNCTIONS, long
