"""The rule of :func:`app.safe.fmt`, checked on the source of ``app/``: every piece of text
Streamlit renders as markdown (labels, captions, messages, headings, tabs, metrics, tooltips,
the options of radios and pills) is a string literal or comes from ``fmt("template", …)``.

An f-string, a ``.format`` or ``%`` string, an attribute or a function's result in such a place
is a finding; so is a variable, unless every assignment to it in its function (or module) is
itself a literal or a ``fmt`` call. A name that no assignment explains (a parameter, a loop
variable) is a finding too: wrap it where it is shown, ``fmt("{}", name)``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RULE", "Finding", "check_source", "check_tree"]

RULE = ("Text reaches a Streamlit label, caption, message, heading, tab, metric or tooltip only "
        "as a string literal or through app.safe.fmt(\"template\", *values), which escapes "
        "the values: never an f-string, nor a variable that did not come from fmt.")

_LABEL = ((0, "label"),)
_BODY = ((0, "body"),)
_MESSAGE = ((0, "body"), (None, "title"))
_WIDGETS = ("button", "download_button", "link_button", "form_submit_button", "checkbox",
            "toggle", "radio", "selectbox", "multiselect", "slider", "select_slider",
            "text_input", "number_input", "text_area", "date_input", "time_input",
            "datetime_input", "file_uploader", "color_picker", "camera_input", "audio_input",
            "pills", "segmented_control", "badge", "menu_button", "feedback", "chat_input",
            "data_editor")
#: Streamlit call → the arguments it renders as markdown, as (position or None, keyword)
#: (Streamlit 1.67's docstrings: "can optionally contain GitHub-flavored Markdown").
MARKDOWN_ARGS: dict[str, tuple] = {
    **{name: _LABEL for name in _WIDGETS},
    "feedback": (), "chat_input": (), "data_editor": (),
    "markdown": _BODY, "caption": _BODY, "title": _BODY, "header": _BODY, "subheader": _BODY,
    "toast": _BODY, "info": _MESSAGE, "warning": _MESSAGE, "error": _MESSAGE,
    "success": _MESSAGE, "expander": _LABEL, "popover": _LABEL, "status": _LABEL,
    "dialog": ((0, "title"),), "page_link": ((1, "label"),),
    "metric": ((0, "label"), (1, "value"), (2, "delta")),
    "progress": ((1, "text"),), "spinner": ((0, "text"),), "write": (),
}
#: Calls whose option labels are markdown too (``options`` and ``format_func``'s results).
OPTION_MARKDOWN = {"radio", "pills", "segmented_control", "menu_button"}
#: Where ``format_func`` sits among the positional arguments.
_FORMAT_FUNC_POSITION = {"radio": 3, "pills": 5, "segmented_control": 5}
#: Calls refused outright, with what to use instead.
REFUSED = {"table": "st.table renders every cell as markdown: use st.dataframe",
           "write": "st.write renders strings as markdown: use st.markdown(fmt(...)), "
                    "st.dataframe or st.json"}
#: Functions taking a template first: it must be a string literal (``app.ui.md`` writes
#: ``st.markdown(fmt(template, …))``, and may hand its own template on).
TEMPLATE_FUNCTIONS = {"fmt", "md"}
#: Builtins whose result is always a number.
_NUMBERS = {"len", "int", "float", "round", "bool"}
#: Receivers of ``.error`` / ``.info`` … that are no Streamlit element.
_NOT_STREAMLIT = {"logging", "logger", "log", "_log", "LOG", "warnings", "parser"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def check_source(source: str, path: str = "<source>", root: Path | None = None
                 ) -> list[Finding]:
    """The findings of one module's source; names imported from modules under ``root`` (the
    repository) are followed into their source."""
    return check_tree(ast.parse(source), path, root)


def check_tree(tree: ast.Module, path: str, root: Path | None = None) -> list[Finding]:
    checker = _Checker(tree, path, root)
    checker.run()
    return checker.findings


def _module_scope(module: str, root: Path | None) -> _Scope | None:
    """The module-level bindings of one of our modules, or None when it is not ours."""
    if root is None:
        return None
    file = root.joinpath(*module.split(".")).with_suffix(".py")
    if not file.is_file():
        return None
    scope = _Scope(None, None)
    _collect(scope, ast.parse(file.read_text(encoding="utf-8")).body)
    return scope


@dataclass(frozen=True)
class _Imported:
    """``from module import name``: resolved in that module's source, when it is ours."""

    module: str
    name: str


class _Scope:
    """The names one function (or the module) binds: name → the values assigned (None for a
    binding no value explains: a parameter, a loop target, an import)."""

    def __init__(self, node: ast.AST | None, parent: _Scope | None):
        self.node, self.parent = node, parent
        self.bindings: dict[str, list[ast.expr | _Imported | None]] = {}
        self.params: set[str] = set()

    def bind(self, name: str, value: ast.expr | _Imported | None) -> None:
        self.bindings.setdefault(name, []).append(value)

    def lookup(self, name: str) -> tuple[_Scope, list[ast.expr | _Imported | None]] | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.bindings:
                return scope, scope.bindings[name]
            scope = scope.parent
        return None


def _collect(scope: _Scope, body: list[ast.stmt] | ast.expr) -> None:
    """Fill ``scope`` with the bindings of a function body, not descending into nested
    functions or classes (their own scopes)."""
    stack = list(body) if isinstance(body, list) else [body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope.bind(node.name, None)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind_target(scope, target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
            _bind_target(scope, node.target, node.value)
        elif isinstance(node, ast.NamedExpr):
            _bind_target(scope, node.target, node.value)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            _bind_target(scope, node.target, None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _bind_target(scope, node.optional_vars, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.bind(node.name, None)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                scope.bind(alias.asname or alias.name, _Imported(node.module, alias.name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                scope.bind((alias.asname or alias.name).split(".")[0], None)
        stack.extend(ast.iter_child_nodes(node))


def _bind_target(scope: _Scope, target: ast.expr, value: ast.expr | None) -> None:
    if isinstance(target, ast.Name):
        scope.bind(target.id, value)
    elif isinstance(target, ast.Tuple | ast.List):
        values = value.elts if isinstance(value, ast.Tuple | ast.List) and \
            len(value.elts) == len(target.elts) else [None] * len(target.elts)
        for t, v in zip(target.elts, values, strict=True):
            _bind_target(scope, t, v)
    elif isinstance(target, ast.Starred):
        _bind_target(scope, target.value, None)


class _Checker:
    def __init__(self, tree: ast.Module, path: str, root: Path | None):
        self.tree, self.path, self.root = tree, path, root
        self.findings: list[Finding] = []
        self.module = _Scope(tree, None)
        _collect(self.module, tree.body)

    # -- walking -------------------------------------------------------------------------

    def run(self) -> None:
        self._walk(self.tree, self.module, None)

    def _walk(self, node: ast.AST, scope: _Scope, function: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = _Scope(child, scope)
                args = child.args
                for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                          *filter(None, (args.vararg, args.kwarg))):
                    inner.bind(a.arg, None)
                    inner.params.add(a.arg)
                _collect(inner, child.body)
                self._walk(child, inner, child)
                continue
            if isinstance(child, ast.Call):
                self._check_call(child, scope, function)
            self._walk(child, scope, function)

    def _add(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), what))

    # -- calls ---------------------------------------------------------------------------

    def _check_call(self, call: ast.Call, scope: _Scope, function: ast.AST | None) -> None:
        for kw in call.keywords:
            if kw.arg == "unsafe_allow_html" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False):
                self._add(call, "unsafe_allow_html: Streamlit would render the text as HTML")
        name = _called_name(call)
        if name in TEMPLATE_FUNCTIONS:
            self._check_template(call, name, scope, function)
            return
        if _is_getattr_element(call.func):
            self._add(call, "a Streamlit element chosen by getattr: its text cannot be checked; "
                            "call the element itself with fmt(...)")
            return
        if _is_column_config(call):  # its help= tooltip is markdown (Streamlit 1.67's docs)
            help_text = _argument(call, "help")
            if help_text is not None:
                self._expect_text(help_text, scope, f"st.column_config.{name} help= tooltip")
            return
        alias = self._element_alias(call, scope)
        if alias is not None:
            name = alias
        elif name is None or not _is_streamlit_call(call, name):
            return
        where = f"st.{name}"
        if name in REFUSED:
            self._add(call, REFUSED[name])
            return
        for position, keyword in MARKDOWN_ARGS.get(name, ()):
            arg = _argument(call, keyword) if position is None else \
                _argument(call, position) or _argument(call, keyword)
            if arg is not None:
                self._expect_text(arg, scope, f"{where} {keyword}")
        if name == "tabs":
            tabs = _argument(call, 0) or _argument(call, "tabs")
            if tabs is not None:
                self._expect_texts(tabs, scope, "st.tabs label")
        help_text = _argument(call, "help")
        if help_text is not None:
            self._expect_text(help_text, scope, f"{where} help= tooltip")
        if name in OPTION_MARKDOWN:
            self._check_options(call, name, scope)

    def _element_alias(self, call: ast.Call, scope: _Scope) -> str | None:
        """The Streamlit element a bare name stands for (``show = st.info if ok else
        st.warning``; ``show(text)``), or None."""
        if not isinstance(call.func, ast.Name):
            return None
        found = scope.lookup(call.func.id)
        if found is None:
            return None
        for value in found[1]:
            for expr in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
                if isinstance(expr, ast.Attribute) and expr.attr in MARKDOWN_ARGS and \
                        _is_streamlit_call(ast.Call(expr, [], []), expr.attr):
                    return expr.attr
        return None

    def _check_template(self, call: ast.Call, name: str, scope: _Scope,
                        function: ast.AST | None) -> None:
        template = call.args[0] if call.args else None
        if isinstance(template, ast.Constant) and isinstance(template.value, str):
            return
        # a template function may hand its own template on (app.ui.md → fmt)
        if isinstance(template, ast.Name) and isinstance(function, ast.FunctionDef) and \
                function.name in TEMPLATE_FUNCTIONS and function.args.args and \
                function.args.args[0].arg == template.id:
            return
        self._add(call, f"{name}(...)'s template is {_describe(template)}; it must be a "
                        "string literal (the values go into its {} slots)")

    def _check_options(self, call: ast.Call, name: str, scope: _Scope) -> None:
        func = _argument(call, "format_func")
        if func is None and name in _FORMAT_FUNC_POSITION:
            func = _argument(call, _FORMAT_FUNC_POSITION[name])
        if func is not None:
            if isinstance(func, ast.Lambda):
                self._expect_text(func.body, scope, f"st.{name} format_func result",
                                  lambda_scope=func)
            else:
                self._add(call, f"st.{name} format_func is {_describe(func)}: its results are "
                                "markdown; pass a lambda returning fmt(...)")
            return
        options = _argument(call, 1) or _argument(call, "options")
        if options is not None:
            self._expect_texts(options, scope, f"st.{name} options (markdown): give a "
                                               "format_func returning fmt(...), or")
        captions = _argument(call, "captions")
        if captions is not None:
            self._expect_texts(captions, scope, f"st.{name} captions")

    # -- expressions ---------------------------------------------------------------------

    def _expect_text(self, expr: ast.expr, scope: _Scope, where: str,
                     lambda_scope: ast.Lambda | None = None) -> None:
        why = self._why_not_text(expr, scope, set(), lambda_scope)
        if why:
            self._add(expr, f"{where} is {why}")

    def _expect_texts(self, expr: ast.expr, scope: _Scope, where: str) -> None:
        """A collection of texts: a literal list / tuple of texts, a module constant holding
        one (dict keys for a dict), or ``list(…)``/``tuple(…)`` of such a constant."""
        why = self._why_not_texts(expr, scope, set())
        if why:
            self._add(expr, f"{where} is {why}")

    def _why_not_texts(self, expr: ast.expr, scope: _Scope, seen: set) -> str | None:
        if isinstance(expr, ast.List | ast.Tuple | ast.Set):
            for elt in expr.elts:
                why = self._why_not_text(elt, scope, seen, None)
                if why:
                    return f"a collection holding {why}"
            return None
        if isinstance(expr, ast.Dict):
            return next((f"a dict keyed by {w}" for k in expr.keys if k is not None
                         for w in [self._why_not_text(k, scope, seen, None)] if w), None)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
                expr.func.id in ("list", "tuple") and len(expr.args) == 1:
            return self._why_not_texts(expr.args[0], scope, seen)
        if isinstance(expr, ast.Name):
            return self._resolve(expr, scope, seen, texts=True)
        return _describe(expr)

    def _why_not_text(self, expr: ast.expr, scope: _Scope, seen: set,
                      lambda_scope: ast.Lambda | None) -> str | None:
        """None when ``expr`` is safe text: a literal, a fmt(...) call, a conditional or sum of
        safe texts, or a name every assignment of which is safe text."""
        if isinstance(expr, ast.Constant):
            return None
        if isinstance(expr, ast.Call) and _called_name(expr) == "fmt":
            return None  # its template is checked where the call is walked
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
                expr.func.id in _NUMBERS:
            return None  # a number, which markdown cannot turn into anything
        if isinstance(expr, ast.IfExp):
            return self._why_not_text(expr.body, scope, seen, lambda_scope) or \
                self._why_not_text(expr.orelse, scope, seen, lambda_scope)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self._why_not_text(expr.left, scope, seen, lambda_scope) or \
                self._why_not_text(expr.right, scope, seen, lambda_scope)
        if isinstance(expr, ast.Name):
            if lambda_scope is not None and expr.id in {a.arg for a in lambda_scope.args.args}:
                return f"the lambda's argument {expr.id!r}"
            return self._resolve(expr, scope, seen, texts=False)
        return _describe(expr)

    def _resolve(self, name: ast.Name, scope: _Scope, seen: set, texts: bool) -> str | None:
        found = scope.lookup(name.id)
        if found is None:
            return f"the name {name.id!r}, assigned nowhere in this module"
        owner, values = found
        if name.id in owner.params:
            return f"the parameter {name.id!r}"
        key = (id(owner), name.id)
        if key in seen:
            return None
        seen = seen | {key}
        for value in values:
            if isinstance(value, _Imported):
                module = _module_scope(value.module, self.root)
                if module is None:
                    return f"the name {name.id!r}, imported from {value.module}"
                why = self._resolve(ast.Name(value.name), module, seen, texts)
                if why:
                    return f"{name.id!r} from {value.module}: {why}"
                continue
            if value is None:
                return f"the variable {name.id!r} (bound by a loop, an import or a with)"
            why = self._why_not_texts(value, owner, seen) if texts else \
                self._why_not_text(value, owner, seen, None)
            if why:
                return f"the variable {name.id!r}, assigned {why} (line {value.lineno})"
        return None


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _root(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Attribute | ast.Subscript | ast.Call):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr


def _is_streamlit_call(call: ast.Call, name: str) -> bool:
    """A method call named like a Streamlit element (``st.caption``, ``cols[0].button``,
    ``bar.progress``), not one on a logger or another known non-Streamlit object; bare
    function names are ours (``fmt``, ``show_error``) and not Streamlit's."""
    if not isinstance(call.func, ast.Attribute):
        return False
    if name not in MARKDOWN_ARGS and name not in REFUSED and name != "tabs":
        return False
    root = _root(call.func.value)
    return not (isinstance(root, ast.Name) and root.id in _NOT_STREAMLIT)


def _is_column_config(call: ast.Call) -> bool:
    """``st.column_config.NumberColumn(…)`` and the like (``column_config.X(…)``)."""
    func = call.func
    return isinstance(func, ast.Attribute) and (
        isinstance(func.value, ast.Attribute) and func.value.attr == "column_config"
        or isinstance(func.value, ast.Name) and func.value.id == "column_config")


def _is_getattr_element(func: ast.expr) -> bool:
    """``getattr(st, kind)`` / ``getattr(st.sidebar, kind)`` as the called function."""
    return isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and \
        func.func.id == "getattr" and bool(func.args) and \
        isinstance(_root(func.args[0]), ast.Name) and _root(func.args[0]).id == "st"


def _argument(call: ast.Call, slot: int | str) -> ast.expr | None:
    if isinstance(slot, int):
        if slot < len(call.args) and not any(isinstance(a, ast.Starred)
                                             for a in call.args[:slot + 1]):
            return call.args[slot]
        return None
    return next((kw.value for kw in call.keywords if kw.arg == slot), None)


def _describe(expr: ast.expr | None) -> str:
    if expr is None:
        return "missing"
    if isinstance(expr, ast.JoinedStr):
        return "an f-string"
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        return "a %-formatted string"
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr == "format":
        return "a str.format(...) result"
    try:
        text = ast.unparse(expr)
    except Exception:  # noqa: BLE001 - only for the message
        text = type(expr).__name__
    text = text if len(text) <= 60 else text[:57] + "..."
    if isinstance(expr, ast.Call):
        return f"the result of {text}"
    return f"{text!r}, not from fmt"


def app_files(root: Path) -> Iterator[Path]:
    """Every Python file of ``app/``."""
    yield from sorted((root / "app").rglob("*.py"))
