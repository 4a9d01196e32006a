"""Benchmark: every registered estimator end to end (validation, state merging, codes, the
estimator itself) on synthetic rollout groups.

Run ``g2po bench`` (or ``python -m g2po.bench``); prints, per estimator and table size, the best
and median seconds of :func:`g2po.compute_advantages` and the seconds of the estimator alone on a
prebuilt :class:`g2po.index.StepIndex`, so that linear growth and the shared cost of building the
index can be read off.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from g2po.estimators import compute_advantages, get_estimator, list_estimators, step_columns
from g2po.index import index_steps
from g2po.steps import coerce_steps
from g2po.synthetic import synthetic_steps, with_step_columns

__all__ = ["run_benchmark"]


def _best_median(fn, repeats: int, *args, **kwargs) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[0], times[len(times) // 2]


def run_benchmark(sizes: Sequence[int] = (30_000, 1_000_000), repeats: int = 5,
                  estimators: Sequence[str] | None = None) -> list[dict]:
    """Time each estimator (default: every registered one) on tables of about ``sizes`` rows;
    returns one dict per (estimator, size) with ``rows``, ``best_s``, ``median_s``,
    ``estimator_s`` and prints them as a table."""
    names = list(estimators) if estimators is not None else list_estimators()
    results = []
    print(f"{'estimator':<16}{'rows':>11}{'groups':>8}{'best s':>9}{'median s':>10}"
          f"{'alone s':>9}{'rows/s':>13}")
    declared = {name: c.dtype for name, c in step_columns().items()}
    for n in sizes:
        # with a synthetic value in every step column an estimator declares (MiGPO's milestones)
        steps = with_step_columns(synthetic_steps(n), declared)
        n_groups = steps["group_id"].nunique()
        start = time.perf_counter()
        ix = index_steps(coerce_steps(steps, declared), columns=declared)
        index_s = time.perf_counter() - start
        for name in names:
            best, median = _best_median(compute_advantages, repeats, steps, name)
            alone, _ = _best_median(get_estimator(name), repeats, ix)
            results.append({"estimator": name, "rows": len(steps), "best_s": best,
                            "median_s": median, "estimator_s": alone, "index_s": index_s})
            print(f"{name:<16}{len(steps):>11,}{n_groups:>8,}{best:>9.3f}{median:>10.3f}"
                  f"{alone:>9.3f}{len(steps) / best:>13,.0f}")
        print(f"{'(index alone)':<16}{len(steps):>11,}{n_groups:>8,}{index_s:>9.3f}")
    return results


if __name__ == "__main__":
    run_benchmark()
