"""Logs for the app's tests: run directories written with the real ``loaders.RunWriter``,
hostile text for the escaping tests, and an AppTest factory for the app's pages."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from g2po.estimators import compute_advantages
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


#: One ALFWorld-like task for the token view: each rollout's steps as (observation, thought,
#: action); rollout 0 and 2 succeed.
_TOKEN_TASK = "Your task is to: put a clean mug in the coffee machine."
_TOKEN_PLANS = (
    [("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
      "countertop 1, a coffeemachine 1, a sinkbasin 1 and a shelf 1.",
      "I need a clean mug. Mugs are usually kept in a cabinet, so I will look there first.",
      "go to cabinet 1"),
     ("You arrive at cabinet 1. The cabinet 1 is closed.",
      "The cabinet is closed. I should open it to see whether the mug is inside.",
      "open cabinet 1"),
     ("You open the cabinet 1. The cabinet 1 is open. In it, you see a mug 1.",
      "There is the mug. I will take it, then clean it at the sink before using it.",
      "take mug 1 from cabinet 1"),
     ("You pick up the mug 1 from the cabinet 1.",
      "Now I hold the mug. It has to be clean, so the sinkbasin comes next.",
      "clean mug 1 with sinkbasin 1")],
    [("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
      "countertop 1, a coffeemachine 1, a sinkbasin 1 and a shelf 1.",
      "Maybe a mug was left on the countertop; people often leave cups there after using "
      "the coffee machine. Checking it costs one step, and the cabinet can come next.",
      "go to countertop 1"),
     ("You arrive at countertop 1. On the countertop 1, you see a knife 1.",
      "No mug here, only a knife. A drawer might hold cups, so let me try one.",
      "open drawer 1"),
     ("Nothing happens.", "That did nothing; there may be no drawer here. I am not sure "
      "what to do, so I will look around again.", "look")],
    [("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
      "countertop 1, a coffeemachine 1, a sinkbasin 1 and a shelf 1.",
      "I need a clean mug. Mugs are usually kept in a cabinet, so I will look there first.",
      "go to cabinet 1"),
     ("You arrive at cabinet 1. The cabinet 1 is closed.",
      "It is closed; opening it should show what is inside.", "open cabinet 1"),
     ("You open the cabinet 1. The cabinet 1 is open. In it, you see a mug 1.",
      "The mug is here. Take it and clean it.", "take mug 1 from cabinet 1")],
    [("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
      "countertop 1, a coffeemachine 1, a sinkbasin 1 and a shelf 1.",
      "Let me check the shelf first; mugs are sometimes stored there.", "go to shelf 1"),
     ("You arrive at shelf 1. On the shelf 1, you see nothing.",
      "The shelf is empty. I will try the other cabinet instead.", "go to cabinet 2"),
     ("Nothing happens.", "There is no cabinet 2. I will open the one I know.",
      "open cabinet 1")],
)


def _pieces(text: str) -> list[str]:
    """``text`` cut like a BPE tokenizer would, roughly: words with their leading space, long
    words in pieces of four characters, punctuation alone."""
    out = []
    for word in re.findall(r" ?\w+| ?[^\w\s]+|\s+", text):
        while len(word) > 6:
            out.append(word[:4])
            word = word[4:]
        out.append(word)
    return out


def token_steps(seed: int = 0, fake_gap: float = -45.0) -> pd.DataFrame:
    """A step table of one group whose responses carry per-token fields as a verl batch dump
    does (read through ``tokens``, ``token_logprobs``, ``token_entropy``, ``loss_mask``):
    each response is a thought, an action, then the environment's reply inside the response
    (a multi-turn agent loop's tool output): masked, its log-probs a fake gap of about
    ``fake_gap`` nats (miles #2476). The policy's own tokens are mostly near 0, a few
    uncertain ones far lower (an action's object number). Rewards: 10 on rollouts 0 and 2."""
    rng = np.random.default_rng(seed)
    rows = []
    for r, plan in enumerate(_TOKEN_PLANS):
        for t, (obs, thought, action) in enumerate(plan):
            said = _pieces(f"<think>{thought}</think><action>{action}</action>")
            after = plan[t + 1][0] if t + 1 < len(plan) else "You win."
            reply = _pieces(f"\nObservation: {after}")
            logp = -rng.gamma(0.45, 0.9, len(said))
            unsure = np.flatnonzero([p.strip().isdigit() for p in said])
            logp[unsure] = -rng.uniform(1.5, 4.0, len(unsure))
            ent = np.clip(-logp * 0.8 + rng.normal(0, 0.1, len(said)), 0.01, None)
            rows.append({
                "group_id": "mug-task", "traj_id": f"mug-task:{r}", "t": t,
                "state_key": obs, "observation": f"{_TOKEN_TASK}\n{obs}", "action": action,
                "response": "".join(said + reply),
                "episode_reward": 10.0 if r in (0, 2) else 0.0, "is_action_valid": True,
                "tokens": said + reply,
                "token_logprobs": np.r_[logp, fake_gap + rng.normal(0, 6, len(reply))].tolist(),
                "token_entropy": np.r_[ent, rng.uniform(0, 0.2, len(reply))].tolist(),
                "loss_mask": [True] * len(said) + [False] * len(reply),
            })
    return pd.DataFrame(rows)


def write_token_table(path: Path, **kwargs) -> Path:
    """:func:`token_steps` as a JSON-lines table (lists as JSON arrays)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token_steps(**kwargs).to_json(path, orient="records", lines=True)
    return path


def token_spans(body: str) -> list[str]:
    """The text of each token ``<span>`` in the token view's HTML, unescaped."""
    import html

    return [html.unescape(t) for t in re.findall(r'<span style="[^"]*" title="[^"]*">(.*?)'
                                                 r"</span>", body, flags=re.S)]


def write_recorded_table(path: Path) -> Path:
    """The token table (responses with per-token fields) with the advantage its trainer
    recorded: G2PO's own, but 0 on the first step of rollout 1 (where G2PO's is not), and
    none on rollout 3's three steps."""
    steps = token_steps()
    steps["advantage"] = compute_advantages(steps, "g2po")["adv"].to_numpy()
    first = (steps["traj_id"] == "mug-task:1") & (steps["t"] == 0)
    assert abs(float(steps.loc[first, "advantage"].iloc[0])) > 0.1
    steps.loc[first, "advantage"] = 0.0
    steps.loc[steps["traj_id"] == "mug-task:3", "advantage"] = np.nan
    path.parent.mkdir(parents=True, exist_ok=True)
    steps.to_json(path, orient="records", lines=True)
    return path
