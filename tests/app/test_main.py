import json
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.web.server.app_discovery import discover_asgi_app

from tests.app.browser import free_port, stop_process

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


def test_serving_the_entry_skips_streamlits_component_scan_before_its_runtime_exists():
    # `streamlit run` imports the entry as the module "main", then builds the Runtime
    probe = f"""
import sys
sys.path.insert(0, {str(MAIN.parent)!r})
import main
from streamlit.components.v2.component_manager import BidiComponentManager
from streamlit.runtime import Runtime
scan = BidiComponentManager.discover_and_register_components
print(Runtime._instance is None, "G2PO" in scan.__doc__)
"""
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["True", "True"]


def test_the_entry_draws_the_app_when_streamlit_runs_it_as_a_script(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(MAIN)])  # as `streamlit run` sets it
    at = AppTest.from_file(str(MAIN), default_timeout=60)
    at.run()  # no arguments: the bundled sample rollouts
    assert not at.exception
    assert at.selectbox(key="active_run").value == at.multiselect(key="runs").value[0]


@pytest.mark.parametrize("page", ["group", "overview", "groups"])
def test_warm_up_imports_what_the_first_page_needs(page):
    """After the warm-up, drawing the group explorer (the start page), or the Run overview or
    the Groups page (where a user who restarts the app to look at a run goes), on the sample
    rollouts imports nothing heavy: if a page starts to need a new library, WARM_MODULES must
    grow with it."""
    script = ("import sys; sys.path.insert(0, " + repr(str(ROOT)) + ")\n"
              "from app.shell import run\n"
              "run([], start_page=" + repr(page) + ")\n")
    probe = f"""
import gc, importlib.util, json, sys
sys.path.insert(0, {str(ROOT)!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_string({script!r}, default_timeout=60)
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
    assert {"pandas", "pyarrow", "pyvis", "app.views.explorer", "loaders"} <= set(result["warmed"])
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


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as the kernel writes them) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def _start(tmp_path, *flags: str):
    """``streamlit run app/main.py`` as a user starts it (no --server.address), from another
    working directory; returns the process and its port once it answers on 127.0.0.1."""
    port = free_port()
    log = open(tmp_path / f"server-{port}.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(MAIN), "--server.headless", "true",
         "--server.port", str(port), "--server.fileWatcherType", "none", *flags],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1):
                return proc, port, tmp_path / f"server-{port}.log"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError("streamlit did not answer")


def test_the_server_listens_on_loopback_only_unless_told_and_then_warns(tmp_path):
    proc, port, log = _start(tmp_path)
    try:
        listening = _listening(port)
        assert listening == ["0100007F"], listening  # 127.0.0.1 and nothing else
        other = _non_loopback_address()
        if other is not None:  # another interface of this machine cannot reach it
            with pytest.raises(OSError):
                socket.create_connection((other, port), timeout=2).close()
    finally:
        stop_process(proc)
    assert "WARNING" not in log.read_text()
    proc, port, log = _start(tmp_path, "--server.address", "0.0.0.0")
    try:
        assert _listening(port) == ["00000000"]
    finally:
        stop_process(proc)
    assert "WARNING: the G2PO app listens on 0.0.0.0" in log.read_text()


def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks an interface
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_sharing_warning_names_the_address():
    from streamlit import config

    from app.main import sharing_warning

    saved = config.get_option("server.address")
    try:
        for address in ("127.0.0.1", "localhost", "::1"):
            config.set_option("server.address", address)
            assert sharing_warning() is None
        config.set_option("server.address", "10.1.2.3")
        assert "10.1.2.3" in sharing_warning() and "no login" in sharing_warning()
    finally:
        config.set_option("server.address", saved)


def test_the_script_level_config_hides_tracebacks_and_error_links():
    settings = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())
    assert settings["client"]["showErrorDetails"] == "none"
    assert settings["client"]["showErrorLinks"] == "false"
    assert settings["server"]["address"] == "127.0.0.1"
    assert 0 < settings["server"]["maxUploadSize"] <= 500
