from __future__ import annotations

import numpy as np
import pytest

from g2po.segments import discounted_suffix_sum, segment_mean, segment_norm, segment_var


def test_segment_mean_and_counts():
    mean, count = segment_mean(np.array([1.0, 3.0, 5.0]), np.array([0, 0, 2]), 3)
    assert mean.tolist() == [2.0, 0.0, 5.0] and count.tolist() == [2, 0, 1]


def test_segment_norm_modes_and_singletons():
    x = np.array([1.0, 3.0, 5.0])
    ids = np.array([0, 0, 1])
    s = np.sqrt(2.0)  # sample std of (1, 3)
    assert segment_norm(x, ids, 2).tolist() == pytest.approx([-1 / (s + 1e-6), 1 / (s + 1e-6), 0])
    assert segment_norm(x, ids, 2, "mean_norm").tolist() == [-1.0, 1.0, 0.0]
    assert segment_norm(x, ids, 2, singleton="unit")[2] == pytest.approx(5 / (1 + 1e-6))
    assert segment_norm(x, ids, 2, "mean_norm", singleton="unit")[2] == 5.0
    with pytest.raises(ValueError, match="mean_std_norm, mean_norm"):
        segment_norm(x, ids, 2, "z")


def test_sums_run_in_the_given_order():
    x = np.array([1e16, 10.0, -1e16])
    ids = np.zeros(3, dtype=np.int64)
    order = np.array([2, 0, 1])
    a = segment_mean(x, ids, 1, order)[0]
    b = segment_mean(x[[1, 2, 0]], ids, 1, np.array([1, 2, 0]))[0]
    assert a[0] == b[0] == (-1e16 + 1e16 + 10.0) / 3


def test_huge_values_are_scaled_per_segment_only():
    x = np.array([1e150, -1e150, 3e149, 1.0, 2.0])
    ids = np.array([0, 0, 0, 1, 1])
    out = segment_norm(x, ids, 2)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[:3], segment_norm(x[:3] / 1e150, ids[:3], 1), rtol=1e-5)
    assert out[3:].tolist() == segment_norm(x[3:], ids[3:] - 1, 1).tolist()  # bit for bit
    var = segment_var(x, ids, 2)
    assert np.isfinite(var).all() and var[1] == 0.25
    mean_norm = segment_norm(x, ids, 2, "mean_norm")
    assert mean_norm[0] == pytest.approx(1e150 - 3e149 / 3, rel=1e-12)


def test_discounted_suffix_sum_stays_inside_trajectories():
    # two trajectories laid out in any row order: rows 3, 0, 4 (t = 0, 1, 2) and 1, 2 (t = 0, 1)
    order = np.array([3, 0, 4, 1, 2])
    remaining = np.array([1, 1, 0, 2, 0])
    x = np.array([1.0, 1e308, 2.0, 4.0, 8.0])
    out = discounted_suffix_sum(x, order, remaining, 0.5)
    assert out.tolist() == [1.0 + 0.5 * 8.0, 1e308 + 0.5 * 2.0, 2.0, 4.0 + 0.5 * 1.0 + 0.25 * 8.0,
                            8.0]
    long = discounted_suffix_sum(np.ones(100), np.arange(100), np.arange(99, -1, -1), 0.9)
    np.testing.assert_allclose(long, (1 - 0.9 ** np.arange(100, 0, -1)) / 0.1)
