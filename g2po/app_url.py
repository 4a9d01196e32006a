"""The app's URLs: its pages and the query names a view is kept under, one table that the app
and ``g2po url`` both read.

The app declares its pages from :data:`PAGES` (``app/shell.py``) and reads and writes the
names of :data:`URL_NAMES` (``app/url_state.py``); ``g2po url`` prints the URL of a view from
the same tables (:func:`view_url`), so a link a script prints is one the app opens. No
streamlit here: the command imports this module when it builds its parser.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

__all__ = ["Page", "PAGES", "START_PAGE", "PAGE_ALIASES", "UrlName", "URL_NAMES", "URL_KEYS",
           "PAGE_ONLY", "OPEN", "SIMILARITY_RANGE", "SAMPLE_DIR", "DEFAULT_BASE", "page_key",
           "url_text", "view_url"]

#: The bundled sample rollouts: what the app opens when started without ``--log``.
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_rollouts"
#: Where ``streamlit run`` serves the app by default.
DEFAULT_BASE = "http://localhost:8501"


@dataclass(frozen=True)
class Page:
    """One page of the app.

    key : the name the shell, :mod:`app.navigation` and ``g2po url --page`` use (the module
        that draws it is named in ``app/shell.py``).
    title : its heading and its label in the navigation.
    path : its URL path below the app's address.
    """

    key: str
    title: str
    path: str


#: The app's pages, in the navigation's order.
PAGES: dict[str, Page] = {p.key: p for p in (
    Page("group", "Group explorer", "group"),
    Page("groups", "Groups", "groups"),
    Page("overview", "Run overview", "overview"),
    Page("curves", "Training curves", "curves"),
    Page("state_history", "State over training", "state-history"),
    Page("step_diff", "Step diff", "step-diff"),
    Page("compare", "Estimator comparison", "compare"),
    Page("diagnostics", "State-merge diagnostics", "diagnostics"),
    Page("whatif", "What-if merging", "whatif"),
    Page("export", "Export", "export"),
)}
#: The page the app opens at its root (its own path opens it too).
START_PAGE = "group"
#: Other words ``g2po url --page`` takes for a page.
PAGE_ALIASES = {"explorer": "group"}


@dataclass(frozen=True)
class UrlName:
    """One name of the app's query string.

    name : as it stands in the URL.
    page : the key of the one page that reads it; None: the sidebar reads it, on every page.
    doc : what its value is.
    own : other pages drop it (a stale one must not override their choices).
    sets : the field of :class:`g2po.params.G2POParams` or :class:`g2po.outcomes.OutcomeRule`
        it sets, where it is one.
    bounds : (lowest, highest) value its widget takes, where it is a number input: a value
        outside would not be shown as it is, so :func:`view_url` refuses it.
    """

    name: str
    page: str | None
    doc: str
    own: bool = False
    sets: str | None = None
    bounds: tuple[float, float] | None = None


#: Every name the app keeps in its URL, in the order a URL lists them.
URL_NAMES: dict[str, UrlName] = {n.name: n for n in (
    UrlName("run", None, "the run in view, named as the sidebar names it"),
    UrlName("open", None, "a path the sidebar opens as if typed in its path box (repeated "
                          "for several), under the app's path rule"),
    UrlName("step", None, "the training step"),
    UrlName("group", None, "the group id"),
    UrlName("traj", "group", "the highlighted trajectories, comma-separated"),
    UrlName("node", "group", "the selected node: its id in the group's state graph"),
    UrlName("edge", "group", "the selected edge: its row of the graph's edge table"),
    UrlName("filter", "group", "what the step tables are filtered to: node:N, edge:E or "
                               "alarm:KIND"),
    UrlName("outcome", "group", "the trajectories shown, by outcome, comma-separated"),
    UrlName("gamma", None, "discount γ", sets="gamma", bounds=(0.01, 1.0)),
    UrlName("w", None, "step-advantage weight w", sets="w", bounds=(0.0, 10.0)),
    UrlName("mode", None, "normalisation", sets="mode"),
    UrlName("penalty", None, "invalid-action penalty p", sets="penalty", bounds=(0.0, 100.0)),
    UrlName("success", None, "the run's success reward", sets="success_reward"),
    UrlName("success_min", None, "success when reward ≥ this", sets="success_threshold"),
    UrlName("terminal", None, "the terminal rule", sets="terminal"),
    UrlName("truncate_at", None, "length ≥ N without success counts as truncated",
            sets="truncate_at"),
    UrlName("state_key", None, "the state key: exact, normalized, regex:PATTERN or "
                               "similarity:THRESHOLD", sets="state_key"),
    UrlName("edge_color", "group", "the edge colour"),
    UrlName("value_scale", "group", "the node colour's scale"),
    UrlName("gscope", "groups", "one training step or the whole run"),
    UrlName("gsort", "groups", "the sorted column"),
    UrlName("gorder", "groups", "asc or desc"),
    UrlName("galarm", "groups", "the alarms filtered to"),
    UrlName("gtask", "groups", "the task text filtered to"),
    UrlName("gsuccess", "groups", "the success-rate range filtered to"),
    UrlName("gest", "groups", "the estimator the severity speaks for"),
    UrlName("gstoch", "groups", "1: a stochastic environment"),
    UrlName("hfrom", "state_history", "the training step the state was chosen at", own=True),
    UrlName("hgroup", "state_history", "the group it was chosen in", own=True),
    UrlName("hstate", "state_history", "12 hex digits of the SHA-256 of its key", own=True),
    UrlName("wkey", "whatif", "the second state key", own=True),
    UrlName("wmin", "whatif", "the smallest change of A that counts", own=True,
            bounds=(0.0, 100.0)),
)}
#: The names, in the order they are written.
URL_KEYS = tuple(URL_NAMES)
#: page → the names only it keeps in the URL: every other page drops them.
PAGE_ONLY = {page: tuple(n.name for n in URL_NAMES.values() if n.own and n.page == page)
             for page in dict.fromkeys(n.page for n in URL_NAMES.values() if n.own)}
#: The name of a path the sidebar opens (:data:`URL_NAMES`).
OPEN = "open"
#: The similarity threshold the state-key sliders take (``state_key``, ``wkey``).
SIMILARITY_RANGE = (0.5, 1.0)


def page_key(word: str) -> str:
    """The page a word names (a key of :data:`PAGES` or one of :data:`PAGE_ALIASES`).

    >>> page_key("explorer"), page_key("step_diff")
    ('group', 'step_diff')
    """
    key = PAGE_ALIASES.get(word, word)
    if key not in PAGES:
        raise ValueError(f"no page {word!r}; the pages: {', '.join(PAGES)} (explorer = group)")
    return key


def url_text(value: object) -> str:
    """A value as the URL holds it: a list joined by commas, a float in its short form.

    >>> url_text(0.95), url_text(["r0", "r1"]), url_text(3)
    ('0.95', 'r0,r1', '3')
    """
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def view_url(base: str, page: str, query: Mapping[str, object]) -> str:
    """The URL of a view of the app served at ``base``: ``page`` (a key of :data:`PAGES`; the
    start page is the root) with ``query`` (name of :data:`URL_NAMES` → value; a list under
    :data:`OPEN` repeats the name, under other names it is joined by commas), written in
    :data:`URL_KEYS`' order and percent-encoded (``/``, ``:``, ``,`` and ``@`` stay as they
    are). A name the page does not read is a ValueError.

    >>> view_url("http://localhost:8501", "group", {"node": 4, "run": "a b&c", "gamma": 0.9})
    'http://localhost:8501/?run=a%20b%26c&node=4&gamma=0.9'
    >>> view_url("http://h:1/app/", "whatif", {"open": ["/x/r1", "/x/r2"], "wkey": "normalized"})
    'http://h:1/app/whatif?open=/x/r1&open=/x/r2&wkey=normalized'
    """
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or \
            parts.fragment:
        raise ValueError(f"the app's address must be http(s)://HOST[:PORT][/PATH], got "
                         f"{base!r}")
    page = page_key(page)
    pairs: list[tuple[str, str]] = []
    for name in sorted(query, key=_order):
        reader = URL_NAMES[name].page
        if reader is not None and reader != page:
            raise ValueError(f"{name} is read by the page {reader!r} only, not by {page!r}")
        value = query[name]
        bounds = URL_NAMES[name].bounds
        if bounds is not None and not bounds[0] <= float(value) <= bounds[1]:
            raise ValueError(f"{name}={url_text(value)}: the app takes {name} from "
                             f"{bounds[0]:g} to {bounds[1]:g}")
        values: Iterable = value if name == OPEN and isinstance(value, list | tuple) \
            else [value]
        pairs += [(name, url_text(v)) for v in values]
    path = "" if page == START_PAGE else PAGES[page].path
    text = "&".join(f"{quote(k, safe='')}={quote(v, safe='/:,@')}" for k, v in pairs)
    return f"{base.rstrip('/')}/{path}" + (f"?{text}" if text else "")


def _order(name: str) -> int:
    if name not in URL_NAMES:
        raise ValueError(f"the app keeps no {name!r} in its URL; it reads "
                         f"{', '.join(URL_KEYS)}")
    return URL_KEYS.index(name)
