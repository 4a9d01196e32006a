"""Escaping for untrusted log text (observations, actions, state keys come from environments,
web pages included), so that it is shown as text wherever it reaches HTML or markdown.

The rule for Streamlit: text reaches a label, caption, message, heading, tab, metric or tooltip
only as a string literal or through :func:`fmt`. ``tests/app/test_safe.py`` checks every file of
``app/`` for it.
"""

from __future__ import annotations

import html
import numbers
import re
import string

__all__ = ["escape_html", "escape_markdown", "truncate", "one_line", "fmt", "Markdown"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")


def escape_html(text: object) -> str:
    """``text`` as an HTML-safe string: ``<``, ``>``, ``&`` and both quotes become entities."""
    return html.escape(str(text), quote=True)


def escape_markdown(text: object, newlines: bool = False) -> str:
    """``text`` for Streamlit markdown: every character markdown, HTML or LaTeX (``$``) would
    interpret is backslash-escaped, so links, images, tags and formulas never form. Newlines
    become spaces, or markdown line breaks with ``newlines=True``."""
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    return escaped.replace("\n", "  \n" if newlines else " ")


def truncate(text: object, limit: int = 80) -> str:
    """The first ``limit`` characters of ``text`` on one line, with ``…`` when cut."""
    s = one_line(text)
    return s if len(s) <= limit else s[: max(0, limit - 1)] + "…"


def one_line(text: object) -> str:
    """Collapse runs of whitespace (newlines included) into single spaces."""
    return " ".join(str(text).split())


class Markdown(str):
    """Markdown made by :func:`fmt`: its template was written in the code and every value in it
    was escaped. ``fmt`` puts one into another template as it is (no double escaping)."""

    __slots__ = ()


class _EscapingFormatter(string.Formatter):
    def format_field(self, value: object, format_spec: str) -> str:
        shown = format(value, format_spec)  # the format spec first: {:.0%}, {:,}, {:>8}
        if isinstance(value, Markdown) or \
                isinstance(value, numbers.Number) and not isinstance(value, str):
            return shown  # a number's digits, sign and point never form markdown
        return escape_markdown(shown)


_FORMATTER = _EscapingFormatter()


def fmt(template: str, /, *values: object, **named: object) -> Markdown:
    r"""The one way to put text into a Streamlit label, caption, message, heading, tab, metric
    or ``help=`` tooltip: ``template`` is a string literal of our own markdown, and each value
    filling its ``{}`` slots (format specs allowed: ``{:.0%}``, ``{:,}``) is escaped, so that a
    name or log text shows as the text it is and never becomes a link, an image, emphasis or a
    directive. Numbers go in as they are (a metric's delta keeps its sign), and so does a
    ``Markdown`` value (made by ``fmt`` already). A slot inside backticks would show the
    escapes: keep slots out of code spans.

    Rule (checked over ``app/`` by ``tests/app/test_safe.py``): never hand Streamlit an
    f-string, a ``%``/``.format`` string or a variable as markdown; write
    ``st.caption(fmt("Run {} · {:,} rows", name, n))``, not ``st.caption(f"Run {name} …")``.

    >>> print(fmt("Training step of **{}**", "![x](https://evil.example)"))
    Training step of **\!\[x\]\(https\://evil\.example\)**
    >>> print(fmt("{:.0%} of {}", 0.25, fmt("**{}**", "a_b")))
    25% of **a\_b**
    """
    return Markdown(_FORMATTER.vformat(template, values, named))
