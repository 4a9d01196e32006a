"""Logs for the app's tests: run directories written with the real ``loaders.RunWriter``,
hostile text for the escaping tests, and an AppTest factory for the app's pages."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from g2po.synthetic import synthetic_steps
from loaders import RunWriter

#: Untrusted text that must show as text and never run, in every view.
XSS_SCRIPT = "<script>window.__xss=1;alert('xss-script')</script>"
XSS_IMG = "<img src=x onerror=\"window.__xss=2;alert('xss-img')\">"
XSS_LINK = "<a href=\"javascript:alert('xss-link')\">click me</a>"
XSS_MD = "[click](javascript:alert('xss-md')) **bold** $x^2$"
XSS_ALL = (XSS_SCRIPT, XSS_IMG, XSS_LINK, XSS_MD)
#: Texts that Streamlit's markdown would turn into elements or requests, each with a marker
#: word (``…inj``) an element would hold alone; and an ordinary name that must stay as it is.
MARKDOWN_CASES = (
    "**boldinj** *eminj* _em2inj_ ~delinj~ ~~del2inj~~ `codeinj`",
    ":red[redinj] :blue-background[bluinj] :material/home: :smile: :+1: :100:",
    "![imginj](https://evil.example/i.png) [linkinj](https://evil.example) [refinj][r]",
    "https://evil.example/autoinj www.evil.example me@evil.example <https://evil.example>",
    "<b>taginj</b> <img src=x onerror=window.__xss=9> &lt;entinj&gt; $x^2$ $$y$$",
    "# headinj",
    "- listinj",
    "1. olinj",
    "> quoteinj",
    "    codeblockinj",
    "---",
    "group_id (2): 0.8 · run_a · 12:30:45",
)


def group_steps(seed: int = 0, rows: int = 600, **kwargs) -> pd.DataFrame:
    """A synthetic step table of a few groups with an observation column."""
    steps = synthetic_steps(rows, rollouts=kwargs.pop("rollouts", 6),
                            max_len=kwargs.pop("max_len", 20),
                            states_per_task=kwargs.pop("states_per_task", 12),
                            key_chars=kwargs.pop("key_chars", 60), seed=seed, **kwargs)
    return steps.assign(observation=steps["state_key"] + "\nYou see a door.")


def hostile(steps: pd.DataFrame) -> pd.DataFrame:
    """Put the XSS payloads into group ids, trajectory ids, state keys, observations and
    actions (keys keep their suffix, so the graph still merges states)."""
    steps = steps.copy()
    n = len(steps)
    payloads = np.array(XSS_ALL, dtype=object)[np.arange(n) % len(XSS_ALL)]
    steps["state_key"] = payloads + " " + steps["state_key"].astype(str)
    steps["observation"] = steps["state_key"] + "\n" + XSS_LINK
    steps["action"] = np.where(np.arange(n) % 3 == 0, XSS_IMG, steps["action"].astype(str))
    first = steps["group_id"].astype(str) == steps["group_id"].astype(str).iloc[0]
    steps.loc[first, "group_id"] = XSS_SCRIPT
    steps["traj_id"] = steps["traj_id"].astype(str).where(steps["traj_id"].astype(str) != "r1",
                                                           XSS_IMG)
    return steps


def write_run(path: Path, train_steps: int = 3, *, seed: int = 0, hostile_text: bool = False,
              rows: int = 600, **kwargs) -> Path:
    """A run directory with ``train_steps`` training steps of synthetic groups."""
    writer = RunWriter(path, {"env": "synthetic", "model": "test",
                              "config": {"success_reward": 10.0}})
    for step in range(1, train_steps + 1):
        steps = group_steps(seed=seed + step, rows=rows, **kwargs)
        if hostile_text:
            steps = hostile(steps)
        writer.write_step(step, steps)
    return path


def entry(page: str, argv: list[str]) -> None:  # pragma: no cover - runs inside AppTest
    from app.shell import run

    run(argv=argv, start_page=page)


def goto(at: AppTest, page: str) -> AppTest:
    """Show ``page`` (a key of :data:`app.shell.PAGES`) in the same session, as a click in
    the navigation does, and run. ``AppTest.switch_page`` takes page files only, and the
    app's pages are functions: the page is found in what ``st.navigation`` registered."""
    from app.shell import PAGES

    title = PAGES[page][1]  # the first page of that title: the start page's twin comes last
    page_hash = next(h for h, info in at._registered_pages.items()
                     if info.get("page_name") == title)
    at._page_hash = page_hash
    return at.run()


def app_test(page: str, argv: list[str], timeout: float = 60) -> AppTest:
    """An AppTest of the app opened on ``page`` with command-line ``argv``; already run."""
    at = AppTest.from_function(entry, kwargs={"page": page, "argv": list(argv)},
                               default_timeout=timeout)
    return at.run()


def shown(markdown: str) -> str:
    """The text a label or message made by ``app.safe.fmt`` shows: its escapes undone, its
    invisible joiners gone."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def texts(at: AppTest) -> str:
    """Every markdown, caption, code, error, warning and info text of the app, joined."""
    parts = []
    for kind in ("markdown", "caption", "code", "error", "warning", "info", "title",
                 "subheader"):
        parts.extend(str(e.value) for e in getattr(at, kind))
    return "\n".join(parts)


def write_cut_csv(path: Path) -> Path:
    """One group without ``done``: three failures run to the step limit of 6, two episodes
    (a success, a failure) end sooner."""
    rows = []
    for i, (length, reward) in enumerate([(6, 0.0), (6, 0.0), (6, 0.0), (3, 10.0), (2, 0.0)]):
        for t in range(length):
            rows.append({"group_id": "g", "traj_id": f"r{i}", "t": t,
                         "state_key": f"room {min(t, 3)}", "action": "go" if t % 2 else "look",
                         "episode_reward": reward, "is_action_valid": True})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path
