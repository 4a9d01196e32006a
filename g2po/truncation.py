"""Failures that look cut at a step limit a log does not state: the hint every page and
command gives (:func:`detect_truncation`), from a table of trajectories or from per-group
counts. The rule that then counts them (``truncate_at``) is :class:`g2po.outcomes.OutcomeRule`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TruncationHint", "detect_truncation", "truncation_from_counts", "MIN_CUT",
           "MIN_CUT_SHARE"]

#: :func:`detect_truncation` speaks when at least this many failures end at the largest length…
MIN_CUT = 2
#: … and they are at least this share of the failures.
MIN_CUT_SHARE = 0.25


@dataclass(frozen=True)
class TruncationHint:
    """Failures that look cut at a step limit the log does not state (no ``done`` flag).

    length : N, the largest trajectory length, where they end.
    n_cut : failed trajectories of length N whose ``done`` the log does not give.
    n_failures : failed trajectories in all. n_traj : trajectories in all.
    """

    length: int
    n_cut: int
    n_failures: int
    n_traj: int

    def message(self) -> str:
        """What was seen, in one sentence, and the rule it suggests."""
        return (f"{self.n_cut} of {self.n_failures} failed trajectories (of {self.n_traj}) end "
                f"at the same, largest length {self.length} and the log has no done flag: "
                f"they were probably cut at a step limit of {self.length}, not failed. The "
                f"rule 'length ≥ {self.length} ⇒ truncated' shows them as truncated (the "
                "estimators still value truncation as failure).")


def detect_truncation(length: np.ndarray, success: np.ndarray, done: np.ndarray,
                      truncate_at: int | None = None) -> TruncationHint | None:
    """Failures cut at a step limit, in a log without ``done``: many failed trajectories (at
    least :data:`MIN_CUT`, and :data:`MIN_CUT_SHARE` of the failures) ending at the same,
    largest length N ≥ 2, the log saying nothing of their ``done``, while other trajectories
    end sooner. None when nothing looks cut, when the rule already has a ``truncate_at``, or
    when every trajectory lasts N steps (a fixed horizon, or too few episodes to tell: the
    length then says nothing).

    length, success, done : (n,) per trajectory, as in :func:`cut_at_limit`.

    >>> detect_truncation(np.array([30, 30, 30, 12, 7]), np.array([False, False, False,
    ...                   True, False]), np.full(5, np.nan))
    TruncationHint(length=30, n_cut=3, n_failures=4, n_traj=5)
    """
    if truncate_at is not None:
        return None
    length = np.asarray(length, dtype=np.int64)
    success = np.asarray(success, dtype=bool)
    done = np.asarray(done, dtype=np.float64)
    if not len(length):
        return None
    top = int(length.max())
    failed = ~success
    cut = failed & (length == top) & np.isnan(done)
    return truncation_from_counts(top, int(cut.sum()), int(failed.sum()), len(length),
                                  bool((length == top).all()))


def truncation_from_counts(top: int, n_cut: int, n_failures: int, n_traj: int,
                           all_at_top: bool) -> TruncationHint | None:
    """:func:`detect_truncation`'s verdict from its counts (a whole run's, summed from per
    group counts): the largest length ``top``, failures of that length without ``done``
    ``n_cut``, ``n_failures``, ``n_traj``, and whether every trajectory lasts ``top``."""
    if top < 2 or n_cut < MIN_CUT or n_cut < MIN_CUT_SHARE * n_failures or all_at_top:
        return None
    return TruncationHint(length=top, n_cut=n_cut, n_failures=n_failures, n_traj=n_traj)
