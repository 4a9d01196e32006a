"""The last stage every loader shares: duplicates, schema validation, the report on the frame.

Rows arrive indexed by where they came from (line numbers for text files, row numbers for
Parquet), so every message can point at them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from g2po.steps import KEY_COLUMNS, check_steps
from loaders.advantage import read_advantage
from loaders.errors import LogFormatError
from loaders.report import LoadReport, attach_report
from loaders.token_lists import read_token_lists

__all__ = ["drop_exact_duplicates", "finish_steps", "DUPLICATE"]

DUPLICATE = "exact duplicate of an earlier row (same group, trajectory, t and content)"


def drop_exact_duplicates(frame: pd.DataFrame, source: str, report: LoadReport,
                          label: str = "line") -> pd.DataFrame:
    """Skip rows repeating an earlier row exactly; raise if two rows share a step key but differ.

    The key is (train_step,) group_id, traj_id, t. Only rows with a repeated key are compared
    in full, so the common case costs one hash of the key columns.
    """
    keys = [c for c in ("train_step", *KEY_COLUMNS) if c in frame.columns]
    if len(keys) < len(KEY_COLUMNS) or frame.empty:
        return frame
    try:
        repeated = frame.duplicated(keys, keep=False).to_numpy()
    except TypeError:  # unhashable keys (lists, dicts): check_steps names the column and rows
        return frame
    if not repeated.any():
        return frame
    sub = frame.loc[repeated]
    content = pd.Series(["\x1f".join(map(repr, row)) for row in sub.itertuples(index=False)],
                        index=sub.index)
    key_code = sub.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    drop = np.zeros(len(frame), dtype=bool)
    positions = np.flatnonzero(repeated)
    for code in np.unique(key_code):
        members = np.flatnonzero(key_code == code)
        texts = content.iloc[members]
        if texts.nunique() > 1:
            rows = ", ".join(str(sub.index[m]) for m in members[:4])
            first = sub.iloc[members[0]]
            raise LogFormatError(
                f"{source}: {label}s {rows} hold the same step (group {first['group_id']!r}, "
                f"trajectory {first['traj_id']!r}, t={first['t']}) with different content; "
                "a step must appear once"
            )
        for m in members[1:]:
            first = sub.index[members[0]]
            report.skip(DUPLICATE, f"{source} {label} {sub.index[m]} (same as {label} {first})")
            drop[positions[m]] = True
    return frame.loc[~drop]


def finish_steps(frame: pd.DataFrame, source: str, report: LoadReport,
                 label: str = "line") -> pd.DataFrame:
    """Deduplicate, read the recorded advantage (:func:`loaders.advantage.read_advantage`)
    and the per-token lists (:func:`loaders.token_lists.read_token_lists`), validate
    (raising :class:`g2po.errors.StepTableError` naming rows by ``label``), give canonical
    dtypes and a fresh index, and attach the report."""
    frame = drop_exact_duplicates(frame, source, report, label)
    frame = read_advantage(frame, source, report, label)
    frame = read_token_lists(frame, source, report)
    frame = check_steps(frame, source=f"{source} (rows named by {label} number)")
    frame = frame.reset_index(drop=True)
    attach_report(frame, report)
    return frame
