import base64
import hashlib
import html as html_lib
import json
import re

from app.graph import (
    LAYOUT_ASPECTS,
    graph_html,
    network_data,
    vis_network_js,
)
from g2po.analysis.state_graph import state_graph
from g2po.outcomes import OutcomeRule
from tests.app.builders import XSS_IMG, XSS_SCRIPT, group_steps, hostile
from tests.app.graph.groups import tiny_steps


def test_network_data_is_json_ready_and_named():
    data = network_data(
        state_graph(tiny_steps(), rule=OutcomeRule()),
        title="t",
        graph_id="abc",
        success_reward=10.0,
    )
    again = json.loads(json.dumps(data))
    assert again["graph_id"] == "abc" and again["title"] == "t"
    assert len(again["nodes"]) == 4 and again["options"]["physics"]["enabled"] is False


def test_html_is_offline_and_escapes_hostile_text():
    steps = hostile(group_steps(rows=300))
    one = steps[steps["group_id"] == steps["group_id"].iloc[0]]
    html = graph_html(state_graph(one, rule=OutcomeRule()), title=XSS_SCRIPT, success_reward=10.0)
    # no resource from anywhere but the page itself
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    # (the CSP's script hashes are random letters: one may hold "cdn")
    assert "cdn" not in re.sub(r"sha256-[\w+/=]+", "", html).lower().replace("vis-network", "")
    assert "default-src 'none'" in html
    # payloads appear only as escaped JSON / text, never as markup
    assert XSS_SCRIPT not in html and XSS_IMG not in html
    assert "\\u003cscript\\u003ewindow.__xss" in html
    assert "&lt;script&gt;" in html  # the title
    # vis-network from the installed pyvis, inlined
    assert vis_network_js()[:200] in html


def test_csp_hashes_match_the_inline_scripts_exactly():
    html = graph_html(state_graph(tiny_steps(), rule=OutcomeRule()), success_reward=10.0)
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 3
    policy = html_lib.unescape(re.search(r'Content-Security-Policy"\s+content="([^"]+)"',
                                         html).group(1))
    allowed = set(re.findall(r"'sha256-([^']+)'", policy))
    assert len(allowed) == 3
    for script in scripts:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert digest in allowed


def test_the_data_names_what_stays_legible_and_offers_a_drawing_per_shape():
    graph = state_graph(
        group_steps(rows=400)[lambda d: d["group_id"] == "task-0"], rule=OutcomeRule()
    )
    data = network_data(graph, success_reward=10.0)
    kinds = graph.nodes["kind"]
    keys = set(graph.nodes.index[(kinds != "state") | graph.nodes["is_start"]])
    assert set(data["legible"]["nodes"]) == keys
    numbered = {e["id"] for e in data["edges"] if e.get("rank")}
    assert set(data["legible"]["edges"]) == numbered and len(numbered) == 5
    layouts = data["layouts"]
    assert layouts[0]["aspect"] == LAYOUT_ASPECTS[0]
    assert [n["x"] for n in data["nodes"]] == layouts[0]["x"]  # the drawing's own positions
    assert all(len(v["x"]) == len(v["y"]) == len(data["nodes"]) for v in layouts)
    assert len({(tuple(v["x"]), tuple(v["y"])) for v in layouts}) == len(layouts)
    assert network_data(graph, assumed=("validity assumed",), success_reward=10.0)["legend"][
        "assumed"
    ] == ["validity assumed"]
