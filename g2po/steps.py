"""The step table: one row per agent step, the data model every part of the project shares.

Required columns
----------------
========================  ==========  =====================================================
column                    dtype       meaning
========================  ==========  =====================================================
``group_id``              str         task instance the N rollouts share (verl's ``uid``)
``traj_id``               str         rollout inside the group
``t``                     int64       0-based step index inside the trajectory
``state_key``             str         anchor observation used to merge states into nodes
``action``                str         the action the environment executed
``episode_reward``        float64     outcome reward R_i of the trajectory (same on each step)
``is_action_valid``       bool        False where the environment rejected the action
========================  ==========  =====================================================

Optional columns (kept when present): ``train_step`` (int64), ``observation`` (str),
``response`` (str), ``step_reward`` (float64), ``done`` (bool), ``won`` (bool), ``env`` (str),
``task`` (str), ``prompt_tokens`` / ``response_tokens`` (int64), ``logprob_mean`` (float64),
``advantage`` (float64: the advantage a trainer recorded for that step, NaN where it recorded
none; a fact about the run, audited against the recomputation by
:mod:`g2po.analysis.recorded`, never shown as if it were the recomputation),
``incomplete`` (bool: True on every row of a trajectory from which a loader skipped a
malformed line, :mod:`loaders.incomplete`; its ``t`` may skip where the lost turn was).

Per-token columns (optional, :data:`TOKEN_COLUMNS`): one list per step, one entry per token
of the step's response, in order. ``tokens`` (list[str]: each token's text, where the log
holds its token boundaries), ``token_ids`` (list[int64]: the tokenizer's ids, non-negative),
``token_logprobs`` (list[float64]: each token's log-probability under the policy that was
trained, verl's ``old_log_probs``; null entries have no value), ``token_entropy``
(list[float64]: the entropy of the policy's distribution at each token, verl's
``entropys``), ``loss_mask`` (list[bool]: True where the token counts in the loss, verl's
``response_mask``; False on tokens the model did not write, such as a tool's output inside a
multi-turn response). The rule for lists: a cell is a flat list (or tuple, or 1-D array) whose
entries each fit the element dtype as a scalar column's values would, or null where the log
has none for that step; the per-token lists of one row all have the same length.

Node ids, values, TD errors and advantages are derived by :mod:`g2po.estimators`, never stored
as truth.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from g2po.errors import StepTableError

__all__ = [
    "REQUIRED_COLUMNS",
    "OPTIONAL_COLUMNS",
    "TOKEN_COLUMNS",
    "is_list_cell",
    "KEY_COLUMNS",
    "validate_steps",
    "check_steps",
    "trajectory_problems",
    "column_problems",
    "coerce_steps",
    "real_numbers",
    "incomplete_rows",
]

REQUIRED_COLUMNS: dict[str, str] = {
    "group_id": "str",
    "traj_id": "str",
    "t": "int64",
    "state_key": "str",
    "action": "str",
    "episode_reward": "float64",
    "is_action_valid": "bool",
}

OPTIONAL_COLUMNS: dict[str, str] = {
    "train_step": "int64",
    "observation": "str",
    "response": "str",
    "step_reward": "float64",
    "done": "bool",
    "won": "bool",
    "env": "str",
    "task": "str",
    "prompt_tokens": "int64",
    "response_tokens": "int64",
    "logprob_mean": "float64",
    "advantage": "float64",
    "incomplete": "bool",
}

#: The per-token columns (module docs): step column -> ``list[element dtype]``.
TOKEN_COLUMNS: dict[str, str] = {
    "tokens": "list[str]",
    "token_ids": "list[int64]",
    "token_logprobs": "list[float64]",
    "token_entropy": "list[float64]",
    "loss_mask": "list[bool]",
}
OPTIONAL_COLUMNS.update(TOKEN_COLUMNS)

#: Columns that identify one step; within a training step they are unique.
KEY_COLUMNS = ("group_id", "traj_id", "t")

_MAX_ROWS_SHOWN = 8


def _rows(mask: np.ndarray, index: pd.Index) -> str:
    """Name the offending rows, a few of them, so the message stays readable."""
    hits = index[np.asarray(mask, dtype=bool)]
    shown = ", ".join(str(i) for i in hits[:_MAX_ROWS_SHOWN])
    more = f" and {len(hits) - _MAX_ROWS_SHOWN} more" if len(hits) > _MAX_ROWS_SHOWN else ""
    return f"{len(hits)} row(s): {shown}{more}"


def _trajectory_keys(steps: pd.DataFrame) -> list[str]:
    keys = ["group_id", "traj_id"]
    if "train_step" in steps.columns:
        keys.insert(0, "train_step")
    return keys


def incomplete_rows(steps: pd.DataFrame) -> np.ndarray | None:
    """(n,) bool: the rows of trajectories a loader marked ``incomplete`` (a malformed line
    of theirs was skipped), whose step index may skip; None when the table has no such
    column."""
    if "incomplete" not in steps.columns:
        return None
    flags = steps["incomplete"]
    if pd.api.types.is_bool_dtype(flags.dtype):
        return flags.to_numpy(dtype=bool)
    return flags.map(lambda v: str(v).strip().lower() in _TRUE).to_numpy(dtype=bool)


def validate_steps(steps: pd.DataFrame) -> list[str]:
    """Every problem of a step table, each naming its column and rows; empty when it is valid.

    Checks: that it is a DataFrame with unique, flat column names; missing required columns,
    null keys; every known column's values against its dtype (numbers real, finite and in
    range, whole numbers where an integer is meant, booleans True/False or 1/0); a step index
    that is negative, repeats inside a trajectory, or skips in one not marked ``incomplete``;
    and an episode reward that changes between the steps of one trajectory. Rows are named by
    the frame's index labels.

    Examples
    --------
    >>> import pandas as pd
    >>> validate_steps(pd.DataFrame({"group_id": ["g"]}))[0]
    "missing required column(s): 'traj_id', 't', 'state_key', 'action', 'episode_reward', \
'is_action_valid'"
    """
    problems = column_problems(steps)
    if not problems:
        keys = _trajectory_keys(steps)
        traj = steps.groupby(keys, sort=False, observed=True).ngroup().to_numpy()
        problems.extend(
            trajectory_problems(
                traj.astype(np.int64),
                real_numbers(steps["t"])[0].astype(np.int64),
                real_numbers(steps["episode_reward"])[0],
                steps.index,
                " / ".join(keys),
                may_skip=incomplete_rows(steps),
            )
        )
    return problems


def column_problems(steps: pd.DataFrame, extra: Mapping[str, str] | None = None) -> list[str]:
    """The per-column half of :func:`validate_steps`: the table's shape (a DataFrame with
    unique, flat column names), presence, nulls, and that every known column holds what its
    dtype says (numbers that are real, finite and in range; whole numbers; booleans; text).
    ``extra`` (column → dtype) are further known optional columns, such as the step columns
    an estimator declares (:func:`g2po.estimators.step_columns`)."""
    if not isinstance(steps, pd.DataFrame):
        return [f"the step table must be a pandas DataFrame (one row per agent step), got "
                f"{type(steps).__name__}"]
    if isinstance(steps.columns, pd.MultiIndex):
        return [f"the columns are a MultiIndex ({steps.columns.nlevels} levels, first column "
                f"{steps.columns[0]!r}); flatten them to one name per column, e.g. with "
                "frame.columns = ['_'.join(map(str, c)) for c in frame.columns]"]
    repeated = steps.columns[steps.columns.duplicated()].unique()
    if len(repeated):
        return ["column name(s) " + ", ".join(repr(c) for c in repeated)
                + " appear more than once; each column needs its own name"]
    problems: list[str] = []
    missing = [c for c in REQUIRED_COLUMNS if c not in steps.columns]
    if missing:
        problems.append("missing required column(s): " + ", ".join(repr(c) for c in missing))
    for col in REQUIRED_COLUMNS:
        if col in steps.columns:
            null = steps[col].isna().to_numpy()
            if null.any():
                problems.append(f"column {col!r} has null/NaN values in "
                                f"{_rows(null, steps.index)}")
    for col, dtype in {**(extra or {}), **REQUIRED_COLUMNS, **OPTIONAL_COLUMNS}.items():
        if col in steps.columns:
            problems.extend(_dtype_problems(steps[col], col, dtype, steps.index))
    problems.extend(_token_length_problems(steps))
    return problems


_INT_LIMIT = 2.0**62  # whole numbers beyond this are not step indices or counts
_NOT_TEXT = (list, tuple, dict, set, bytes, bytearray, np.ndarray)


def _dtype_problems(s: pd.Series, col: str, dtype: str, index: pd.Index) -> list[str]:
    """Whether the non-null values of one known column fit its schema dtype."""
    if dtype.startswith("list["):
        return _list_problems(s, col, dtype[5:-1], index)
    if dtype == "str":
        if s.dtype != object or pd.api.types.infer_dtype(s, skipna=True) in (
                "string", "empty", "integer", "floating", "boolean", "mixed-integer-float"):
            return []
        bad = s.map(lambda v: isinstance(v, _NOT_TEXT)).to_numpy(dtype=bool)
        if bad.any():
            return [f"column {col!r} holds lists, mappings or bytes instead of text in "
                    f"{_rows(bad, index)}"]
        return []
    if dtype == "bool":
        if pd.api.types.is_bool_dtype(s.dtype):
            return []
        present = s.notna().to_numpy()
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_complex_dtype(s.dtype):
            values = s.to_numpy(dtype=np.float64, na_value=np.nan)
            bad = present & (values != 0) & (values != 1)
        else:
            text = s.astype(str).str.strip().str.lower()
            bad = present & ~text.isin(_TRUE | _FALSE).to_numpy()
        if bad.any():
            return [f"column {col!r} is not boolean (True/False or 1/0) in {_rows(bad, index)}"]
        return []
    values, kind = real_numbers(s)
    for name, mask in kind.items():
        if mask.any():
            return [f"column {col!r} {name} in {_rows(mask, index)}"]
    problems = []
    inf = np.isinf(values)
    if inf.any() and (col in REQUIRED_COLUMNS or dtype == "int64"):
        problems.append(f"column {col!r} is not finite (inf) in {_rows(inf, index)}")
    if dtype == "int64":
        finite = np.isfinite(values)
        frac = finite & (values != np.round(values))
        if frac.any():
            problems.append(f"column {col!r} is not a whole number in {_rows(frac, index)}")
        huge = finite & (np.abs(values) > _INT_LIMIT)
        if huge.any():
            problems.append(f"column {col!r} is out of range (beyond 2**62) in "
                            f"{_rows(huge, index)}")
        neg = finite & (values < 0)
        if neg.any() and col in ("t", "train_step", "prompt_tokens", "response_tokens"):
            problems.append(f"column {col!r} is negative in {_rows(neg, index)}")
    return problems


def is_list_cell(value: object) -> bool:
    """Whether a cell of a per-token column is a list: a list, a tuple or a 1-D array."""
    return isinstance(value, list | tuple) or isinstance(value, np.ndarray) and value.ndim == 1


def _list_cells(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(n,) bool: the cells of a per-token column that are lists (:func:`is_list_cell`);
    (n,) int64: their lengths (0 elsewhere)."""
    cells = s.tolist()
    is_list = np.fromiter(map(is_list_cell, cells), dtype=bool, count=len(cells))
    lengths = np.fromiter((len(v) if ok else 0 for v, ok in zip(cells, is_list, strict=True)),
                          dtype=np.int64, count=len(cells))
    return is_list, lengths


def _list_problems(s: pd.Series, col: str, element: str, index: pd.Index) -> list[str]:
    """Whether each non-null cell of a per-token column is a flat list whose entries fit
    ``element`` (the rule of the module docs); rows named by ``index``."""
    is_list, lengths = _list_cells(s)
    not_list = s.notna().to_numpy() & ~is_list
    if not_list.any():
        return [f"column {col!r} holds no list (one entry per token of the step's response) "
                f"in {_rows(not_list, index)}"]
    rows = np.flatnonzero(is_list)
    if not lengths.sum():
        return []
    cells = [s.iat[i] for i in rows]
    if all(isinstance(c, np.ndarray) and c.dtype.kind in "biuf" for c in cells):
        flat = pd.Series(np.concatenate(cells))  # from Parquet or a batch dump: no loop
    else:
        flat = pd.Series([v for c in cells for v in c], dtype=object)
    owner = np.repeat(rows, lengths[rows])
    bad: dict[str, np.ndarray] = {}
    kind = pd.api.types.infer_dtype(flat, skipna=element == "float64")
    if element == "str":
        if kind != "string":
            bad["is not text"] = ~flat.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    elif not (element == "bool" and kind == "boolean"):
        values, wrong = real_numbers(flat)
        bad.update(wrong)
        null = flat.isna().to_numpy()
        if element != "float64":
            bad["is null (every token needs a value)"] = null
        if element == "bool":
            bad["is not boolean (True/False or 1/0)"] = ~null & (values != 0) & (values != 1)
        elif element == "int64":
            bad["is not a whole number from 0 to 2**62"] = ~null & (
                ~np.isfinite(values) | (values != np.round(values)) | (values < 0)
                | (values > _INT_LIMIT))
    for what, mask in bad.items():
        if mask.any():
            hit = np.zeros(len(s), dtype=bool)
            hit[owner[mask]] = True
            return [f"column {col!r}: a list entry {what} in {_rows(hit, index)}"]
    return []


def _token_length_problems(steps: pd.DataFrame) -> list[str]:
    """Rows whose per-token lists differ in length (each holds one entry per token)."""
    present = [c for c in TOKEN_COLUMNS if c in steps.columns]
    if len(present) < 2:
        return []
    cells = [_list_cells(steps[c]) for c in present]
    lengths = np.column_stack([np.where(is_list, n, -1) for is_list, n in cells])
    shortest = np.where(lengths >= 0, lengths, np.iinfo(np.int64).max).min(axis=1)
    differ = (lengths >= 0).sum(axis=1) > 1
    differ &= lengths.max(axis=1) != shortest
    if not differ.any():
        return []
    first = lengths[np.flatnonzero(differ)[0]]
    said = ", ".join(f"{c!r} {n}" for c, n in zip(present, first, strict=True) if n >= 0)
    return [f"per-token columns differ in length (each holds one entry per token of the "
            f"step; the first such row: {said}) in {_rows(differ, steps.index)}"]


def real_numbers(s: pd.Series) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(n,) float64 values of a column (NaN where null or unreadable), and (n,) bool masks of
    the values that are no real number, keyed by what is wrong (``"is not numeric"``, complex
    numbers, integers too large for a float), so callers can name the rows."""
    n = len(s)
    none = np.zeros(n, dtype=bool)
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.to_numpy(dtype=np.float64, na_value=np.nan), {}
    if pd.api.types.is_complex_dtype(s.dtype):
        return np.full(n, np.nan), {"holds complex numbers (a real number is needed)":
                                    np.ones(n, dtype=bool)}
    if pd.api.types.is_numeric_dtype(s.dtype):
        return s.to_numpy(dtype=np.float64, na_value=np.nan), {}
    try:
        numbers = pd.to_numeric(s, errors="coerce")
        if not pd.api.types.is_complex_dtype(numbers.dtype):
            values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
            text = np.isnan(values) & s.notna().to_numpy()
            return values, {"is not numeric": text}
    except (OverflowError, TypeError, ValueError):
        pass
    values = np.full(n, np.nan)
    kinds = {"is not numeric": none.copy(), "holds complex numbers (a real number is needed)":
             none.copy(), "holds a number too large for a float": none.copy()}
    text, cplx, big = kinds.values()
    for i, v in enumerate(s.tolist()):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        if isinstance(v, complex | np.complexfloating):
            cplx[i] = True
            continue
        try:
            values[i] = float(v)
        except OverflowError:
            big[i] = True
        except (TypeError, ValueError):
            text[i] = True
    return values, kinds


def trajectory_problems(
    traj: np.ndarray,
    t: np.ndarray,
    reward: np.ndarray,
    labels: pd.Index,
    traj_desc: str = "group_id / traj_id",
    order: np.ndarray | None = None,
    may_skip: np.ndarray | None = None,
) -> list[str]:
    """Step indices that skip or repeat, and episode rewards that change, inside trajectories.

    ``traj`` (n,) int64 trajectory codes, ``t`` (n,) int64 step indices, ``reward`` (n,) float64
    episode rewards, ``labels`` the row labels used in messages, ``order`` an optional
    precomputed ``np.lexsort((t, traj))``, ``may_skip`` (n,) bool: rows of trajectories that
    lost a turn (:func:`incomplete_rows`), whose indices may skip (never repeat). Sort-based,
    O(n log n), no Python loop.
    """
    n = len(traj)
    if n == 0:
        return []
    if order is None:
        order = np.lexsort((t, traj))
    tr, ts = traj[order], t[order]
    start = np.ones(n, dtype=bool)
    start[1:] = tr[1:] != tr[:-1]
    seg_start = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    position = np.arange(n) - seg_start
    problems: list[str] = []
    repeat = np.zeros(n, dtype=bool)
    repeat[1:] = ~start[1:] & (ts[1:] == ts[:-1])
    if repeat.any():
        rows = np.zeros(n, dtype=bool)
        rows[order[repeat]] = True
        rows[order[np.flatnonzero(repeat) - 1]] = True
        problems.append(
            f"column 't' repeats a step index inside a trajectory ({traj_desc}) in "
            + _rows(rows, labels)
        )
    else:
        skipping = ts != position
        if may_skip is not None:
            skipping &= ~np.asarray(may_skip, dtype=bool)[order]
        skip_traj = np.unique(tr[skipping])
        if len(skip_traj):
            problems.append(
                "column 't' skips a step index (a trajectory must run 0, 1, …, T-1, unless a "
                "loader marked it incomplete) in "
                + _rows(np.isin(traj, skip_traj), labels)
            )
    rs = reward[order]
    changed_traj = np.unique(tr[rs != rs[seg_start]])
    if len(changed_traj):
        problems.append(
            "column 'episode_reward' changes between the steps of one trajectory in "
            + _rows(np.isin(traj, changed_traj), labels)
        )
    return problems


def check_steps(steps: pd.DataFrame, source: str | None = None) -> pd.DataFrame:
    """Validate and return the table with canonical dtypes; raise :class:`StepTableError`."""
    problems = validate_steps(steps)
    if problems:
        raise StepTableError(problems, source)
    return coerce_steps(steps)


def coerce_steps(steps: pd.DataFrame, extra: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Cast known columns to the schema's dtypes; keys become strings, unknown columns stay.
    ``extra`` (column → dtype) are further known optional columns (see
    :func:`column_problems`).

    Columns already in the right dtype are not copied. An optional column with nulls keeps them
    (as NaN or None) rather than inventing values.
    """
    changed: dict[str, pd.Series] = {}
    for col, dtype in {**(extra or {}), **REQUIRED_COLUMNS, **OPTIONAL_COLUMNS}.items():
        if col not in steps.columns:
            continue
        s = steps[col]
        if dtype.startswith("list["):
            continue  # per-token lists stay as the log gave them (validated, not cast)
        if dtype == "str":
            if not _is_text(s):
                changed[col] = s.astype(str).where(s.notna(), None)
        elif s.hasnans and col not in REQUIRED_COLUMNS:
            continue
        elif dtype == "bool":
            if s.dtype != bool:
                changed[col] = _to_bool(s, col)
        elif s.dtype != dtype:
            changed[col] = pd.to_numeric(s).astype(dtype)
    return steps.assign(**changed) if changed else steps


def _is_text(s: pd.Series) -> bool:
    """A string column already: pandas' ``str`` dtype, or objects that are all strings."""
    if s.dtype == object:
        return pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty")
    return pd.api.types.is_string_dtype(s.dtype)


_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def _to_bool(s: pd.Series, col: str) -> pd.Series:
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_complex_dtype(s):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = (values != 0) & (values != 1)
        if bad.any():
            raise StepTableError([f"column {col!r} is not boolean (True/False or 1/0) in "
                                  f"{_rows(bad, s.index)}"])
        return pd.Series(values == 1, index=s.index)
    text = s.astype(str).str.strip().str.lower()
    ok = text.isin(_TRUE | _FALSE)
    if not ok.all():
        raise StepTableError(
            [f"column {col!r} is not boolean in {_rows(~ok.to_numpy(), s.index)}"]
        )
    return text.isin(_TRUE)
