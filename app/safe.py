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

__all__ = ["escape_html", "escape_markdown", "escape_inline_markdown", "truncate", "one_line",
           "fmt", "Markdown", "JOINER"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")
#: Where escape_markdown's output needs a JOINER too: after an escaped ``:`` before a word
#: character or ``/ + -``, after ``@``, after ``www`` before its (escaped) dot.
_JOIN_AFTER = re.compile(r"\\:(?=[\w/+\\])|@|(?<![\w])www(?=\\\.)", re.IGNORECASE)
#: U+2060 WORD JOINER: invisible, and breaks the patterns that Streamlit's markdown applies to
#: the text after parsing (where a backslash escape is already gone): emoji and icon
#: shortcodes (``:smile:``, ``:material/home:``) and GFM's autolinks (``https://…``,
#: ``www.…``, ``me@host.org``).
JOINER = "\u2060"


def escape_html(text: object) -> str:
    """``text`` as an HTML-safe string: ``<``, ``>``, ``&`` and both quotes become entities."""
    return html.escape(str(text), quote=True)


def escape_markdown(text: object, newlines: bool = False) -> str:
    """``text`` for Streamlit markdown: every character markdown, HTML or LaTeX (``$``) would
    interpret is backslash-escaped, so links, images, tags and formulas never form, and an
    invisible :data:`JOINER` breaks shortcodes and autolinks as in
    :func:`escape_inline_markdown`. Newlines become spaces, or markdown line breaks with
    ``newlines=True``. (Labels and messages use :func:`fmt`, which escapes less.)"""
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    escaped = _JOIN_AFTER.sub(lambda m: m.group(0) + JOINER, escaped)
    return escaped.replace("\n", "  \n" if newlines else " ")


#: Escaped wherever they stand: emphasis, code, strike-through, links and images (``[``),
#: HTML tags and ``<…>`` autolinks, block quotes, LaTeX, the escape itself.
_ALWAYS = frozenset("\\`*~[]<>$")
#: An HTML entity (``&lt;``, ``&#60;``): its ``&`` is escaped, so it shows as written.
_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
#: What a line may start with to become a heading, list, rule, setext underline or table row
#: (a quote's ``>`` is always escaped), and an ordered list's number.
_LINE_START = re.compile(r"[#+](?=\s|$)|-(?=[\s-]|$)|=|\|")
_ORDERED = re.compile(r"[0-9]+[.)](?=\s|$)")


def escape_inline_markdown(text: object) -> str:
    """``text`` as one line of Streamlit markdown that shows exactly as written: only what
    could start markup where it stands is escaped, so that a widget label (whose raw text is
    also its ``aria-label``) keeps ordinary names readable (``group_id``, ``run (2)``,
    ``0.8``, ``reward: 10`` stay as they are).

    Backslash-escaped: ``\\ ` * ~ [ ] < > $`` everywhere; ``_`` unless between two letters or
    digits (GFM forms no emphasis inside a word); the ``&`` of an entity; a heading, list,
    rule or table marker at the start. An invisible :data:`JOINER` goes after a ``:`` that a
    letter or ``/ _ + -`` follows (shortcodes, ``:red[…]``, ``https://``; of the digit-only
    shortcodes, ``:100:`` and ``:1234:``; a time's ``12:30`` stays as it is), after
    ``@`` and between ``www`` and its dot, which Streamlit would otherwise turn into emoji,
    icons and links after the escapes are read. Leading spaces (a code block) are dropped and
    newlines become spaces.

    >>> escape_inline_markdown("group_id: **x** :red[y] (2) 0.8")
    'group_id: \\\\*\\\\*x\\\\*\\\\* :\\u2060red\\\\[y\\\\] (2) 0.8'
    """
    s = str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ").lstrip()
    out = []
    n = len(s)
    for i, ch in enumerate(s):
        if ch in _ALWAYS:
            out.append("\\" + ch)
        elif ch == "_" and not (0 < i < n - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()):
            out.append("\\_")
        elif ch == "&" and _ENTITY.match(s, i):
            out.append("\\&")
        elif ch == ":" and i + 1 < n and (s[i + 1].isalpha() or s[i + 1] in "/_+-"
                                          or s.startswith(("100:", "1234:"), i + 1)):
            out.append(":" + JOINER)
        elif ch == "@":
            out.append("@" + JOINER)
        elif ch == "." and s[max(0, i - 3):i].lower() == "www" and \
                (i == 3 or not s[i - 4].isalnum()):
            out.append(JOINER + ".")
        else:
            out.append(ch)
    escaped = "".join(out)
    if _LINE_START.match(escaped):  # "# x", "- x", "---", "===", "| x": the marker as text
        return "\\" + escaped
    ordered = _ORDERED.match(escaped)
    if ordered:  # "1. x", "3) x"
        cut = ordered.end() - 1
        return escaped[:cut] + "\\" + escaped[cut:]
    return escaped


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
        return escape_inline_markdown(shown)


_FORMATTER = _EscapingFormatter()


def fmt(template: str, /, *values: object, **named: object) -> Markdown:
    r"""The one way to put text into a Streamlit label, caption, message, heading, tab, metric
    or ``help=`` tooltip: ``template`` is a string literal of our own markdown, and each value
    filling its ``{}`` slots (format specs allowed: ``{:.0%}``, ``{:,}``) is escaped
    (:func:`escape_inline_markdown`), so that a name or log text shows as the text it is and
    never becomes a link, an image, emphasis or a directive. Numbers go in as they are (a
    metric's delta keeps its sign), and so does a ``Markdown`` value (made by ``fmt``
    already). A slot inside backticks would show the escapes: keep slots out of code spans.

    Rule (checked over ``app/`` by ``tests/app/test_safe.py``): never hand Streamlit an
    f-string, a ``%``/``.format`` string or a variable as markdown; write
    ``st.caption(fmt("Run {} · {:,} rows", name, n))``, not ``st.caption(f"Run {name} …")``.

    >>> fmt("Training step of **{}**", "![x](https://evil.example)")
    'Training step of **!\\[x\\](https:\u2060//evil.example)**'
    >>> print(fmt("{:.0%} of {}", 0.25, fmt("**{}**", "_a_b")))
    25% of **\_a_b**
    """
    return Markdown(_FORMATTER.vformat(template, values, named))
