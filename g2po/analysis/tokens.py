"""A step's response as tokens, each with the value it is coloured by, on a scale that masked
tokens and outliers do not flatten.

Colourings (:data:`COLOURINGS`): the step's advantage, and where the log has them
(:data:`g2po.steps.TOKEN_COLUMNS`) each token's log-prob, entropy or loss mask. An advantage
is one value per step: G2PO, GiGPO and every estimator here give each step one advantage,
which the trainer applies to every token of the step's response (masked tokens get none), so
every token of a step has the same advantage colour.

Tokens: the log's own (``tokens``; else ``token_ids``, shown as ids: a batch dump holds no
token text, and no tokenizer is read). Without token boundaries, the response (else the
action) is split for display into words, runs of whitespace and single punctuation marks
(:func:`display_tokens`): the colours are then per step, and per-token values cannot be placed
(:class:`TokenAlignmentError`).

Scales (:class:`Scale`) are computed from the values of tokens that are not masked
(``loss_mask`` False: outside the loss, such as a tool's output inside a multi-turn response,
whose log-probs can be fake gaps of tens of nats) and are finite. Advantages: diverging,
centred on 0, full colour at ± the :data:`CLIP_QUANTILE` quantile of |A| over the steps the
scale spans (a group's, so one colour means one value across its steps). Log-probs and
entropies: sequential, clipped at the end where outliers lie: a log-prob's (1 − q) quantile
(its top end is the largest, at most 0), an entropy's q quantile. A quantile is taken as one of the
values (the next one out: numpy's ``higher`` / ``lower`` methods), so fewer than 1 / (1 − q)
= 50 values are never clipped. Values beyond are clipped: drawn at the end colour, flagged and
counted, so a few outliers cannot wash out the rest.

>>> display_tokens("go to room_3, now!")
['go', ' ', 'to', ' ', 'room_3', ',', ' ', 'now', '!']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from g2po.errors import G2POError
from g2po.steps import is_list_cell

__all__ = ["Colouring", "COLOURINGS", "Credit", "Scale", "TokenColours",
           "TokenAlignmentError", "CLIP_QUANTILE", "TOKEN_FRAME_COLUMNS", "display_tokens",
           "step_tokens", "has_boundaries", "available_colourings", "colour_tokens",
           "diverging_scale", "sequential_scale"]

#: The quantile a scale is clipped at: 2 % of values at each end may lie beyond it.
CLIP_QUANTILE = 0.98
#: One row per token of :attr:`TokenColours.tokens`.
TOKEN_FRAME_COLUMNS = ["row", "t", "text", "value", "colour", "masked", "clipped"]

ScaleKind = Literal["diverging", "sequential", "mask"]
Tail = Literal["low", "high", "both"]


class TokenAlignmentError(G2POError, ValueError):
    """Per-token values that cannot be placed on a step's tokens (another number of them, or
    no token boundaries in the log)."""


@dataclass(frozen=True)
class Colouring:
    """One way to colour tokens: ``name`` (the picker's), ``label`` (words), ``column`` (the
    per-token step column; None for the step's advantage), the kind of ``scale``, and its
    ``tail``: the end a sequential scale is clipped at (``low``, ``high`` or ``both``), the
    one where outliers lie (a log-prob has no outliers above 0, an entropy none below)."""

    name: str
    label: str
    column: str | None
    scale: ScaleKind
    tail: Tail = "both"


#: Every colouring, in the order a picker offers them.
COLOURINGS: dict[str, Colouring] = {c.name: c for c in (
    Colouring("advantage", "advantage", None, "diverging"),
    Colouring("logprob", "log-prob", "token_logprobs", "sequential", "low"),
    Colouring("entropy", "entropy", "token_entropy", "sequential", "high"),
    Colouring("mask", "loss mask", "loss_mask", "mask"),
)}


@dataclass(frozen=True)
class Credit:
    """An advantage to colour steps by: ``label`` (whose: "g2po", "recorded"), ``values``
    (n_rows,) float64 the advantage of each step shown, ``scale_values`` (m,) float64 the
    values its scale spans (a group's steps; None: ``values``)."""

    label: str
    values: np.ndarray
    scale_values: np.ndarray | None = None


@dataclass(frozen=True)
class Scale:
    """The scale of one colouring: its ``kind``; ``lo`` and ``hi`` the values drawn at the end
    colours (diverging: −limit and +limit); ``quantile`` it was clipped at; ``n_values`` the
    values it was computed from, ``n_clipped`` of them beyond ``lo``/``hi``, ``n_left_out``
    left out (masked or not finite); ``tail``: the end(s) clipped at the quantile (the
    other end of a sequential scale is the extreme value)."""

    kind: ScaleKind
    lo: float
    hi: float
    quantile: float
    n_values: int
    n_clipped: int
    n_left_out: int = 0
    tail: Tail = "both"


@dataclass(frozen=True)
class TokenColours:
    """The coloured tokens of one or more steps. ``tokens``: one row per token
    (:data:`TOKEN_FRAME_COLUMNS`): ``row`` (the step's position among the rows given), ``t``,
    ``text``, ``value`` (the log's value of a per-token field, masked tokens' too; the
    step's advantage, none on masked tokens; NaN: none), ``colour`` (diverging −1 … 1,
    sequential 0 … 1, mask 1; NaN where masked or without a value), ``masked``,
    ``clipped``. ``source``: where the boundaries came from (``tokens``, ``token_ids``, or
    ``split`` from the text); ``per_token``: whether colours can vary inside a step."""

    tokens: pd.DataFrame
    colouring: Colouring
    scale: Scale
    source: str
    per_token: bool


_DISPLAY_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def display_tokens(text: str) -> list[str]:
    """``text`` split for display: words, runs of whitespace, single other characters; their
    concatenation is ``text``. For logs without token boundaries."""
    return _DISPLAY_TOKEN.findall(text)


def has_boundaries(rows: pd.DataFrame) -> bool:
    """Whether the log gives the token boundaries of these rows (``tokens`` or
    ``token_ids`` holding a list on every row)."""
    return any(c in rows.columns and rows[c].map(is_list_cell).all()
               for c in ("tokens", "token_ids"))


def step_tokens(step: Mapping) -> tuple[list[str], str]:
    """The display tokens of one step row and where their boundaries came from: the log's
    ``tokens``; its ``token_ids`` (as ids); else the response (or the action) split by
    :func:`display_tokens` (``split``)."""
    tokens = step.get("tokens")
    if is_list_cell(tokens):
        return [str(x) for x in tokens], "tokens"
    ids = step.get("token_ids")
    if is_list_cell(ids):
        return [f"{int(i)} " for i in ids], "token_ids"
    response = step.get("response")
    text = response if isinstance(response, str) else str(step.get("action", ""))
    return display_tokens(text), "split"


def available_colourings(rows: pd.DataFrame, credit: bool = True) -> list[str]:
    """The colourings ``rows`` support: the advantage when a credit is given, and each
    per-token one whose column holds a list on some row, where the log gives the token
    boundaries."""
    names = ["advantage"] if credit else []
    if has_boundaries(rows):
        names += [n for n, c in COLOURINGS.items() if c.column in rows.columns
                  and rows[c.column].map(is_list_cell).any()]
    return names


def diverging_scale(values: np.ndarray, quantile: float = CLIP_QUANTILE) -> Scale:
    """A scale centred on 0 for ``values`` (n,) float64: ± the ``quantile`` of their absolute
    finite values (module docs; the largest when that is 0; 1 when there is none).

    >>> s = diverging_scale(np.r_[np.linspace(-1, 1, 99), 40.0])
    >>> round(s.hi, 2), s.n_clipped
    (1.0, 1)
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.abs(values[np.isfinite(values)])
    limit = float(np.quantile(finite, quantile, method="higher")) if finite.size else 1.0
    if limit <= 0:
        limit = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    return Scale("diverging", -limit, limit, quantile, int(finite.size),
                 int((finite > limit).sum()), int(values.size - finite.size))


def sequential_scale(values: np.ndarray, quantile: float = CLIP_QUANTILE,
                     tail: Tail = "both") -> Scale:
    """A scale from the (1 − ``quantile``) to the ``quantile`` quantile of the finite
    ``values`` (n,) float64 (module docs); only at the ``low`` or ``high`` end with ``tail``
    (the other end is the extreme value).

    >>> s = sequential_scale(np.r_[np.linspace(-2, 0, 99), -50.0])
    >>> round(s.lo, 2), round(s.hi, 2), s.n_clipped
    (-2.0, -0.02, 2)
    """
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if not finite.size:
        return Scale("sequential", 0.0, 1.0, quantile, 0, 0, int(values.size), tail)
    lo = float(np.quantile(finite, 1.0 - quantile, method="lower")) if tail != "high" \
        else float(finite.min())
    hi = float(np.quantile(finite, quantile, method="higher")) if tail != "low" \
        else float(finite.max())
    clipped = int(((finite < lo) | (finite > hi)).sum())
    return Scale("sequential", lo, hi, quantile, int(finite.size), clipped,
                 int(values.size - finite.size), tail)


def _positions(values: np.ndarray, scale: Scale) -> tuple[np.ndarray, np.ndarray]:
    """(n,) colour values of ``values`` on ``scale`` (NaN where not finite) and (n,) bool
    whether each lies beyond its ends."""
    with np.errstate(invalid="ignore"):
        clipped = np.isfinite(values) & ((values < scale.lo) | (values > scale.hi))
        if scale.kind == "diverging":
            colour = values / scale.hi
            low = -1.0
        else:
            span = scale.hi - scale.lo
            colour = (values - scale.lo) / span if span > 0 else np.where(
                np.isfinite(values), 0.5, np.nan)
            low = 0.0
        clipped |= np.isinf(values)
        colour = np.where(np.isnan(values), np.nan, np.clip(colour, low, 1.0))
    return colour, clipped


def _per_token(values: object, n: int, column: str, where: str) -> np.ndarray:
    """(n,) float64 per-token values of one step (NaN when the step has none), checked
    against its ``n`` tokens."""
    if not is_list_cell(values):
        return np.full(n, np.nan)
    array = np.asarray(values, dtype=np.float64)
    if len(array) != n:
        raise TokenAlignmentError(f"{where}: {column!r} holds {len(array)} values for the "
                                  f"step's {n} tokens: they cannot be lined up")
    return array


def _where(step: Mapping) -> str:
    return f"step t={step.get('t')} of {step.get('traj_id')}"


def colour_tokens(rows: pd.DataFrame, colouring: str, credit: Credit | None = None,
                  quantile: float = CLIP_QUANTILE) -> TokenColours:
    """The tokens of ``rows`` (one step, or a trajectory's steps in order) with the values of
    ``colouring`` (a name of :data:`COLOURINGS`) on their scale (module docs).

    ``credit`` gives the advantage of each row (needed for ``advantage``). Tokens with
    ``loss_mask`` False are masked: no colour, left out of the scale, and no advantage (the
    trainer gives them none); their logged per-token values are kept.

    Raises
    ------
    TokenAlignmentError
        A per-token column whose list on a step has another length than the step's tokens,
        or per-token values asked for on rows without token boundaries.
    KeyError
        An unknown colouring name.
    ValueError
        ``advantage`` without a ``credit``, or one whose values do not match the rows.

    Examples
    --------
    >>> rows = pd.DataFrame({"t": [0], "traj_id": ["a"], "response": ["go north"]})
    >>> out = colour_tokens(rows, "advantage", Credit("g2po", np.array([0.5]),
    ...                                                   np.array([-1.0, 0.5, 1.0])))
    >>> out.tokens[["text", "colour"]].values.tolist(), out.per_token, out.source
    ([['go', 0.5], [' ', 0.5], ['north', 0.5]], False, 'split')
    """
    spec = COLOURINGS[colouring]
    records = rows.to_dict("records")
    split = [step_tokens(r) for r in records]
    sources = {s for _, s in split}
    source = sources.pop() if len(sources) == 1 else "split"
    for step, (_, own) in zip(records, split, strict=True):
        if spec.column is not None and own == "split" and is_list_cell(step.get(spec.column)):
            raise TokenAlignmentError(
                f"{_where(step)}: the log holds no token boundaries (tokens or token_ids) "
                f"for this step, so its {spec.column!r} values cannot be placed on the text")
    if spec.column is None and (credit is None or len(credit.values) != len(rows)):
        raise ValueError("colouring by advantage needs a credit with one value per row")
    parts = {name: [] for name in ("row", "value", "masked")}
    texts: list[str] = []
    for i, (step, (tokens, own)) in enumerate(zip(records, split, strict=True)):
        n = len(tokens)
        texts += tokens
        parts["row"].append(np.full(n, i, dtype=np.int64))
        mask = _per_token(step.get("loss_mask"), n, "loss_mask", _where(step)) \
            if own != "split" else np.ones(n)
        masked = ~np.isnan(mask) & (mask == 0)
        if spec.column is None:
            value = np.full(n, float(credit.values[i]))
        elif own == "split":
            value = np.full(n, np.nan)  # nothing of this kind on this step
        elif spec.scale == "mask":
            value = np.where(np.isnan(mask), np.nan, 1.0)
        else:
            value = _per_token(step.get(spec.column), n, spec.column, _where(step))
        parts["masked"].append(masked)
        parts["value"].append(np.where(masked, np.nan, value) if spec.column is None
                              else value)  # the log's own, masked or not: no credit there
    row, value, masked = (np.concatenate(parts[k]) if parts[k] else np.zeros(0)
                          for k in ("row", "value", "masked"))
    row, masked = row.astype(np.int64), masked.astype(bool)
    scale = _scale(spec, value, masked, credit, quantile)
    colour, clipped = _positions(np.where(masked, np.nan, value), scale)
    t = rows["t"].to_numpy()[row] if "t" in rows.columns else row
    frame = pd.DataFrame({"row": row, "t": t, "text": pd.Series(texts, dtype=object),
                          "value": value, "colour": colour, "masked": masked,
                          "clipped": clipped}, columns=TOKEN_FRAME_COLUMNS)
    return TokenColours(frame, spec, scale, source, spec.column is not None)


def _scale(spec: Colouring, value: np.ndarray, masked: np.ndarray, credit: Credit | None,
           quantile: float) -> Scale:
    """The scale of one colouring: a credit's over the values it spans, a per-token field's
    over the unmasked tokens shown."""
    if spec.scale == "mask":
        return Scale("mask", 0.0, 1.0, 1.0, int((~masked).sum()), 0, int(masked.sum()))
    if spec.column is None:
        assert credit is not None
        spanned = credit.values if credit.scale_values is None else credit.scale_values
        return diverging_scale(np.asarray(spanned, dtype=np.float64), quantile)
    scale = sequential_scale(value[~masked], quantile, spec.tail)
    return replace(scale, n_left_out=scale.n_left_out + int(masked.sum()))
