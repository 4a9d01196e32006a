"""A real browser on the app: the app served by ``streamlit run`` on a free localhost port, and
Debian's Chromium driven by Playwright. Used by the browser tests and ``scripts/bench_app.py``."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("G2PO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-dev-shm-usage"]
ARTIFACTS = ROOT / "artifacts"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}


def stop_process(proc: subprocess.Popen) -> None:
    """Stop a server started by a test (and only it): terminate, then kill after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(args: list[str], timeout: float = 60.0, script: Path | None = None
              ) -> Iterator[str]:
    """``streamlit run app/main.py -- ARGS`` (or another ``script``) on a free port; yields
    its URL once ``/_stcore/health`` answers, and stops the server (and only it) afterwards."""
    port = free_port()
    # the server's output of the latest run, for when a browser test fails
    log = open(ARTIFACTS / "streamlit-server.log", "w") if ARTIFACTS.is_dir() else \
        subprocess.DEVNULL
    cmd = [sys.executable, "-m", "streamlit", "run", str(script or ROOT / "app" / "main.py"),
           "--server.headless", "true", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false", "--", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}"
    try:
        wait_healthy(proc, url, timeout)
        yield url
    finally:
        stop_process(proc)
        if log is not subprocess.DEVNULL:
            log.close()


def wait_healthy(proc: subprocess.Popen, url: str, timeout: float) -> None:
    """Return once the Streamlit server ``proc`` at ``url`` answers ``/_stcore/health``."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}: {' '.join(proc.args)}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"streamlit did not answer /_stcore/health in {timeout} s")
        time.sleep(0.05)


def wait_idle(page, settle: float = 0.6, timeout: float = 60.0) -> None:
    """Wait until Streamlit shows no running script for ``settle`` seconds."""
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        if page.locator("[data-testid='stStatusWidget']").filter(has_text="Running").count():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= settle:
            return
        time.sleep(0.1)
    raise TimeoutError("the app kept running")


def chromium_missing() -> str | None:
    """Why Chromium cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return (f"{CHROMIUM} not found: run `scripts/install_chromium.sh` (as root; "
                "`make test` does) or set G2PO_CHROMIUM")
    return None


@contextlib.contextmanager
def chromium() -> Iterator:
    """A headless Chromium (Debian's, not a Playwright download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watch:
    """What a page did: console errors, page errors, dialogs, and every request's URL."""

    console_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def external(self) -> list[str]:
        """Requests that left localhost (``data:``/``blob:``/``about:`` stay in the page)."""
        out = []
        for url in self.requests:
            parsed = urlparse(url)
            if parsed.scheme in ("data", "blob", "about"):
                continue
            if parsed.hostname not in LOCAL_HOSTS:
                out.append(url)
        return out


def watch(page, block: bool = True) -> Watch:
    """Record the page's console errors, uncaught errors, dialogs (dismissed) and requests;
    with ``block``, requests to anywhere but localhost are blocked as well as recorded.
    Blocking routes every request through Playwright (a round trip to this process each), which
    slows a page of ~150 requests by ~0.3 s: benchmarks only record."""
    w = Watch()
    page.on("console", lambda m: w.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.console_errors.append(f"uncaught: {e}"))

    def on_dialog(dialog) -> None:
        w.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("request", lambda r: w.requests.append(r.url))
    if not block:
        return w

    def route(r) -> None:
        host = urlparse(r.request.url).hostname
        if urlparse(r.request.url).scheme in ("http", "https", "ws", "wss") and \
                host not in LOCAL_HOSTS:
            r.abort()
        else:
            r.continue_()

    page.route("**/*", route)
    return w


def graph_frame(page, timeout: float = 30_000, condition: str = "true"):
    """The frame of the drawn state graph, once vis-network has drawn it and ``condition``
    (a JavaScript expression, evaluated in the frame) holds.

    Polls with ``evaluate`` (DevTools, not subject to the page's CSP): Playwright's
    ``wait_for_function`` compiles its predicate with ``eval``, which the graph page's
    Content-Security-Policy rightly forbids.
    """
    deadline = time.monotonic() + timeout / 1000.0
    expr = f"() => !!(window.g2po && window.g2po.drawn && ({condition}))"
    while True:
        for element in page.locator("iframe").element_handles():
            frame = element.content_frame()
            try:
                if frame is not None and frame.evaluate(expr):
                    return frame
            except Exception:  # the frame navigated or detached while we looked: look again
                pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no drawn graph with ({condition}) in {timeout / 1000:.0f} s")
        time.sleep(0.02)


def choose(page, label: str, option_text: str | re.Pattern | None = None,
           index: int | None = None) -> None:
    """Pick an option of the Streamlit selectbox labelled ``label``, by text (contained, or
    a pattern's match) or position."""
    page.get_by_role("combobox", name=label).first.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    target = options.filter(has_text=option_text).first if option_text else options.nth(index)
    target.click()


def canvas_ink(frame) -> int:
    """How many pixels of the graph canvas are not background: > 0 once something is drawn."""
    return frame.evaluate("""() => {
        const c = document.querySelector('#g2po-graph canvas');
        const ctx = c.getContext('2d');
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 0; i < d.length; i += 4) {
            if (d[i + 3] > 0 && (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235)) ink++;
        }
        return ink;
    }""")


def hover_node(page, frame, node_id: int) -> str:
    """Move the mouse onto a node of the graph and return the tooltip's text."""
    box = page.locator("iframe").first.bounding_box()
    pos = frame.evaluate(f"""() => {{
        const n = window.g2po.network;
        return n.canvasToDOM(n.getPositions([{node_id}])[{node_id}]);
    }}""")
    page.mouse.move(box["x"] + pos["x"], box["y"] + pos["y"])
    tip = frame.locator("div.vis-tooltip")
    tip.wait_for(state="visible", timeout=10_000)
    return tip.inner_text()


def click_row(page, grid_index: int, row: int) -> None:
    """Tick a row of a dataframe (the ``grid_index``-th of the page) by its selection box."""
    grid = page.locator("[data-testid='stDataFrame']").nth(grid_index)
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 35 * row + 17)


#: A data grid's header row and row height, in CSS pixels (Streamlit's glide-data-grid).
GRID_ROW = 35


def grid_text(grid) -> tuple[list[str], list[list[str]]]:
    """The column headers and the rows' cell texts a dataframe (``stDataFrame`` locator) shows,
    read from glide-data-grid's accessible table: the columns and rows in view only."""
    return tuple(grid.evaluate("""g => {
        const t = g.querySelector('table');
        const text = cells => [...cells].map(c => c.textContent);
        return [text(t.querySelectorAll('thead th')),
                [...t.querySelectorAll('tbody tr')].map(r => text(r.querySelectorAll('td')))];
    }"""))


def grid_with(page, header: str):
    """The (first) dataframe of the page with a column headed exactly ``header``."""
    exact = re.compile(f"^{re.escape(header)}$")
    return page.locator("[data-testid='stDataFrame']").filter(
        has=page.locator("th").filter(has_text=exact)).first


def rgb(colour: str) -> tuple[int, int, int]:
    """``#rrggbb`` or CSS's ``rgb(r, g, b)`` / ``rgba(…)`` as an (r, g, b) tuple."""
    if colour.startswith("#"):
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(int(float(v)) for v in colour[colour.index("(") + 1:-1].split(",")[:3])


def pixel(page, x: float, y: float) -> tuple[int, int, int]:
    """The colour on screen at page point (``x``, ``y``): canvases (a data grid's cells)
    included."""
    import io

    from PIL import Image

    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    return shot.getpixel((int(x), int(y)))


def near(a: tuple[int, int, int], b: tuple[int, int, int], tolerance: int = 12) -> bool:
    """Whether two colours differ by at most ``tolerance`` in every channel."""
    return max(abs(p - q) for p, q in zip(a, b, strict=True)) <= tolerance
