"""Which trajectory lost a turn when a reader skipped a malformed line: the rule, in one place.

A malformed line of a text log (a JSON line that does not parse, a CSV record with the wrong
number of fields) costs that line, not the log: the reader skips it, counts it in its report
with its ``file:line``, and keeps the rest (``strict`` refuses it instead). The rows the line
held are gone, so the trajectory it belonged to is told, and marked:

1. by the line's own text where the reader can read an id in it (a verl line's ``uid``);
2. else by its neighbours, logs being written a trajectory at a time: the line between two
   rows of one trajectory was a turn of it; the line before a trajectory whose first row in
   the file is not its turn 0 was that turn; else the line after a trajectory's last row was
   its last turn (or a whole trajectory of its own: the note says so);
3. none when every trajectory of the file is one line (each line a whole trajectory: one
   rollout of its group is lost, nothing of another is).

A marked trajectory gets ``incomplete`` True on every row (an optional step column,
:mod:`g2po.steps`); the others False. Its rows keep the ``t`` the log gave them, so ``t``
skips where the lost turn was (never renumbered): the step table accepts such a gap only in a
trajectory marked incomplete (:func:`g2po.steps.trajectory_problems`), and the estimators take
its turns in order, as the trajectory it kept (:func:`g2po.index.index_steps`). The report's
note names each skipped line with the trajectory marked for it, which the app shows beside
the log and every command prints on stderr.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from loaders.report import LoadReport

__all__ = ["mark_incomplete", "with_marks", "INCOMPLETE", "Identify"]

#: The step column marking a trajectory that lost a turn to a skipped line.
INCOMPLETE = "incomplete"
#: Reads the trajectory a malformed line belonged to from its text: (group_id, traj_id), or
#: None where the text does not say.
Identify = Callable[[str], tuple[str, str] | None]
#: Lines named one by one in the note; the rest are counted.
_SHOWN = 5


def mark_incomplete(frame: pd.DataFrame, malformed: Mapping[int, str], source: str,
                    report: LoadReport, identify: Identify | None = None) -> pd.DataFrame:
    """``frame`` with :data:`INCOMPLETE` set on the trajectories that lost a turn to the
    ``malformed`` lines (line number -> text) of one file, and a note in ``report`` naming each
    line and its trajectory; ``frame`` as it is when no line was skipped.

    ``frame`` holds the kept rows of that file indexed by line number, ascending, with
    ``group_id``, ``traj_id`` and ``t`` (and ``train_step`` where the log has it).

    Examples
    --------
    >>> rows = pd.DataFrame({"group_id": ["g"] * 3, "traj_id": ["a", "a", "b"],
    ...                      "t": [0, 2, 0]}, index=[1, 3, 4])
    >>> marked = mark_incomplete(rows, {2: '{"t": 1, "act'}, "f.jsonl", LoadReport())
    >>> marked["incomplete"].tolist()
    [True, True, False]
    """
    if not malformed or frame.empty:
        return frame
    keys = [c for c in ("train_step", "group_id", "traj_id") if c in frame.columns]
    try:
        codes = frame.groupby(keys, sort=False, observed=True, dropna=False).ngroup().to_numpy()
    except TypeError:  # ids that are lists or mappings: the step table's check names them
        report.note(f"{source}: {len(malformed)} malformed line(s) skipped (first: line "
                    f"{min(malformed)}); no trajectory could be told (its ids are no text)")
        return frame
    lines = frame.index.to_numpy()
    t = pd.to_numeric(frame["t"], errors="coerce").to_numpy(dtype=np.float64)
    n_traj = int(codes.max()) + 1
    first_t = np.full(n_traj, np.inf)
    np.minimum.at(first_t, codes, t)
    first_row = np.full(n_traj, len(frame))
    np.minimum.at(first_row, codes, np.arange(len(frame)))
    whole = np.bincount(codes, minlength=n_traj).max() == 1  # every line a whole trajectory
    by_id = {} if identify is None else _codes_by_id(frame, codes)

    marked: dict[int, int] = {}  # trajectory code -> the first line that marked it
    said: list[str] = []
    for line in sorted(malformed):
        found = identify(malformed[line]) if identify is not None else None
        code = by_id.get(found) if found is not None else None
        why = "its id is in the line"
        if code is None and found is not None:
            said.append(f"line {line}: trajectory {found[1]!r} of group {found[0]!r}, of "
                        "which no other line is left")
            continue
        if code is None and not whole:
            code, why = _by_neighbours(line, lines, codes, first_t, first_row)
        if code is None:
            said.append(f"line {line}: " + ("a whole trajectory (each line of this file is "
                                            "one), lost from its group" if whole
                                            else "no trajectory could be told"))
            continue
        marked.setdefault(code, line)
        row = frame.iloc[int(np.flatnonzero(codes == code)[0])]
        said.append(f"line {line}: trajectory {row['traj_id']!r} of group "
                    f"{row['group_id']!r} ({why})")
    shown = "; ".join(said[:_SHOWN]) + (f"; and {len(said) - _SHOWN} more" if
                                        len(said) > _SHOWN else "")
    what = (f"{len(marked)} trajectory(ies) that lost a turn are marked incomplete (column "
            f"'{INCOMPLETE}'; their turns keep the t the log gave them)" if marked
            else "no trajectory is marked incomplete")
    report.note(f"{source}: {len(malformed)} malformed line(s) skipped ({shown}); {what}")
    if not marked:
        return frame
    flag = np.isin(codes, np.fromiter(marked, dtype=np.int64))
    if INCOMPLETE in frame.columns:  # the log's own marks stay
        flag |= frame[INCOMPLETE].fillna(False).to_numpy(dtype=bool)
    return frame.assign(**{INCOMPLETE: flag})


def with_marks(columns, present) -> list[str]:
    """The names of ``columns`` among ``present`` (a table's columns), in order, and
    :data:`INCOMPLETE` where present: a read of a few columns keeps the mark that lets an
    incomplete trajectory's ``t`` skip, asked for or not.

    >>> with_marks(["t", "action", "nope"], ["t", "action", "incomplete"])
    ['t', 'action', 'incomplete']
    """
    names = set(present)
    out = [c for c in columns if c in names]
    return out + [INCOMPLETE] if INCOMPLETE in names and INCOMPLETE not in out else out


def _codes_by_id(frame: pd.DataFrame, codes: np.ndarray) -> dict[tuple[str, str], int]:
    """(group_id, traj_id) -> trajectory code (the first, where training steps repeat ids)."""
    first = pd.Series(np.arange(len(frame))).groupby(codes).first().to_numpy()
    groups = frame["group_id"].astype(str).to_numpy()[first]
    trajs = frame["traj_id"].astype(str).to_numpy()[first]
    out: dict[tuple[str, str], int] = {}
    for code, key in enumerate(zip(groups.tolist(), trajs.tolist(), strict=True)):
        out.setdefault(key, code)
    return out


def _by_neighbours(line: int, lines: np.ndarray, codes: np.ndarray, first_t: np.ndarray,
                   first_row: np.ndarray) -> tuple[int | None, str]:
    """The trajectory a skipped ``line`` belonged to, told by the kept rows around it."""
    after = int(np.searchsorted(lines, line))
    before = after - 1
    if before >= 0 and after < len(lines) and codes[before] == codes[after]:
        return int(codes[before]), "between two of its turns"
    if after < len(lines) and first_row[codes[after]] == after and first_t[codes[after]] > 0:
        return int(codes[after]), "before its first turn left, which is not turn 0"
    if before >= 0:
        return int(codes[before]), ("after its last turn left: its last turn, unless the "
                                    "line held a trajectory of its own")
    return None, ""
