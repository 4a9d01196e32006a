import json
import subprocess
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.web.server.app_discovery import discover_asgi_app

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "app" / "main.py"

#: Packages whose import is what the warm-up exists to take off the first script run.
HEAVY = ("pandas", "pyarrow", "numpy", "pyvis", "networkx", "jinja2", "plotly", "app", "g2po",
         "loaders")


def test_streamlit_run_serves_the_entry_as_an_asgi_app_with_its_warm_up():
    # what `streamlit run app/main.py` does first: find an st.App in the file (by its AST)
    found = discover_asgi_app(MAIN)
    assert found.is_asgi_app
    assert found.import_string == "main:streamlit_app"


def test_the_entry_draws_the_app_when_streamlit_runs_it_as_a_script(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(MAIN)])  # as `streamlit run` sets it
    at = AppTest.from_file(str(MAIN), default_timeout=60)
    at.run()  # no arguments: the bundled sample rollouts
    assert not at.exception
    assert at.selectbox(key="active_run").value == at.multiselect(key="runs").value[0]


def test_warm_up_imports_what_the_first_page_needs():
    """After the warm-up, drawing the group explorer on the sample rollouts imports nothing
    heavy: if a page starts to need a new library, WARM_MODULES must grow with it."""
    probe = f"""
import gc, importlib.util, json, sys
sys.path.insert(0, {str(ROOT)!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(MAIN)!r}, default_timeout=60)
spec = importlib.util.spec_from_file_location("g2po_entry", {str(MAIN)!r})
entry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(entry)  # not named "main": builds no st.App
before = set(sys.modules)
entry.warm_up()
warmed = set(sys.modules) - before
frozen, collecting = gc.get_freeze_count(), gc.isenabled()
at.run()
assert not at.exception, at.exception
print(json.dumps({{"warmed": sorted(warmed), "new": sorted(set(sys.modules) - before - warmed),
                  "frozen": frozen, "collecting": collecting}}))
"""
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"pandas", "pyarrow", "pyvis", "app.views.group", "loaders"} <= set(result["warmed"])
    late = [m for m in result["new"] if m.split(".")[0] in HEAVY]
    assert late == [], f"imported by the first script run, not by the warm-up: {late}"
    assert result["frozen"] > 10_000  # the imported objects left the collector's view
    assert result["collecting"]  # and the collector runs again


def test_the_users_browser_opens_on_the_app_unless_headless():
    from streamlit import config

    from app.main import browser_url

    saved = {k: config.get_option(k) for k in ("server.headless", "server.port")}
    try:
        config.set_option("server.headless", True)
        assert browser_url() is None
        config.set_option("server.headless", False)
        config.set_option("server.port", 8765)
        assert browser_url() == "http://localhost:8765"
    finally:
        for key, value in saved.items():
            config.set_option(key, value)
