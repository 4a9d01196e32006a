"""verl's training rows read back as agent steps.

The v1 trainer stores each agent-loop output as a row keyed ``{uid}_{session}_{index}`` with its
``extra_fields`` and a tag (``is_padding``, ``prompt_len``, ``response_len``). The key gives the
group (``uid``), the trajectory (``session``) and the step (``index``); the ``g2po_step``
record the agent loop wrote gives the state key, the action and its validity, and the step
columns an estimator declares (:func:`g2po.estimators.step_columns`) that the environment
reported (:func:`g2po.rollouts.reported_columns`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from g2po.errors import G2POError
from g2po.estimators import step_columns
from g2po.trainers.verl_backend.estimator import StepFields
from g2po.trainers.verl_backend.settings import STEP_FIELD

__all__ = ["RowError", "split_key", "step_fields_from_rows", "EXTRA_COLUMNS"]

#: Optional step-table columns copied from the agent loop's record, with their dtype.
EXTRA_COLUMNS = {"observation": object, "response": object, "step_reward": np.float64,
                 "done": bool, "won": bool, "env": object, "task": object}
_SHOWN = 5


class RowError(G2POError, ValueError):
    """Training rows that are not the g2po_env agent loop's steps; names the keys."""


def split_key(key: str) -> tuple[str, str, int]:
    """``(uid, session, index)`` of a v1 row key ``{uid}_{session}_{index}``.

    >>> split_key("6f1c-42_3_7")
    ('6f1c-42', '3', 7)
    """
    parts = str(key).rsplit("_", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        raise RowError(f"row key {key!r} is not verl's {{uid}}_{{session}}_{{index}}")
    return parts[0], parts[1], int(parts[2])


def _names(keys: Sequence[str], rows: np.ndarray) -> str:
    shown = ", ".join(repr(keys[i]) for i in rows[:_SHOWN])
    more = f" and {len(rows) - _SHOWN} more" if len(rows) > _SHOWN else ""
    return f"{len(rows)} row(s): {shown}{more}"


def _reported(records: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Each declared step column some record carries, (n_rows,) object: the record's value,
    None on a row whose record lacks it (padding rows; the estimator that needs the column
    names any real one). The estimator converts them to the declared dtype."""
    out = {}
    for name in step_columns():
        if any(name in record for record in records):
            values = np.empty(len(records), dtype=object)
            values[:] = [record.get(name) for record in records]
            out[name] = values
    return out


def step_fields_from_rows(
    keys: Sequence[str],
    tags: Sequence[Mapping[str, Any]],
    extra_fields: Sequence[Mapping[str, Any] | None],
) -> StepFields:
    """The :class:`StepFields` of a v1 batch, row for row.

    Parameters
    ----------
    keys : (n_rows,) the batch's row keys, in batch order.
    tags : (n_rows,) the rows' TransferQueue tags; ``is_padding`` rows are verl's filler.
    extra_fields : (n_rows,) each row's ``extra_fields``.

    Raises
    ------
    RowError
        When a real row has no ``g2po_step`` record (it came from another agent loop) or its
        record's step disagrees with the key's index.
    """
    n = len(keys)
    if len(tags) != n or len(extra_fields) != n:
        raise RowError(f"{n} keys but {len(tags)} tags and {len(extra_fields)} extra_fields")
    keep = np.array([not (tag or {}).get("is_padding", False) for tag in tags], dtype=bool)
    group = np.empty(n, dtype=object)
    traj = np.empty(n, dtype=object)
    t = np.zeros(n, dtype=np.int64)
    state_key = np.full(n, "", dtype=object)
    action = np.full(n, "", dtype=object)
    valid = np.ones(n, dtype=bool)
    extra = {c: np.zeros(n, dtype=d) if d is not object else np.full(n, "", dtype=object)
             for c, d in EXTRA_COLUMNS.items()}
    records: list[Mapping[str, Any]] = []
    missing, mismatched = [], []
    for i, (key, fields) in enumerate(zip(keys, extra_fields)):
        uid, session, index = split_key(key) if keep[i] else (str(key), "0", 0)
        group[i], traj[i], t[i] = uid, session, index
        if not keep[i]:
            records.append({})
            continue
        record = (fields or {}).get(STEP_FIELD) if isinstance(fields, Mapping) else None
        if not isinstance(record, Mapping):
            missing.append(i)
            records.append({})
            continue
        records.append(record)
        if int(record.get("t", index)) != index:
            mismatched.append(i)
        state_key[i] = str(record["state_key"])
        action[i] = str(record.get("action", ""))
        valid[i] = bool(record.get("is_action_valid", True))
        for column in EXTRA_COLUMNS:
            if column in record and record[column] is not None:
                extra[column][i] = record[column]
    if missing:
        raise RowError(
            f"{_names(keys, np.array(missing))} carry no '{STEP_FIELD}' record in extra_fields: "
            "they were not produced by the g2po_env agent loop (set "
            "actor_rollout_ref.rollout.agent.default_agent_loop=g2po_env and use task rows from "
            "data.train_files=auto)")
    if mismatched:
        raise RowError(f"{_names(keys, np.array(mismatched))}: the step index in the key and in "
                       f"the '{STEP_FIELD}' record differ")
    extra.update(_reported(records))
    extra["prompt_tokens"] = np.array([int((tag or {}).get("prompt_len", 0)) for tag in tags],
                                      dtype=np.int64)
    extra["response_tokens"] = np.array([int((tag or {}).get("response_len", 0))
                                         for tag in tags], dtype=np.int64)
    return StepFields(group_id=group, traj_id=traj, t=t, state_key=state_key, action=action,
                      is_action_valid=valid, keep=keep, extra=extra)
