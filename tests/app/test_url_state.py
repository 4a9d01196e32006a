"""The view in the URL: every name the app reads or writes is one of :mod:`g2po.app_url`'s (the
table ``g2po url`` writes from), every name there is one the app reads, and the app opened on
the exact URL ``g2po url`` (or ``g2po whatif --url``) prints shows that view and keeps it in
its own URL, value for value."""

from __future__ import annotations

import ast
import contextlib
import io
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd
from streamlit.testing.v1 import AppTest

import loaders
from app.explorer.state import PICKS
from app.open_logs import OPEN_URL
from app.sidebar import PARAM_URL
from app.url_state import _SEEDED
from g2po.analysis.state_graph import state_graph
from g2po.app_url import PAGES, SIMILARITY_RANGE, START_PAGE, URL_KEYS, URL_NAMES
from g2po.cli import main
from g2po.params import G2POParams
from tests.app.builders import entry, shown, texts, write_run

APP = Path(__file__).resolve().parents[2] / "app"
#: The functions that read a URL name (the index of the name among their arguments), and those
#: that name URL names in their arguments (every one).
READERS = {"seed_from_url": 1, "url_once": 0, "unread_url_value": 0, "url_value": 0}
NAMING = ("reseed", "mark_read")


def names_in_app() -> tuple[set[str], set[str]]:
    """The URL names the app's code reads, and those it writes or otherwise names, where it
    spells them out (a name held in a variable is not seen here)."""
    read, named = set(), set()
    for path in APP.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = getattr(node.func, "id", getattr(node.func, "attr", None))
            args = [a.value for a in node.args if isinstance(a, ast.Constant)
                    and isinstance(a.value, str)]
            if func in READERS and len(node.args) > READERS[func] and \
                    isinstance(node.args[READERS[func]], ast.Constant):
                read.add(node.args[READERS[func]].value)
            elif func in NAMING:
                named.update(args)
            elif func == "write_url":
                named.update(k.arg for k in node.keywords if k.arg is not None)
    return read, named


def test_every_name_the_app_uses_is_in_the_table_and_every_one_there_is_read():
    read, named = names_in_app()
    read |= {OPEN_URL, *PARAM_URL.values()}  # read through a variable
    assert {"run", "step", "group", "node", "traj", "wkey", "state_key"} <= read  # it sees
    assert read | named <= set(URL_KEYS), "add the name to g2po.app_url.URL_NAMES"
    assert set(URL_KEYS) <= read, "a name in g2po.app_url that no page reads"


def printed(*argv: str) -> str:
    """What ``g2po ARGV`` prints on stdout (it must succeed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def open_on(url: str, argv: list[str]) -> tuple[AppTest, dict[str, list[str]]]:
    """The app started with ``argv``, opened on ``url`` as a browser opens it: the page its
    path names (as ``st.navigation`` routes it) and its query; and that query, parsed."""
    parts = urlsplit(url)
    path = parts.path.strip("/")
    page = START_PAGE if not path else next(k for k, p in PAGES.items() if p.path == path)
    query = parse_qs(parts.query, keep_blank_values=True)
    at = AppTest.from_function(entry, kwargs={"page": page, "argv": argv}, default_timeout=90)
    at.query_params.update({k: v if len(v) > 1 else v[0] for k, v in query.items()})
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at, query


def steps_shown(at: AppTest) -> pd.DataFrame:
    """The explorer's step table as drawn."""
    return next(d.value for d in at.dataframe if "A^EP" in d.value.columns
                and "rollout" in d.value.columns)


def kept(at: AppTest, query: dict[str, list[str]]) -> None:
    """Every name of ``query`` was read by the app, and its URL still holds it, unchanged."""
    assert set(query) <= at.session_state[_SEEDED]
    for name, values in query.items():
        now = at.query_params[name]
        assert (now if isinstance(now, list) else [now]) == values, name


def test_the_app_opens_the_node_g2po_url_names(runs_root):
    log = loaders.open_log(runs_root / "run_b")
    group = log.groups(1)[1]
    graph = state_graph(log.load_group(1, group), rule=log.rule(), params=G2POParams(gamma=0.8))
    states = graph.nodes[graph.nodes["kind"] == "state"]
    node = int(states.index[states["visits"] > 1][-1])  # a state several steps reach
    traj = sorted(graph.steps["traj_id"].astype(str).unique())[1]
    url = printed("url", str(runs_root / "run_b"), "--app-log", str(runs_root), "--step", "1",
                  "--group", group, "--node", str(node), "--traj", traj, "-p", "gamma=0.8")
    at, query = open_on(url, ["--log", str(runs_root)])
    assert at.selectbox(key="active_run").value == "run_b"
    key = f"auto:{(runs_root / 'run_b').resolve()}"
    assert at.selectbox(key=f"train_step:{key}").value == 1
    assert at.selectbox(key=f"group:{key}:1").value == group
    assert at.multiselect(key="g_traj").value == [traj]
    assert at.session_state[PICKS].node == node
    visits = int(graph.nodes.loc[node, "visits"])
    assert f"Showing the {visits} step(s) at node {node}" in shown(texts(at))
    assert len(steps_shown(at)) == visits
    kept(at, query)
    for name in ("gamma", "w", "penalty"):  # what g2po url refuses is what they cannot show
        widget = at.number_input(key=f"p_{name}")
        assert (widget.min, widget.max) == URL_NAMES[name].bounds


def test_the_app_opens_a_log_it_was_not_started_with_at_the_edge_g2po_url_names(runs_root,
                                                                               tmp_path):
    other = write_run(tmp_path / "more" / "run_a", 2, seed=30)  # a second run_a
    log = loaders.open_log(other)
    group = log.groups(2)[0]
    graph = state_graph(log.load_group(2, group), rule=log.rule())
    edge = int(graph.edges["count"].to_numpy().argmax())
    url = printed("url", str(other), "--app-log", str(runs_root), "--group", group, "--edge",
                  str(edge), "--base", "http://box:8600")
    assert url.startswith("http://box:8600/?run=more/run_a&open=")
    at, query = open_on(url, ["--log", str(runs_root), "--allow-dir", str(tmp_path)])
    assert at.multiselect(key="runs").options == [f"{runs_root.name}/run_a", "run_b",
                                                  "more/run_a"]  # named apart, as printed
    assert at.selectbox(key="active_run").value == "more/run_a"
    assert at.session_state[PICKS].edge == edge
    assert at.session_state[PICKS].node == int(graph.edges["source"].iloc[edge])
    along = graph.steps[(graph.steps["node"] == graph.edges["source"].iloc[edge])
                        & (graph.steps["next_node"] == graph.edges["target"].iloc[edge])
                        & (graph.steps["action"] == graph.edges["action"].iloc[edge])]
    assert len(steps_shown(at)) == len(along) > 0
    kept(at, query)


def test_the_what_if_page_opens_on_the_row_g2po_whatif_links(runs_root):
    out = printed("whatif", str(runs_root / "run_a"), "--key", "normalized", "--against",
                  "similarity:0.9", "--step", "2", "--min-change", "0.25", "--format", "csv",
                  "--url", "--app-log", str(runs_root))
    row = pd.read_csv(io.StringIO(out)).iloc[-1]
    at, query = open_on(row["url"], ["--log", str(runs_root)])
    key = f"auto:{(runs_root / 'run_a').resolve()}"
    assert at.selectbox(key=f"group:{key}:2").value == str(row["group_id"])
    assert at.selectbox(key="wi_key").value == "normalized"
    assert at.number_input(key="wi_min").value == 0.25
    assert at.slider(key="p_similarity").value == 0.9  # the sidebar's key: the first side
    kept(at, query)
    widget, slider = at.number_input(key="wi_min"), at.slider(key="p_similarity")
    assert (widget.min, widget.max) == URL_NAMES["wmin"].bounds
    assert (slider.min, slider.max) == SIMILARITY_RANGE
