"""A step file's footer: the ``g2po.step`` key-value metadata that lets a reader list a
training step's groups, and load one group, without reading rows.

The writer lays the rows out in Parquet row groups that hold whole groups (small groups packed
together) and records, per group, its row group and offsets inside it, with its summary under
the trainer's outcome rule (:func:`footer_layout`); a reader checks that record against the
file it describes before trusting it (:func:`parse_footer`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from g2po.outcomes import OutcomeRule
from loaders.errors import LogFormatError
from loaders.summary import group_summary

__all__ = ["META_KEY", "ROW_GROUP_MIN_ROWS", "footer_layout", "parse_footer", "footer_problem",
           "plain"]

META_KEY = b"g2po.step"
#: Groups smaller than this share a row group with their neighbours.
ROW_GROUP_MIN_ROWS = 256


def plain(value):
    """A numpy scalar as the Python value JSON takes."""
    return value.item() if hasattr(value, "item") else value


def footer_layout(steps: pd.DataFrame, trajectories: pd.DataFrame, rule: OutcomeRule
                  ) -> tuple[list[dict], list[tuple[int, int]]]:
    """Row groups holding whole groups (small groups packed together), and each group's
    row group and offsets inside it, with its summary under ``rule``.

    ``steps`` are sorted by group; ``trajectories`` is their
    :func:`loaders.summary.trajectory_table`. Returns the footer's group entries and the
    (start, stop) rows of each row group.
    """
    group_ids = steps["group_id"].to_numpy()
    change = np.flatnonzero(group_ids[1:] != group_ids[:-1]) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [len(steps)]])
    summaries = {row["group_id"]: row
                 for row in group_summary(trajectories, rule).to_dict("records")}
    groups: list[dict] = []
    boundaries: list[tuple[int, int]] = []
    rg_start = 0
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        gid = group_ids[start]
        stats = {k: plain(v) for k, v in summaries[gid].items() if k != "group_id"}
        groups.append({"group_id": str(gid), "row_group": len(boundaries),
                       "start": start - rg_start, "stop": stop - rg_start, **stats})
        if stop - rg_start >= ROW_GROUP_MIN_ROWS:
            boundaries.append((rg_start, stop))
            rg_start = stop
    if rg_start < len(steps):
        boundaries.append((rg_start, len(steps)))
    return groups, boundaries


def footer_problem(path: Path, text: str) -> LogFormatError:
    """The error for a footer that does not describe its file, saying how to repair it."""
    return LogFormatError(f"{path}: the footer's g2po.step metadata {text}; the file was "
                          "damaged or written by another tool (rewrite the step, or drop the "
                          "metadata key to have summaries computed from the rows)")


def parse_footer(raw: bytes, path: Path, train_step: int, row_groups: list[int]) -> dict:
    """The ``g2po.step`` footer, checked against the file it describes: JSON, the step it
    names, and each group's row group and offsets inside the file's row groups
    (``row_groups`` = the row count of each)."""
    try:
        footer = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise footer_problem(path, f"is not JSON ({err})") from None
    if not isinstance(footer, dict) or not isinstance(footer.get("groups"), list):
        raise footer_problem(path, "is not an object with 'groups'")
    if "train_step" in footer and footer["train_step"] != train_step:
        raise footer_problem(path, f"names training step {footer['train_step']!r}, the file "
                                    f"name {train_step}")
    for i, group in enumerate(footer["groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("group_id"), str):
            raise footer_problem(path, f"group entry {i} has no group_id")
        if "row_group" not in group:
            continue
        rg, start, stop = (group.get(k) for k in ("row_group", "start", "stop"))
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (rg, start, stop)):
            raise footer_problem(path, f"group {group['group_id']!r}: row_group, start and "
                                        "stop must be whole numbers")
        if not 0 <= rg < len(row_groups):
            raise footer_problem(path, f"group {group['group_id']!r} points at row group {rg}, "
                                        f"past the file's {len(row_groups)} row group(s)")
        if not 0 <= start <= stop <= row_groups[rg]:
            raise footer_problem(path, f"group {group['group_id']!r} points at rows "
                                        f"{start}-{stop} of row group {rg}, which holds "
                                        f"{row_groups[rg]}")
    return footer
