"""The token view's HTML: every token's text escaped (tags, closing spans, markdown, quotes,
long runs without spaces show as text), masked tokens drawn as masked, and a legend that says
what the colour means."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from app.token_view import MAX_TOKENS, legend_html, tokens_html
from g2po.analysis.tokens import Credit, colour_tokens
from tests.app.builders import XSS_ALL, token_spans, token_steps

HOSTILE = [*XSS_ALL, "</span>", "</div><b>x</b>", '" onmouseover="alert(1)', "**bold** _i_",
           ":red[x] $y$", "&lt;entity&gt;", "a" * 4000, "\n"]


def hostile_step(mask: bool = True) -> pd.DataFrame:
    n = len(HOSTILE)
    return pd.DataFrame({"traj_id": ["<img src=x>"], "t": [0], "tokens": [HOSTILE],
                         "token_logprobs": [np.linspace(-3, 0, n).tolist()],
                         "loss_mask": [[i % 4 != 1 for i in range(n)] if mask else [True] * n]})


def test_every_hostile_token_shows_as_its_own_text():
    for colouring in ("logprob", "advantage", "mask"):
        credit = Credit("<b>plugin</b>", np.array([0.7]), np.array([-1.0, 1.0]))
        colours = colour_tokens(hostile_step(), colouring, credit)
        body = tokens_html(colours) + legend_html(colours, credit.label)
        assert token_spans(tokens_html(colours)) == HOSTILE  # one span per token, text intact
        assert "<script" not in body and "<img" not in body and "<b>" not in body
        assert "onmouseover=\"" not in body and "javascript:alert" in html.unescape(body)
        assert "&lt;/span&gt;" in body and "&amp;lt;entity&amp;gt;" in body
        assert body.count("<span") == body.count("</span>")
        assert "overflow-wrap:anywhere" in body  # a 4000-character token wraps


def test_masked_tokens_are_drawn_as_masked_and_the_legend_says_what_colours_mean():
    colours = colour_tokens(hostile_step(), "logprob")
    body = tokens_html(colours)
    masked = re.findall(r'<span style="background:repeating-linear-gradient[^"]*" '
                        r'title="t=0 · masked \(not in the loss\), log-prob -[0-9.]+ left '
                        r'out of the scale">', body)
    assert len(masked) == colours.tokens["masked"].sum() == 3
    legend = html.unescape(legend_html(colours))
    assert "log-probability under the policy" in legend
    assert "masked: 3 token(s) with loss_mask False" in legend
    assert "left out of the scale whatever their values (here -2.73 to -0.55)" in legend
    assert "from -3.00 (the 2% quantile) to 0.00 nats (the highest) of the 9 unmasked" in legend


def test_the_advantage_legend_says_one_value_per_step():
    steps = token_steps()
    credit = Credit("g2po", np.array([0.8]), np.linspace(-1.5, 1.5, len(steps)))
    legend = html.unescape(legend_html(colour_tokens(steps.iloc[:1], "advantage", credit),
                                       "g2po"))
    assert "One value per step: g2po gives each step one advantage" in legend
    assert "the colours are per step, not per token" in legend
    assert "full colour at ±1.5 (the 98% quantile of |A| over the 13 steps" in legend
    split = colour_tokens(steps.iloc[:1].drop(columns="tokens"), "advantage", credit)
    assert "no token boundaries" in legend_html(split, "g2po")


def test_a_trajectory_gets_a_line_per_step_and_long_ones_are_cut():
    steps = token_steps()
    rows = steps[steps["traj_id"] == "mug-task:0"]
    colours = colour_tokens(rows, "logprob")
    body = tokens_html(colours, [f"step t={t} <x>" for t in rows["t"]], limit=30)
    assert body.count("step t=") == 1 and "&lt;x&gt;" in body  # only the first step drawn
    assert f"and {len(colours.tokens) - 30:,} more tokens, not drawn" in body
    assert MAX_TOKENS >= 10_000
