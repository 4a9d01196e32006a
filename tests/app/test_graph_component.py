import re

from app.graph import vis_network_js
from app.graph_component import component_dir


def test_component_folder_holds_the_page_its_style_and_one_script():
    folder = component_dir()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["graph.css", "graph.js", "index.html"]
    script = (folder / "graph.js").read_text()
    vis = vis_network_js()
    # vis-network first, unchanged, then the drawing code (its marks, its core), then the glue
    assert script.startswith(vis)
    assert script.index("window.G2POMarks =") < script.index("window.G2POGraph =") < \
        script.index("streamlit:componentReady")
    assert component_dir() == folder  # written once


def test_component_page_loads_only_its_own_files_under_a_strict_policy():
    page = (component_dir() / "index.html").read_text()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sorted(sources) == ["graph.css", "graph.js"]
    assert "default-src 'none'" in page and "script-src 'self'" in page
    assert "<script>" not in page  # no inline script: 'self' only
    assert 'id="g2po-legend"' in page


def test_component_script_listens_to_its_parent_only():
    script = (component_dir() / "graph.js").read_text()
    ours = script[len(vis_network_js()):]
    assert "event.source !== window.parent" in ours
    assert "streamlit:componentReady" in ours and "streamlit:setComponentValue" in ours
    assert "textContent" in ours and "innerHTML" not in ours
