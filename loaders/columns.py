"""The columns of a table file, read from its head, and a suggested column mapping: what the
app's mapping form offers when a table lacks the step table's required columns."""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from g2po.steps import REQUIRED_COLUMNS
from loaders.errors import LogFormatError
from loaders.mapping import ALIASES, known_columns

__all__ = ["table_columns", "suggest_mapping", "missing_columns"]

_HEAD_BYTES = 1 << 20
_HEAD_LINES = 50
#: Names users commonly give step-table columns, beyond :data:`loaders.mapping.ALIASES`.
_HINTS: dict[str, tuple[str, ...]] = {
    "group_id": ("group", "task_id", "prompt_id", "task_uid", "uid"),
    "traj_id": ("traj", "trajectory", "trajectory_id", "rollout", "rollout_id", "episode",
                "episode_id"),
    "t": ("step", "turn", "step_idx", "step_index", "timestep", "time_step"),
    "state_key": ("state", "obs", "observation", "anchor", "anchor_obs"),
    "action": ("act", "action_text"),
    "episode_reward": ("reward", "return", "ret", "score", "episode_return", "outcome"),
    "is_action_valid": ("valid", "is_valid", "action_valid", "valid_action"),
    "train_step": ("global_step", "iteration", "epoch"),
    "task": ("gts", "task_name", "instruction", "goal", "game", "env_task"),
    "done": ("dones", "is_done", "terminated", "finished", "is_terminal", "terminal"),
    "won": ("success", "succeeded", "is_success", "solved", "win", "is_won"),
}


def table_columns(path: str | Path, format: str) -> list[str]:
    """The column names of a CSV / JSONL / Parquet file, from its header, first lines or
    schema (at most 1 MiB is read). Raises :class:`LogFormatError` naming the file."""
    path = Path(path)
    if format == "parquet":
        try:
            return [str(n) for n in pq.read_schema(path).names]
        except (pa.ArrowException, OSError) as err:
            raise LogFormatError(f"{path}: not a readable Parquet file: {err}") from None
    with open(path, "rb") as f:
        head = f.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    if format == "csv":
        try:
            return next(csv.reader(io.StringIO(head.lstrip("\ufeff"), newline="")), [])
        except csv.Error as err:
            raise LogFormatError(f"{path}:1: malformed CSV header: {err}") from None
    names: dict[str, None] = {}
    for line in head.splitlines()[:_HEAD_LINES]:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut by the 1 MiB head, or one the reader will report
        if isinstance(record, dict):
            names.update(dict.fromkeys(map(str, record)))
    return list(names)


def suggest_mapping(columns: Sequence[str]) -> dict[str, str]:
    """Step-table column -> the source column that most likely holds it: the same name, a
    known alias (:data:`ALIASES`), a common name for it, a name holding such a word, else the
    closest name (difflib).
    Each source column is suggested once.

    >>> suggest_mapping(["uid", "rollout", "turn", "obs", "act", "return"])["t"]
    'turn'
    """
    free = [str(c) for c in columns]
    out: dict[str, str] = {}
    roles = list(known_columns())
    for role in roles:  # exact names first, so no guess takes a column that is exact
        if role in free:
            out[role] = role
            free.remove(role)
    lower = {c.lower(): c for c in free}
    for role in roles:
        if role in out:
            continue
        for name in (*ALIASES.get(role, ()), *_HINTS.get(role, ())):
            if name.lower() in lower and lower[name.lower()] in free:
                out[role] = lower[name.lower()]
                free.remove(out[role])
                break
    for role in REQUIRED_COLUMNS:  # a common name as a word of a column's name: obs_anchor
        hints = {h.lower() for h in (*ALIASES.get(role, ()), *_HINTS.get(role, ()))}
        word = next((c for c in free if hints & set(re.split(r"[^a-z0-9]+", c.lower()))),
                    None) if role not in out else None
        if word is not None:
            out[role] = word
            free.remove(word)
    for role in REQUIRED_COLUMNS:
        if role not in out and free:
            close = difflib.get_close_matches(role, free, n=1, cutoff=0.6)
            if close:
                out[role] = close[0]
                free.remove(close[0])
    return out


def missing_columns(columns: Sequence[str], mapping: dict[str, str] | None = None) -> list[str]:
    """The required step-table columns a table of ``columns`` cannot fill, by its names, the
    aliases and ``mapping`` (``is_action_valid`` may be absent: every action valid)."""
    present = set(map(str, columns))
    mapping = mapping or {}
    missing = []
    for role in REQUIRED_COLUMNS:
        if role == "is_action_valid":
            continue
        if mapping.get(role) in present or role in present or \
                any(a in present for a in ALIASES.get(role, ())):
            continue
        missing.append(role)
    return missing
