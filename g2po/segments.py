"""Vectorised statistics over segments (groups, trajectories, nodes) given as integer codes.

Every estimator reduces to "a statistic of x over the set each row belongs to"; these helpers do
that with ``np.bincount`` so no estimator loops over rows or groups in Python.

Two guarantees every helper keeps, because estimators rely on them:

* **Row order does not matter.** Floating-point sums depend on the order of their terms (with
  rewards of -1e16, 10 and 1e16 a mean changes by 4 % between orders). Pass ``order`` (a
  permutation that does not depend on the input's row order, such as
  :attr:`g2po.index.StepIndex.order`) and every sum runs in that order.
* **No overflow for finite input.** In a segment holding values larger than :data:`SCALE_AT`,
  values are divided by the segment's largest magnitude before squares and sums are taken, so
  mean, std and the normalised values stay finite for every finite input.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = [
    "EPS",
    "NormMode",
    "NORM_MODES",
    "SCALE_AT",
    "segment_mean",
    "segment_var",
    "segment_mean_var",
    "segment_norm",
    "segment_max_abs",
    "discounted_suffix_sum",
    "powers",
    "check_mode",
]

EPS = 1e-6
NormMode = Literal["mean_std_norm", "mean_norm"]
NORM_MODES: tuple[str, ...] = ("mean_std_norm", "mean_norm")
#: Above this magnitude, statistics are computed on values scaled per segment (squares of 1e100
#: summed over 1e10 rows stay far below the float64 limit, so smaller inputs take the fast path).
SCALE_AT = 1e100


def check_mode(mode: str) -> str:
    if mode not in NORM_MODES:
        choices = ", ".join(NORM_MODES)
        raise ValueError(f"unknown normalisation mode {mode!r}; choose one of {choices}")
    return mode


def _in_order(x: np.ndarray, ids: np.ndarray, order: np.ndarray | None):
    return (x, ids) if order is None else (x[order], ids[order])


def segment_max_abs(x: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """Largest |x| of each of ``n`` segments, (n,) float64 (0 for an empty segment)."""
    out = np.zeros(n)
    np.maximum.at(out, ids, np.abs(x))
    return out


def _scale(x: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray | None:
    """Per-segment scale (n,) when ``x`` is large enough to overflow a sum of squares, else None."""
    if len(x) == 0 or float(np.max(np.abs(x))) <= SCALE_AT:
        return None
    scale = segment_max_abs(x, ids, n)
    # Only segments that need it are scaled: the others compute exactly as on the fast path,
    # whatever the magnitudes in other segments (groups stay independent bit for bit).
    scale[scale <= SCALE_AT] = 1.0
    return scale


def segment_mean(
    x: np.ndarray, ids: np.ndarray, n: int, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Mean of ``x`` (m,) over each of ``n`` segments; returns (mean (n,), count (n,)).

    ``order`` (m,) fixes the order in which each segment's terms are added."""
    x = np.asarray(x, dtype=np.float64)
    xs, ids_s = _in_order(x, ids, order)
    count = np.bincount(ids_s, minlength=n)
    scale = _scale(xs, ids_s, n)
    if scale is not None:
        xs = xs / scale[ids_s]
    total = np.bincount(ids_s, weights=xs, minlength=n)
    mean = np.where(count > 0, total / np.maximum(count, 1), 0.0)
    return (mean if scale is None else mean * scale), count


def segment_var(
    x: np.ndarray, ids: np.ndarray, n: int, order: np.ndarray | None = None, ddof: int = 0
) -> np.ndarray:
    """Variance of ``x`` over each segment, (n,) float64 (0 for segments of ≤ ddof rows)."""
    return segment_mean_var(x, ids, n, order, ddof)[1]


def segment_mean_var(
    x: np.ndarray, ids: np.ndarray, n: int, order: np.ndarray | None = None, ddof: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, variance and count of ``x`` over each segment, each (n,), in one pass of sums (the
    mean equals :func:`segment_mean`'s)."""
    x = np.asarray(x, dtype=np.float64)
    xs, ids_s = _in_order(x, ids, order)
    count = np.bincount(ids_s, minlength=n)
    scale = _scale(xs, ids_s, n)
    if scale is not None:
        xs = xs / scale[ids_s]
    mean = np.where(count > 0, np.bincount(ids_s, weights=xs, minlength=n)
                    / np.maximum(count, 1), 0.0)
    dev = xs - mean[ids_s]
    var = np.bincount(ids_s, weights=dev * dev, minlength=n) / np.maximum(count - ddof, 1)
    if scale is not None:
        mean, var = mean * scale, var * scale * scale
    return mean, var, count


def segment_norm(
    x: np.ndarray,
    ids: np.ndarray,
    n: int,
    mode: NormMode = "mean_std_norm",
    singleton: Literal["zero", "unit"] = "zero",
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Normalise ``x`` (m,) float64 within the segment ``ids`` (m,) int64 of each row.

    ``mean_std_norm``: (x - mean) / (std + EPS) with the unbiased std (ddof=1);
    ``mean_norm``: x - mean. A segment of one row yields 0 (``singleton="zero"``) or is treated as
    mean 0, std 1 (``singleton="unit"``, the episode term's rule). Returns (m,) float64, in the
    rows' own order; ``order`` fixes the order of the sums (see the module docstring).
    """
    check_mode(mode)
    x = np.asarray(x, dtype=np.float64)
    xs, ids_s = _in_order(x, ids, order)
    count = np.bincount(ids_s, minlength=n)
    scale = _scale(xs, ids_s, n)
    if scale is not None:
        xs = xs / scale[ids_s]
    mean = np.bincount(ids_s, weights=xs, minlength=n) / np.maximum(count, 1)
    dev = xs - mean[ids_s]
    if mode == "mean_std_norm":
        std = np.sqrt(np.bincount(ids_s, weights=dev * dev, minlength=n)
                      / np.maximum(count - 1, 1))
        out = dev / (std + (EPS if scale is None else EPS / scale))[ids_s]
    else:
        out = dev if scale is None else dev * scale[ids_s]
    if (count == 1).any():
        single = count[ids_s] == 1
        if singleton == "zero":
            out[single] = 0.0
        else:
            raw = x[order][single] if order is not None else x[single]
            out[single] = raw / (1.0 + EPS) if mode == "mean_std_norm" else raw
    if order is None:
        return out
    result = np.empty_like(out)
    result[order] = out
    return result


def discounted_suffix_sum(
    x: np.ndarray, order: np.ndarray, remaining: np.ndarray, factor: float
) -> np.ndarray:
    """y_t = x_t + factor * y_{t+1} inside each trajectory, (m,) float64 in the rows' order.

    ``order`` lists the rows trajectory by trajectory, each in step order (as
    :attr:`g2po.index.StepIndex.order` does); ``remaining`` (m,) is the number of steps after each
    row in its trajectory. A parallel prefix scan (log2 of the longest trajectory passes, each a
    whole-array operation) combines only rows of the same trajectory: nothing is computed across a
    trajectory's boundary, so a huge value in one trajectory never touches another.
    """
    xs = np.asarray(x, dtype=np.float64)[order]
    rem = np.asarray(remaining)[order]
    y = xs.copy()
    stride, f = 1, float(factor)
    longest = int(rem.max()) + 1 if len(rem) else 0
    while stride < longest:
        pairs = np.flatnonzero(rem[:-stride] >= stride)
        y[pairs] = y[pairs] + f * y[pairs + stride]
        stride, f = stride * 2, f * f
    out = np.empty_like(y)
    out[order] = y
    return out


def powers(base: float, exponent: np.ndarray) -> np.ndarray:
    """base ** exponent for non-negative integer exponents (m,), from one table of successive
    products: a lookup instead of a pow per row, and each value independent of the others."""
    exponent = np.asarray(exponent, dtype=np.int64)
    if len(exponent) == 0:
        return np.zeros(0)
    table = np.cumprod(np.concatenate([[1.0], np.full(int(exponent.max()), float(base))]))
    return table[exponent]
