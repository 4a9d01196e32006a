"""Column mappings: which column of a user's table feeds which column of the step table.

A mapping goes from step-table column to source column, ``{"group_id": "uid", "traj_id":
"traj_uid", "state_key": "anchor_obs"}``. It comes from Python, from ``--map KEY=COLUMN`` on
the command line, or from a small YAML (or JSON) file holding such pairs (at the top level or
under a ``columns:`` key).
Without a mapping, the column names of verl-agent-style batches are recognised as aliases.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from g2po.steps import OPTIONAL_COLUMNS, REQUIRED_COLUMNS
from loaders.errors import LoaderError, LogFormatError
from loaders.files import read_bytes, regular_file
from loaders.report import LoadReport

__all__ = [
    "ALIASES",
    "MappingSpec",
    "parse_mapping",
    "apply_mapping",
    "require_columns",
    "expected_columns_text",
    "known_columns",
]

MappingSpec = Mapping[str, str] | str | Path | Sequence[str] | None

#: Column names other code bases use for step-table columns (verl-agent's batch keys; verl's
#: ``advantages`` for the advantage a trainer recorded, :mod:`loaders.advantage`; verl's
#: per-token tensors, :mod:`loaders.token_lists`).
ALIASES: dict[str, tuple[str, ...]] = {
    "group_id": ("uid",),
    "traj_id": ("traj_uid",),
    "state_key": ("anchor_obs",),
    "episode_reward": ("episode_rewards",),
    "advantage": ("advantages",),
    "token_logprobs": ("old_log_probs", "rollout_log_probs"),
    "token_entropy": ("entropys",),
    "loss_mask": ("response_mask",),
}


def known_columns() -> dict[str, str]:
    """Every step-table column a mapping may feed, with its dtype: the step table's own
    (:mod:`g2po.steps`), then those an estimator declares it reads
    (:func:`g2po.estimators.step_columns`)."""
    from g2po.estimators import step_columns

    declared = {name: column.dtype for name, column in step_columns().items()}
    return {**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS, **declared}


def expected_columns_text() -> str:
    """The step-table layout, in one line, for error messages."""
    required = ", ".join(c for c in REQUIRED_COLUMNS if c != "is_action_valid")
    return (f"a step table needs the columns {required} (is_action_valid optional, default "
            "True); map other names with --map COLUMN=SOURCE or a mapping YAML (COLUMN: SOURCE)")


def parse_mapping(spec: MappingSpec) -> dict[str, str]:
    """A mapping from a dict, a YAML/JSON file path, or ``["group_id=uid", …]`` pairs.

    Raises :class:`LoaderError` naming an unknown step-table column or a malformed pair.

    >>> parse_mapping(["group_id=uid", "traj_id = traj_uid"])
    {'group_id': 'uid', 'traj_id': 'traj_uid'}
    """
    if spec is None:
        return {}
    if isinstance(spec, str | Path):
        mapping = _read_mapping_file(Path(spec))
        origin = str(spec)
    elif isinstance(spec, Mapping):
        mapping, origin = dict(spec), "mapping"
    else:
        mapping, origin = {}, "--map"
        for pair in spec:
            key, sep, value = str(pair).partition("=")
            if not sep or not key.strip() or not value.strip():
                raise LoaderError(f"--map expects STEP_COLUMN=SOURCE_COLUMN, got {pair!r}")
            mapping[key.strip()] = value.strip()
    known = known_columns()
    unknown = [k for k in mapping if k not in known]
    if unknown:
        raise LoaderError(
            f"{origin}: unknown step-table column(s) {', '.join(map(repr, unknown))}; known: "
            + ", ".join(known)
        )
    bad = [k for k, v in mapping.items() if not isinstance(v, str) or not v]
    if bad:
        raise LoaderError(f"{origin}: the source of {', '.join(map(repr, bad))} must be a "
                          "column name (a non-empty string)")
    return {str(k): str(v) for k, v in mapping.items()}


def _read_mapping_file(path: Path) -> dict:
    if not path.exists():
        raise LoaderError(f"{path}: mapping file not found")
    data = read_bytes(regular_file(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise LoaderError(f"{path}:{line}: a mapping file is UTF-8 text; byte "
                          f"0x{data[err.start]:02x} is not") from None
    try:
        value = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError) as err:  # messages carry line, column
        raise LoaderError(f"{path}: cannot read the mapping: {err}") from None
    if isinstance(value, dict) and isinstance(value.get("columns"), dict):
        value = value["columns"]
    if not isinstance(value, dict):
        raise LoaderError(f"{path}: a mapping file holds 'step_column: source_column' pairs, "
                          f"e.g. 'group_id: uid'; got {type(value).__name__}")
    return value


def apply_mapping(
    frame: pd.DataFrame,
    mapping: Mapping[str, str],
    source: str,
    report: LoadReport,
    *,
    aliases: bool = True,
) -> pd.DataFrame:
    """Rename source columns to step-table columns; recognise aliases for columns still missing.

    A source column feeding two step-table columns is copied. A column already named like a
    mapped target is replaced, and the report says so.
    """
    missing = [src for src in mapping.values() if src not in frame.columns]
    if missing:
        raise LogFormatError(
            f"{source}: mapped column(s) {', '.join(map(repr, missing))} not in the file; "
            f"its columns: {_list(frame.columns)}"
        )
    out = {}
    for target, src in mapping.items():
        if target != src and target in frame.columns:
            report.note(f"column {target!r} replaced by {src!r} (mapping)")
        out[target] = frame[src]
    if aliases:
        for target, names in ALIASES.items():
            if target in frame.columns or target in out:
                continue
            for name in names:
                if name in frame.columns:
                    out[target] = frame[name]
                    report.note(f"{target} read from column {name!r}")
                    break
    if not out:
        return frame
    return frame.assign(**out)


def require_columns(frame: pd.DataFrame, source: str, report: LoadReport,
                    found: Sequence[str] | None = None) -> pd.DataFrame:
    """Raise naming every missing required field; default ``is_action_valid`` to True.

    ``found`` are the columns the file itself holds (listed in the message; default: the
    frame's), so columns the loader derived are never shown as found in the file.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns and c != "is_action_valid"]
    if missing:
        raise LogFormatError(
            f"{source}: missing required column(s): {', '.join(map(repr, missing))}; "
            f"{expected_columns_text()}. Columns found: "
            f"{_list(frame.columns if found is None else found)}"
        )
    if "is_action_valid" not in frame.columns:
        frame = frame.assign(is_action_valid=True)
        report.assume("is_action_valid", "is_action_valid absent: every action assumed valid")
    return frame


def _list(columns, limit: int = 30) -> str:
    names = [str(c) for c in columns]
    return ", ".join(names[:limit]) + (" …" if len(names) > limit else "")
