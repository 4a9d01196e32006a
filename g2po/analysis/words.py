"""How the checks put evidence into words: short texts from logs, lists of names, the units a
figure reads in, a split pair as a phrase, the top few of a ranking. Plain helpers every check
module shares (:mod:`g2po.analysis.checks`), so a state key or an action reads the same in
every finding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import pandas as pd

__all__ = ["short_text", "split_phrase", "split_evidence", "names", "top", "pairs", "same_place",
           "ADV_UNITS", "REWARD_UNITS", "SHOWN", "adv_unit"]

#: Ranked alarms name (and views show) this many nodes first; the rest are "n more".
SHOWN = 3
#: The unit G2PO's advantages read in, by normalisation mode (alarms say it after each figure).
ADV_UNITS = {"mean_std_norm": "in standard deviations (mode mean_std_norm)",
             "mean_norm": "in reward units (mode mean_norm)"}
#: Values, TD errors and the credit a merge moves are discounted rewards.
REWARD_UNITS = "reward units"


def adv_unit(mode: str) -> str:
    """The words after an advantage figure under normalisation ``mode``."""
    return ADV_UNITS.get(mode, f"(mode {mode})")


def short_text(text: object, limit: int = 40) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis.

    >>> short_text("You are in\\n a   kitchen. " * 3, 20)
    'You are in a kitche…'
    """
    text = str(text)
    head = " ".join(text[:4 * limit].split())  # a long observation: only its start is shown
    if len(head) <= limit and len(text) > 4 * limit:
        head = " ".join(text.split())
    return head if len(head) <= limit else head[:limit - 1] + "…"


def names(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``.

    >>> names(["G2PO", "GRPO"])
    'G2PO and GRPO'
    """
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def split_phrase(key: str, action: str, nexts: Sequence[str], counts: Sequence[int],
                 limit: int = 40) -> str:
    """One split pair in words: "'key' + action → next (5×) | other (3×)", each text on one
    line and shortened, the next states without the start they share (what tells them
    apart)."""
    texts = [str(t) for t in nexts]
    common = os.path.commonprefix(texts)
    # show what tells them apart: from the last word boundary of the start they share
    cut = max(common.rfind(c) for c in " \n\t") + 1 if len(common) > 8 else 0
    shown = " | ".join(f"{'…' if cut else ''}{short_text(text[cut:], limit)} ({int(n)}×)"
                       for text, n in zip(texts, counts, strict=True))
    return f"'{short_text(key, limit)}' + {short_text(action, limit)} → {shown}"


def split_evidence(splits: pd.DataFrame, key: pd.Series, action: pd.Series,
                   limit: int = 40) -> str:
    """The first split pair of ``splits`` (rows of :attr:`GroupSignals.splits` of one group)
    in words (:func:`split_phrase`); ``key`` and ``action`` are the step table's columns
    (row-aligned with the signals)."""
    if splits.empty:
        return ""
    pair = splits[splits["_pair"] == splits["_pair"].iloc[0]]
    row = int(pair["row"].iloc[0])
    return split_phrase(str(key.iloc[row]), str(action.iloc[row]),
                        [str(key.iloc[int(r)]) for r in pair["next_row"]],
                        pair["count"].tolist(), limit)


def same_place(texts: list[str]) -> bool:
    """The next states of a split read as one place with a detail changed: the start they
    share holds a whole sentence or line ("You arrive at drawer 2. The drawer 2 is " closed /
    open), not just a few words ("You are in the " kitchen / entrance).

    >>> same_place(["You arrive at drawer 2. It is closed.", "You arrive at drawer 2. It is open."])
    True
    >>> same_place(["You are in the kitchen.", "You are in the entrance."])
    False
    """
    common = os.path.commonprefix([str(t) for t in texts])
    return any(common.find(end, 8) >= 0 for end in (". ", "! ", "? ", "\n"))


def top(ranking: pd.DataFrame, describe: Callable[[object], str]) -> str:
    """The first :data:`SHOWN` rows of ``ranking`` described, then "n more"."""
    shown = "; ".join(describe(row) for row in ranking.head(SHOWN).itertuples())
    more = len(ranking) - SHOWN
    return shown + (f"; {more} more" if more > 0 else "")


def pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """(traj_id, t) of ``rows``, sorted: the steps an alarm is about."""
    return rows[["traj_id", "t"]].sort_values(["traj_id", "t"]).reset_index(drop=True)
