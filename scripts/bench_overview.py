"""Benchmark: a verl dump's Run overview (state-merge rate included) and Groups page (the groups
table of the whole run), the first time and after the app is started again.

Dumps as ``scripts/bench_verl_dump.py`` writes them (verl 0.9.1's agent-loop shape, ~2.3 kB a
line): ``small`` 40 training steps x 16 tasks x 8 rollouts x up to 30 turns (~141 k lines),
``large`` 172 x 16 x 8 x up to 50 (~1 M lines). For each, with an empty cache folder
(``$G2PO_CACHE``) and then with the caches the first measurement left, each in a fresh
process (a restarted app: only the caches on disk remain):

- ``overview``: what the Run overview reads: open the dump, ``log.summary()``,
  ``log.merge_rates()`` (the exact state key, the page's default), ``log.metrics()`` and the
  truncation hint (targets: small <= 3 s after a restart; large <= 5 s the first time, <= 1 s
  later);
- ``groups``: the groups table of every training step (:func:`g2po.analysis.triage.triage_log`,
  what the Groups page shows for "every training step"; same targets).

Imports are done first and not counted (a served app has done them before a page is asked
for). Wall time, CPU seconds of the process and of its worker processes, and the load average are
printed: on a shared machine the CPU figures are the ones to compare. With ``--browser``, the
same in the app served by ``streamlit run`` and Debian's Chromium: seconds from requesting
``/overview`` to the merge-rate chart drawn, and from ``/groups?gscope=all`` to the table
shown, on a fresh server with empty caches, then on another fresh server (the restart); and
the floor under those figures: the same for a page of text and for the overview's six charts
alone (:data:`FLOOR_PAGES`), what Streamlit's front end and plotly cost in this browser.

Usage: ``python scripts/bench_overview.py [--small-dir DIR] [--large-dir DIR] [--only small]
[--browser] [--repeats N] [--keep]`` (a ``--*-dir`` that holds no dump gets one written there;
without one, a temporary dump is written and removed unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

#: name -> (training steps, tasks, rollouts, most turns) of the generated dumps
SIZES = {"small": (40, 16, 8, 30), "large": (172, 16, 8, 50)}
TARGETS = {("small", "first"): None, ("small", "restart"): 3.0,
           ("large", "first"): 5.0, ("large", "restart"): 1.0}


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def measure(kind: str, path: Path) -> dict:
    """Runs in a fresh process: one page's data, timed."""
    start = time.perf_counter()
    import loaders  # a served app has its imports done before a page is asked for
    from g2po.analysis.triage import triage_log

    imports = time.perf_counter() - start
    load = os.getloadavg()[0]
    cpu0, start = _cpu(), time.perf_counter()
    log = loaders.open_log(path)
    if kind == "overview":
        summary = log.summary()
        rates = log.merge_rates("exact")
        log.metrics()
        log.truncation_hint()
        out = {"rows": int(summary["n_steps"].sum()),
               "merge_rate_mean": float(rates["merge_rate"].mean())}
    else:
        table = triage_log(log)
        out = {"rows": int(table["steps"].sum()), "groups": len(table)}
    cpu1 = _cpu()
    out.update(wall_s=time.perf_counter() - start, cpu_s=cpu1[0] - cpu0[0],
               workers_cpu_s=cpu1[1] - cpu0[1], load=load, import_s=imports)
    return out


def _fresh(kind: str, path: Path, env: dict) -> dict:
    result = subprocess.run([sys.executable, __file__, "--measure", kind, str(path)],
                            check=True, capture_output=True, text=True, env=env)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _dump(name: str, folder: Path | None, keep: list[Path]) -> Path:
    import bench_verl_dump

    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix=f"g2po-bench-{name}-"))
        keep.append(folder)
    if not any(folder.glob("*.jsonl")):
        start = time.perf_counter()
        lines, size = bench_verl_dump.generate_dump(folder, *SIZES[name],
                                                    workers=max(1, min(4, os.cpu_count() or 1)))
        print(f"{name}: wrote {lines:,} lines, {size / 1e9:.2f} GB in "
              f"{time.perf_counter() - start:.0f} s")
    return folder


def _line(name: str, kind: str, when: str, m: dict) -> str:
    target = TARGETS[(name, when)]
    goal = f"target <= {target:g} s" if target else "no target"
    return (f"  {kind:<9}{when:<8}{m['wall_s']:>7.2f} s wall  CPU {m['cpu_s']:.2f} s + workers "
            f"{m['workers_cpu_s']:.2f} s  load {m['load']:.1f}  ({goal}; "
            f"{m['rows']:,} rows; imports before it {m['import_s']:.1f} s)")


#: Pages that show what this browser and machine cost before the app does anything: a page
#: of text (Streamlit's front end and one script run) and the Run overview's six plotly
#: charts alone (40 training steps of made-up values, the overview's layout, nothing else).
FLOOR_PAGES = {
    "text page": ("import streamlit as st\n"
                  "st.title('Run overview')\n"
                  "st.write('State-merge rate')\n", "text=State-merge rate"),
    "6 charts alone": (f"""import sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np, pandas as pd, streamlit as st
from app.charts import OVERVIEW_METRICS, history_figure, overview_figure
summary = pd.DataFrame({{"run": "run", "train_step": np.arange(1, 41),
                         **{{m: np.linspace(0, 1, 40) for m in OVERVIEW_METRICS}}}})
st.title("Run overview")
cols = st.columns(2)
for i, (metric, title) in enumerate(OVERVIEW_METRICS.items()):
    with cols[i % 2]:
        st.plotly_chart(overview_figure(summary, metric, title), key=f"ov_{{metric}}",
                        on_select="rerun", selection_mode="points")
st.plotly_chart(history_figure(summary, {{"success_rate": "a share"}}, "Shares",
                               y_title="share", percent=True))
""", "text.gtitle:has-text('State-merge rate')"),
}


def floor_times() -> dict[str, float]:
    """Seconds from URL to drawn of each of :data:`FLOOR_PAGES`, each on a fresh server."""
    from tests.app.browser import chromium, serve_app

    out = {}
    with tempfile.TemporaryDirectory() as folder, chromium() as browser:
        for name, (source, ready) in FLOOR_PAGES.items():
            script = Path(folder) / f"{name.replace(' ', '_')}.py"
            script.write_text(source)
            with serve_app([], timeout=120, script=script) as url:
                out[name] = _url_to_drawn(browser, url, ready, 120)
    return out


def _url_to_drawn(browser, url: str, ready: str, timeout_s: float) -> float:
    """Seconds from asking a new page for ``url`` to the element ``ready`` shown."""
    page = browser.new_page(viewport={"width": 1600, "height": 1100})
    start = time.perf_counter()
    page.goto(url)
    page.locator(ready).first.wait_for(timeout=timeout_s * 1000)
    seconds = time.perf_counter() - start
    page.close()
    return seconds


def browser_times(dump: Path, cache: Path) -> dict[str, float]:
    """Seconds from a page's URL to its content drawn, on a fresh server (caches as found)."""
    from tests.app.browser import chromium, serve_app

    os.environ["G2PO_CACHE"] = str(cache)
    out = {}
    with chromium() as browser:
        for page_name, url_tail, ready in (
                ("overview", "/overview", "text.gtitle:has-text('State-merge rate')"),
                ("groups", "/groups?gscope=all", "text=/\\d+ training steps/")):
            with serve_app(["--log", str(dump)], timeout=120) as url:
                out[page_name] = _url_to_drawn(browser, url + url_tail, ready, 600)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-dir", type=Path)
    parser.add_argument("--large-dir", type=Path)
    parser.add_argument("--only", choices=list(SIZES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the dumps written")
    parser.add_argument("--browser", action="store_true",
                        help="also time the pages in Chromium on a served app")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return 0

    made: list[Path] = []
    cache = Path(tempfile.mkdtemp(prefix="g2po-bench-cache-"))
    env = {**os.environ, "G2PO_CACHE": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    print(f"{os.cpu_count()} CPUs")
    try:
        for name in [args.only] if args.only else list(SIZES):
            dump = _dump(name, getattr(args, f"{name}_dir"), made)
            for run in range(args.repeats):
                print(f"{name} ({dump}), run {run + 1}:")
                shutil.rmtree(cache, ignore_errors=True)
                for kind in ("overview", "groups"):
                    print(_line(name, kind, "first", _fresh(kind, dump, env)))
                    print(_line(name, kind, "restart", _fresh(kind, dump, env)))
                if args.browser:
                    shutil.rmtree(cache, ignore_errors=True)
                    first = browser_times(dump, cache)
                    again = browser_times(dump, cache)
                    for page_name in first:
                        print(f"  browser {page_name:<9} first {first[page_name]:6.2f} s, after "
                              f"a restart {again[page_name]:6.2f} s (URL to drawn)")
                    floors = floor_times()
                    print("  browser floor, URL to drawn on a fresh server: " + ", ".join(
                        f"{name} {seconds:.2f} s" for name, seconds in floors.items()))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        for folder in made:
            if args.keep:
                print(f"dump kept at {folder}")
            else:
                shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
