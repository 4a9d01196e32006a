"""Segment sums added up in the order torch adds a float64 tensor on the CPU, bit for bit.

HGPO's original drops an item whose float deviation from its group's mean is exactly 0, and
whether a mean of equal returns comes out exact depends on the last bit of the sum: torch's
``Tensor.mean`` (``sum`` / n) adds a 1-D float64 tensor of n values in a fixed order that is not
left to right (ATen's ``cascade_sum`` in ``SumKernel.cpp``, with AVX2 vectors of 4 doubles, the
kernel torch picks on an x86 CPU without AVX-512):

* n < 4: left to right from 0.
* else the first 4·⌊n/4⌋ values are vectors of 4 lanes; vector v goes to accumulator v mod 4
  (its row ⌊v/4⌋), the rows of each accumulator are summed in blocks of 16 rows (each block
  from 0, then added into a running level-1 sum that moves into a level-2 sum every 16 blocks;
  the rows after the last full block into a level-0 sum), and level 0 + level 1 + level 2 is
  that accumulator; the vectors after the last full row of 4 go into accumulator 0, then
  accumulators 1, 2, 3 are added to it; lastly the n mod 4 values left over are added from 0,
  then lanes 0 … 3.

Above 32 767 values torch splits the sum between threads (a result that depends on the thread
count), which is not reproduced; the ``acc3`` level of the cascade (65 536 values and more) is
not needed below that.
"""

from __future__ import annotations

import numpy as np

__all__ = ["torch_order_sums", "ordered_sums", "TORCH_SERIAL_LIMIT"]

#: Largest segment whose torch sum runs on one thread (ATen's GRAIN_SIZE − 1).
TORCH_SERIAL_LIMIT = 32767
_LANES = 4  # AVX2: 4 doubles a vector
_ILP = 4  # accumulators in row_sum
_BLOCK = 16  # rows per cascade level (level_power 4)


def ordered_sums(values: np.ndarray, key: np.ndarray, rank: np.ndarray,
                 n: int) -> np.ndarray:
    """(n,) for each key 0 … n−1, ((0 + v₀) + v₁) + … over its values sorted by ``rank`` (a
    rank is unique within a key). One vectorised add per rank, so the cost is (largest count)
    passes over the values that remain."""
    out = np.zeros(n)
    if len(values) == 0:
        return out
    top = int(rank.max())
    # ranks are small: a stable sort of 16-bit ints is numpy's radix sort
    by = np.argsort(rank.astype(np.int16) if top < 2**15 else rank, kind="stable")
    bounds = np.searchsorted(rank[by], np.arange(top + 2))
    for r in range(len(bounds) - 1):
        at = by[bounds[r]:bounds[r + 1]]
        out[key[at]] += values[at]
    return out


def _dense(code: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0 … m−1 for the distinct values of ``code``, in sorted order."""
    _, inv = np.unique(code, return_inverse=True)
    return inv, int(inv.max()) + 1 if len(inv) else 0


def torch_order_sums(x: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """(n,) the sum of each segment's values in the order they appear in ``x`` (m,), added as
    torch adds a contiguous float64 tensor of them on the CPU (module docstring)."""
    count = np.bincount(ids, minlength=n)
    by = np.argsort(ids, kind="stable")
    pos = np.empty(len(x), dtype=np.int64)
    pos[by] = np.arange(len(x)) - (np.cumsum(count) - count)[ids[by]]
    small = count[ids] < _LANES
    out = ordered_sums(x[small], ids[small], pos[small], n)
    segs = np.flatnonzero(count >= _LANES)
    if len(segs) == 0:
        return out
    big = ~small
    x, seg, pos = x[big], ids[big], pos[big]
    n_vec = count[seg] // _LANES
    in_vec = pos < _LANES * n_vec
    left = ~in_vec  # the n mod 4 values after the vectors
    x_left, seg_left, pos_left = x[left], seg[left], pos[left] - _LANES * n_vec[left]
    x, seg, pos, n_vec = x[in_vec], seg[in_vec], pos[in_vec], n_vec[in_vec]
    vec, lane = pos // _LANES, pos % _LANES
    sl, n_sl = seg * _LANES + lane, n * _LANES  # one sum per (segment, lane)
    n_rows = n_vec // _ILP
    in_rows = vec < _ILP * n_rows
    row = vec // _ILP
    la, n_la = sl * _ILP + vec % _ILP, n_sl * _ILP  # (segment, lane, accumulator)
    n_blocks = n_rows // _BLOCK
    block = row // _BLOCK
    full = in_rows & (block < n_blocks)
    rest = in_rows & ~full
    # level 0: the rows after the last full block
    partial = ordered_sums(x[rest], la[rest], row[rest], n_la)
    if full.any():  # segments of 256 values and more
        # each full block from 0; the blocks into level 1, every 16 blocks that into level 2
        f_la, f_block, f_groups = la[full], block[full], n_blocks[full] // _BLOCK
        blk, n_blk = _dense(f_la * (int(f_block.max()) + 1) + f_block)
        block_sum = ordered_sums(x[full], blk, row[full], n_blk)
        first = np.unique(blk, return_index=True)[1]
        b_la, b_no, group = f_la[first], f_block[first], f_block[first] // _BLOCK
        closed = group < f_groups[first]
        level1 = ordered_sums(block_sum[~closed], b_la[~closed], b_no[~closed], n_la)
        grp, n_grp = _dense(b_la[closed] * (int(group.max()) + 1) + group[closed])
        group_sum = ordered_sums(block_sum[closed], grp, b_no[closed], n_grp)
        g_first = np.unique(grp, return_index=True)[1]
        level2 = ordered_sums(group_sum, b_la[closed][g_first], group[closed][g_first], n_la)
        partial = (partial + level1) + level2
    partial = partial.reshape(n_sl, _ILP)
    # accumulator 0, the vectors after the last full row of 4, then accumulators 1, 2, 3
    extra = ~in_rows
    lanes_of = (segs[:, None] * _LANES + np.arange(_LANES)).ravel()
    vals = np.concatenate([partial[lanes_of, 0], x[extra], partial[lanes_of, 1:].ravel()])
    keys = np.concatenate([lanes_of, sl[extra], np.repeat(lanes_of, _ILP - 1)])
    ranks = np.concatenate([np.zeros(len(lanes_of), dtype=np.int64),
                            1 + vec[extra] - _ILP * n_rows[extra],
                            np.tile(np.arange(_ILP, 2 * _ILP - 1), len(lanes_of))])
    lanes = ordered_sums(vals, keys, ranks, n_sl)
    # the values after the vectors, from 0, then lanes 0 … 3
    vals = np.concatenate([x_left, lanes[lanes_of]])
    keys = np.concatenate([seg_left, lanes_of // _LANES])
    ranks = np.concatenate([pos_left, _LANES + lanes_of % _LANES])
    total = ordered_sums(vals, keys, ranks, n)
    return np.where(count >= _LANES, total, out)
