"""Colour scales shared by the graph, the tables and the charts, so that one number has one
colour everywhere: node values on a sequential scale, TD errors and advantages on a diverging
scale centred on zero."""

from __future__ import annotations

import numpy as np
from plotly.colors import sample_colorscale

__all__ = [
    "VALUE_SCALE",
    "DIVERGING_SCALE",
    "EDGE_SCALE",
    "value_colors",
    "diverging_colors",
    "text_color_for",
    "symmetric_limit",
]

#: Node value V(k): low = purple, high = yellow (plotly's Viridis, readable in grey too).
VALUE_SCALE = "Viridis"
#: TD error and advantages in tables: negative = red, zero = white, positive = blue.
DIVERGING_SCALE = "RdBu"
#: Edges on a white canvas: the same hues, but zero is grey so that no edge vanishes.
EDGE_SCALE = [[0.0, "rgb(178, 24, 43)"], [0.5, "rgb(175, 175, 175)"], [1.0, "rgb(33, 102, 172)"]]


def _positions(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    span = hi - lo
    pos = (values - lo) / span if span > 0 else np.full(values.shape, 0.5)
    return np.clip(np.nan_to_num(pos, nan=0.5), 0.0, 1.0)


def value_colors(values: np.ndarray, lo: float, hi: float, scale=VALUE_SCALE) -> list[str]:
    """``rgb(...)`` colours of ``values`` (n,) on a sequential ``scale`` (default
    :data:`VALUE_SCALE`) between ``lo`` and ``hi``."""
    return _sample(scale, _positions(values, lo, hi))


def diverging_colors(values: np.ndarray, limit: float, scale=DIVERGING_SCALE) -> list[str]:
    """``rgb(...)`` colours of ``values`` (n,) on a diverging ``scale`` (default
    :data:`DIVERGING_SCALE`, white at 0), full colour at ``±limit``."""
    return _sample(scale, _positions(values, -limit, limit))


def symmetric_limit(values: np.ndarray) -> float:
    """The largest absolute finite value (at least a tiny positive number), for diverging scales."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.abs(values[np.isfinite(values)])
    return float(max(finite.max(), 1e-9)) if finite.size else 1.0


def text_color_for(rgb: str) -> str:
    """Black or white, whichever reads better on the background ``rgb(r, g, b)``."""
    r, g, b = (float(c) for c in rgb[rgb.index("(") + 1 : rgb.index(")")].split(","))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#ffffff"


def _sample(scale: str, positions: np.ndarray) -> list[str]:
    if positions.size == 0:
        return []
    # Sample each distinct position once: tables repeat values a lot.
    uniq, inverse = np.unique(np.round(positions, 3), return_inverse=True)
    colors = sample_colorscale(scale, uniq.tolist())
    return [colors[i] for i in inverse.ravel()]
