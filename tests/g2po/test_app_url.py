"""The app's URL table: a view's URL encodes any text so that the query the app parses gives it
back exactly, names go in one order, and a name only one page reads is refused on another."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from g2po.app_url import (
    PAGE_ONLY,
    PAGES,
    START_PAGE,
    URL_KEYS,
    URL_NAMES,
    page_key,
    url_text,
    view_url,
)

#: Text a URL must carry through: its own separators, escapes, spaces, non-ASCII, markup.
HOSTILE = ["a&b=c", "x+y z", "100%", "#frag", "?q", "ünï/cödé:ø", "<script>x</script>",
           "line\nbreak", "s1:10"]


def query(url: str) -> dict[str, list[str]]:
    """What the app's query parameters hold for ``url`` (Streamlit parses with parse_qs)."""
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


@pytest.mark.parametrize("text", HOSTILE)
def test_any_text_comes_back_as_it_was(text):
    url = view_url("http://localhost:8501", "group", {"run": text, "group": text,
                                                      "open": [f"/x/{text}", "/y"]})
    assert query(url) == {"run": [text], "open": [f"/x/{text}", "/y"], "group": [text]}
    assert " " not in url and "\n" not in url


def test_names_in_the_tables_order_the_start_page_at_the_root():
    url = view_url("http://h:1", "explorer", {"edge": 3, "gamma": 0.9, "run": "r", "step": 2,
                                              "traj": ["t1", "t2"]})
    assert url == "http://h:1/?run=r&step=2&traj=t1,t2&edge=3&gamma=0.9"
    assert [k for k in query(url)] == [k for k in URL_KEYS if k in query(url)]
    assert view_url("http://h:1/prefix/", "state_history", {}) == \
        "http://h:1/prefix/state-history"
    assert view_url("http://h:1", START_PAGE, {}) == "http://h:1/"


def test_a_name_another_page_reads_or_no_page_reads_is_refused():
    with pytest.raises(ValueError, match="node is read by the page 'group' only"):
        view_url("http://h:1", "compare", {"node": 1})
    with pytest.raises(ValueError, match="keeps no 'nodes' in its URL"):
        view_url("http://h:1", "group", {"nodes": 1})
    with pytest.raises(ValueError, match="no page 'graph'; the pages: group, groups"):
        page_key("graph")
    with pytest.raises(ValueError, match="gamma=0: the app takes gamma from 0.01 to 1"):
        view_url("http://h:1", "group", {"gamma": 0.0})
    assert "wmin=100" in view_url("http://h:1", "whatif", {"wmin": 100.0})
    for bad in ("localhost:8501", "ftp://h", "http://h/?x=1", "http://"):
        with pytest.raises(ValueError, match="the app's address must be"):
            view_url(bad, "group", {})


def test_the_tables_hang_together():
    assert {n.page for n in URL_NAMES.values()} - {None} <= set(PAGES)
    assert {"run", "open", "step", "group", "node", "edge", "traj"} <= set(URL_KEYS)
    assert PAGE_ONLY == {"state_history": ("hfrom", "hgroup", "hstate"),
                         "whatif": ("wkey", "wmin")}
    assert len({p.path for p in PAGES.values()}) == len(PAGES)
    assert url_text(1.0) == "1" and url_text(True) == "True"
