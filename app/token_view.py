"""A step's tokens coloured by its credit (or by a per-token field of the log): HTML whose every
piece of log text is escaped, a legend saying what the colour means, and a picker of the
colouring. The numbers come from :mod:`g2po.analysis.tokens`; this module only draws them.

:func:`token_panel` is the one entry: the comparison's clicked step calls it with one row,
the group explorer with a trajectory's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from app.colors import diverging_colors, text_color_for, value_colors
from app.safe import escape_html, fmt
from app.ui import show_short_error
from g2po.analysis.tokens import (
    COLOURINGS,
    Credit,
    TokenAlignmentError,
    TokenColours,
    available_colourings,
    colour_tokens,
)

__all__ = ["token_panel", "tokens_html", "legend_html", "MAX_TOKENS"]

#: Tokens drawn at most (a trajectory of long responses); the rest are counted, not drawn.
MAX_TOKENS = 20_000
#: The colour of a trained token under the loss-mask colouring.
_TRAINED = "rgb(146, 197, 222)"
#: Masked tokens: grey hatching, grey text, whatever the colouring.
_MASKED_STYLE = ("background:repeating-linear-gradient(135deg,#ececec 0 3px,#fafafa 3px 6px);"
                 "color:#8a8a8a")
_BOX = ("font-family:monospace;font-size:0.85em;line-height:1.75;white-space:pre-wrap;"
        "overflow-wrap:anywhere;border:1px solid #ddd;border-radius:4px;"
        "padding:8px 10px;max-height:440px;overflow-y:auto")
#: The sequential scale of each per-token field: white where the policy was sure, dark
#: purple where it was not (a low log-prob, a high entropy), so the text stays readable and
#: the surprising tokens stand out; purple, so no one reads it as the advantages' red.
_SEQUENTIAL = {"logprob": "Purples_r", "entropy": "Purples"}


def _backgrounds(colours: TokenColours) -> list[str | None]:
    """The background of each token: its colour on the colouring's scale, None where it has
    no value (masked tokens are styled apart)."""
    colour = colours.tokens["colour"].to_numpy(dtype=np.float64)
    kind = colours.scale.kind
    if kind == "diverging":
        rgb = diverging_colors(colour, 1.0)
    elif kind == "sequential":
        rgb = value_colors(colour, 0.0, 1.0, _SEQUENTIAL[colours.colouring.name])
    else:
        rgb = [_TRAINED] * len(colour)
    return [None if np.isnan(c) else x for c, x in zip(colour, rgb, strict=True)]


def _tip(colours: TokenColours, t: object, value: float, masked: bool, clipped: bool) -> str:
    """A token's tooltip: its step and value, in numbers and our words only."""
    label = colours.colouring.label
    if masked:
        logged = "" if np.isnan(value) or colours.colouring.scale == "mask" else \
            f", {label} {value:+.4g} left out of the scale"
        return f"t={t} · masked (not in the loss){logged}"
    if np.isnan(value):
        return f"t={t} · no {label}"
    if colours.colouring.scale == "mask":
        return f"t={t} · in the loss"
    return f"t={t} · {label} {value:+.4g}" + (" (beyond the scale: clipped)" if clipped else "")


def tokens_html(colours: TokenColours, headers: Sequence[str] | None = None,
                limit: int = MAX_TOKENS) -> str:
    """The tokens as one block of HTML: one ``<span>`` per token, its text escaped, its
    background the token's colour (masked tokens hatched grey). ``headers``: a line of our
    own words before each row's tokens (a trajectory's steps); escaped too."""
    frame = colours.tokens.iloc[:limit]
    backgrounds = _backgrounds(colours)
    out: list[str] = [f'<div style="{_BOX}">']
    last_row = -1
    for i, tok in enumerate(frame.itertuples(index=False)):
        if headers is not None and tok.row != last_row:
            gap = "" if last_row < 0 else "margin-top:8px;"
            out.append(f'<div style="{gap}font-size:0.85em;color:#555;font-family:sans-serif">'
                       f"{escape_html(headers[tok.row])}</div>")
        last_row = tok.row
        tip = escape_html(_tip(colours, tok.t, tok.value, tok.masked, tok.clipped))
        if tok.masked:
            style = _MASKED_STYLE
        elif backgrounds[i] is None:
            style = "color:#555"
        else:
            style = f"background:{backgrounds[i]};color:{text_color_for(backgrounds[i])}"
        if tok.clipped:
            style += ";outline:1px dashed #333"
        out.append(f'<span style="{style}" title="{tip}">{escape_html(tok.text)}</span>')
    if len(colours.tokens) > limit:
        out.append(f'<div style="color:#555;font-family:sans-serif">… and '
                   f"{len(colours.tokens) - limit:,} more tokens, not drawn</div>")
    out.append("</div>")
    return "".join(out)


def _gradient(colours: TokenColours) -> str:
    """A CSS gradient of the colouring's scale, from its low end to its high end."""
    if colours.scale.kind == "diverging":
        rgb = diverging_colors(np.linspace(-1.0, 1.0, 9), 1.0)
    else:
        rgb = value_colors(np.linspace(0.0, 1.0, 9), 0.0, 1.0,
                           _SEQUENTIAL[colours.colouring.name])
    return f"linear-gradient(90deg,{','.join(rgb)})"


def _swatch(style: str) -> str:
    return (f'<span style="display:inline-block;width:2.2em;height:0.9em;vertical-align:middle;'
            f'border:1px solid #bbb;{style}"></span>')


def _nats(value: float) -> str:
    """A log-prob or entropy to two decimals, never "-0.00"."""
    return f"{round(value, 2) + 0.0:.2f}"


def _scale_words(colours: TokenColours, credit: str | None) -> str:
    """What the colour means, in words (plain text, escaped by the caller)."""
    scale, name = colours.scale, colours.colouring.name
    pct = f"{scale.quantile:.0%}"
    beyond = (f"; {scale.n_clipped} value(s) beyond, drawn at full colour with a dashed "
              "outline" if scale.n_clipped else "")
    if name == "advantage":
        return (f"the step's advantage under {credit}: red below 0, white at 0, blue above; "
                f"full colour at ±{scale.hi:.3g} (the {pct} quantile of |A| over the "
                f"{scale.n_values} steps of the group{beyond}).")
    if name == "mask":
        return "blue: in the loss (trained on); hatched grey: masked."
    what = ("each token's log-probability under the policy (the log's token_logprobs): "
            "dark = unlikely, white = likely" if name == "logprob" else
            "the policy's entropy at each token (the log's token_entropy): white = sure, "
            "dark = unsure")
    low = f"the {1 - scale.quantile:.0%} quantile" if scale.tail != "high" else "the lowest"
    high = f"the {pct} quantile" if scale.tail != "low" else "the highest"
    return (f"{what}; from {_nats(scale.lo)} ({low}) to {_nats(scale.hi)} nats ({high}) of "
            f"the {scale.n_values} unmasked tokens shown{beyond}.")


def legend_html(colours: TokenColours, credit: str | None = None) -> str:
    """The legend: the scale's colours between its end values, what they mean, the masked
    tokens' look, and what the colours are per (step or token). All text escaped."""
    scale, kind = colours.scale, colours.scale.kind
    lines = []
    if kind == "mask":
        bar = _swatch(f"background:{_TRAINED}") + " in the loss"
    else:
        lo, hi = (f"{v:+.3g}" if kind == "diverging" else _nats(v) for v in (scale.lo, scale.hi))
        bar = f"{lo} {_swatch('background:' + _gradient(colours) + ';width:9em')} {hi}"
    lines.append(f"{bar} — {escape_html(_scale_words(colours, credit))}")
    masked = colours.tokens["masked"].to_numpy(dtype=bool)
    if masked.any():
        logged = colours.tokens["value"].to_numpy(dtype=np.float64)[masked]
        logged = logged[np.isfinite(logged)]
        values = (f" (here {_nats(logged.min())} to {_nats(logged.max())})"
                  if len(logged) and kind == "sequential" else "")
        lines.append(f"{_swatch(_MASKED_STYLE)} masked: {int(masked.sum()):,} token(s) with "
                     "loss_mask False (not in the loss, e.g. a tool's output), left out of "
                     f"the scale whatever their values{escape_html(values)}.")
    if colours.colouring.name == "advantage":
        lines.append(escape_html(
            f"One value per step: {credit} gives each step one advantage, and training "
            "applies it to every token of the step's response (masked tokens get none), so "
            "every token of a step has the same colour; the colours are per step, not per "
            "token."))
    if colours.source == "split":
        lines.append("The log holds no token boundaries: the text is split into words, spaces "
                     "and punctuation for display only.")
    elif colours.source == "token_ids":
        lines.append("The log holds token ids, not their text (a batch dump; no tokenizer is "
                     "read): each token is shown as its id.")
    return ('<div style="font-size:0.8em;color:#444;line-height:1.6;margin:4px 0 8px">'
            + "<br>".join(lines) + "</div>")


def _step_headers(rows: pd.DataFrame, credit: Credit | None) -> list[str] | None:
    """A line before each step's tokens when several steps are shown."""
    if len(rows) < 2:
        return None
    ts = rows["t"].tolist() if "t" in rows.columns else list(range(len(rows)))
    if credit is None:
        return [f"step t={t}" for t in ts]
    return [f"step t={t} · A = {a:+.3g}" for t, a in zip(ts, credit.values, strict=True)]


def token_panel(rows: pd.DataFrame, credits: Sequence[Credit], key: str) -> None:
    """The tokens of ``rows`` (one step, or a trajectory's steps in order of ``t``) coloured by
    the colouring the user picks: the advantage of one of ``credits`` (each with one value
    per row, its scale over the group), or a per-token field the rows hold (log-prob,
    entropy, loss mask). ``key`` prefixes the widgets' keys (one panel per key on a page)."""
    names = available_colourings(rows, bool(credits))
    if not names:
        st.caption("No colouring: no advantage given and no per-token field in the log.")
        return
    left, right = st.columns([3, 2])
    pick = left.radio("Colour the tokens by", names, horizontal=True, key=f"{key}:by",
                      format_func=lambda n: fmt("{}", COLOURINGS[n].label),
                      help="The advantage is one value per step; log-prob, entropy and the "
                           "loss mask are per token, where the log records them.")
    credit = None
    if pick == "advantage":
        labels = [c.label for c in credits]
        chosen = right.selectbox("Advantage of", range(len(credits)), key=f"{key}:credit",
                                 format_func=lambda i: fmt("{}", labels[i]),
                                 disabled=len(credits) == 1)
        credit = credits[chosen if chosen is not None else 0]
    try:
        colours = colour_tokens(rows, pick, credit)
    except TokenAlignmentError as err:
        show_short_error("The tokens cannot be coloured", err)
        return
    label = credit.label if credit is not None else None
    st.html(legend_html(colours, label) + tokens_html(colours, _step_headers(rows, credit)))
