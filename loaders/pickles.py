"""Batch dumps of verl-agent-style code bases: a pickled ``DataProto`` or dict of columns.

Unpickling runs whatever code the file names, so these files are read only when the caller
says it trusts them (``trust_pickle=True``, ``--trust-pickle``). Without that: a refusal that
says why, before the file is opened.

What a batch holds (verl-agent's ``TrajectoryCollector.gather_rollout_data``): one row per
agent step, in rollout order; ``non_tensor_batch`` carries ``uid`` (the group), ``traj_uid``,
``anchor_obs`` (the observation without history), ``episode_rewards``, ``episode_lengths``,
``is_action_valid``, ``rewards``, ``active_masks``; the tensor batch carries ``responses``
(token ids) and per-token ``old_log_probs``, ``response_mask`` … (read into the per-token step
columns, :mod:`loaders.token_lists`). Rows are mapped with the aliases of
:mod:`loaders.mapping` and any user mapping; ``t`` is the row's position inside its
trajectory when the batch has no step index.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from loaders.checks import finish_steps
from loaders.errors import LogFormatError, NoLogFoundError, UntrustedPickleError
from loaders.files import is_regular_file, regular_file
from loaders.log import TableLog
from loaders.mapping import MappingSpec, apply_mapping, parse_mapping, require_columns
from loaders.report import LoadReport
from loaders.token_lists import batch_token_lists

__all__ = ["load_pickle", "open_pickle", "batch_columns", "is_pickle_bytes", "PICKLE_SUFFIXES"]

#: The names of pickled batch dumps (a folder of them is read file by file).
PICKLE_SUFFIXES = (".pkl", ".pickle")
_INACTIVE = "inactive step after the episode ended (active_masks False)"
_ACTION_TEXT = ("action", "text_actions", "projected_action", "response_text")


def is_pickle_bytes(head: bytes) -> bool:
    """A pickle of protocol 2 or later starts with PROTO (0x80) and the protocol number."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _refusal(path: Path) -> UntrustedPickleError:
    return UntrustedPickleError(
        f"{path}: refusing to unpickle: loading a pickle runs any code the file names, so it "
        "is only done for files you trust. If you (or someone you trust) wrote this file, pass "
        "--trust-pickle (trust_pickle=True in Python); otherwise export the batch to Parquet "
        "or JSON lines and load that."
    )


def _unpickle(path: Path) -> object:
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except ModuleNotFoundError as err:
        raise LogFormatError(
            f"{path}: unpickling needs the module {err.name!r} (a verl DataProto needs verl, "
            "torch and tensordict: pip install 'g2po[verl]')"
        ) from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, IndexError,
            KeyError, ImportError, RecursionError, UnicodeDecodeError, OverflowError) as err:
        raise LogFormatError(f"{path}: not a readable pickle: {err}") from None


def _as_numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):  # torch tensors
        value = value.detach().cpu().numpy()
    return np.asarray(value) if not isinstance(value, np.ndarray) else value


def batch_columns(obj: object, source: str) -> tuple[dict[str, np.ndarray], dict]:
    """The per-row columns of a batch object and its ``meta_info``.

    Accepts a ``DataProto`` (anything with ``non_tensor_batch`` and ``batch``), a dict with
    those two keys, a dict of equal-length columns, a list of row dicts, or a DataFrame.
    Tensors of more than one dimension (token ids) are kept as 2-D arrays.
    """
    meta: dict = {}
    if isinstance(obj, pd.DataFrame):
        return {c: obj[c].to_numpy() for c in obj.columns}, meta
    if isinstance(obj, list) and obj and all(isinstance(r, Mapping) for r in obj):
        frame = pd.DataFrame.from_records(obj)
        return {c: frame[c].to_numpy() for c in frame.columns}, meta
    if hasattr(obj, "non_tensor_batch"):
        non_tensor, tensors = obj.non_tensor_batch, getattr(obj, "batch", None)
        meta = dict(getattr(obj, "meta_info", None) or {})
    elif isinstance(obj, Mapping) and "non_tensor_batch" in obj:
        non_tensor, tensors = obj["non_tensor_batch"], obj.get("batch")
        meta = dict(obj.get("meta_info") or {})
    elif isinstance(obj, Mapping):
        non_tensor, tensors = obj, None
    else:
        raise LogFormatError(f"{source}: a batch dump holds a DataProto, a dict of columns, a "
                             f"list of row dicts or a DataFrame; got {type(obj).__name__}")
    columns: dict[str, np.ndarray] = {}
    for name, value in dict(non_tensor or {}).items():
        columns[str(name)] = _as_numpy(value)
    if tensors is not None:
        for name in list(tensors.keys()):
            columns.setdefault(str(name), _as_numpy(tensors[name]))
    lengths = {len(v) for v in columns.values() if v.ndim >= 1}
    if len(lengths) > 1:
        sizes = ", ".join(f"{k}: {len(v)}" for k, v in columns.items() if v.ndim >= 1)
        raise LogFormatError(f"{source}: batch columns differ in length ({sizes})")
    return columns, meta


def _token_actions(columns: dict[str, np.ndarray], report: LoadReport) -> list[str] | None:
    """Actions as response token ids, when the batch has no decoded text."""
    ids = columns.get("responses")
    if ids is None or ids.ndim != 2:
        return None
    mask = columns.get("response_mask")
    if mask is None and "attention_mask" in columns and columns["attention_mask"].ndim == 2:
        mask = columns["attention_mask"][:, -ids.shape[1]:]
    if mask is None:
        mask = np.ones_like(ids, dtype=bool)
    report.note("no decoded action text in the batch: actions are the response token ids "
                "('ids:…'); map a text column with --map action=COLUMN")
    return ["ids:" + " ".join(map(str, row[m.astype(bool)].tolist()))
            for row, m in zip(ids, mask, strict=True)]


def _frame(obj: object, source: str, report: LoadReport) -> pd.DataFrame:
    columns, meta = batch_columns(obj, source)
    flat = {k: v for k, v in columns.items() if v.ndim == 1}
    frame = pd.DataFrame(flat)
    for name in ("advantage", "advantages"):  # per-token credit: a list per row, reduced later
        tokens = columns.get(name)
        if name not in flat and tokens is not None and tokens.ndim == 2:
            mask = columns.get("response_mask")
            if mask is not None and mask.shape == tokens.shape:
                tokens = np.where(mask.astype(bool), tokens, 0.0)
            frame[name] = list(tokens.astype(np.float64))
    for name, cells in batch_token_lists(columns, source).items():  # one array per step
        frame[name] = cells
    if "action" not in frame.columns:
        text = next((c for c in _ACTION_TEXT if c in frame.columns), None)
        if text is not None:
            frame["action"] = frame[text].astype(str)
            if text != "action":
                report.note(f"action read from column {text!r}")
        else:
            actions = _token_actions(columns, report)
            if actions is not None:
                frame["action"] = actions
    step = meta.get("global_steps", meta.get("global_step"))
    if "train_step" not in frame.columns and isinstance(step, int | np.integer):
        frame["train_step"] = int(step)
    return frame


def load_pickle(path: str | Path, *, trust_pickle: bool = False, mapping: MappingSpec = None,
                report: LoadReport | None = None) -> pd.DataFrame:
    """A trusted batch dump (one file, or a directory of ``.pkl`` files, one per training step)
    as a validated step table.

    Raises :class:`UntrustedPickleError` unless ``trust_pickle``; nothing is read before that.
    """
    path = Path(path)
    if not trust_pickle:
        raise _refusal(path)
    report = report or LoadReport(str(path), "pickle")
    mapping = parse_mapping(mapping)
    if path.is_dir():
        files = sorted(p for p in path.iterdir()
                       if p.suffix.lower() in PICKLE_SUFFIXES and is_regular_file(p))
        if not files:
            raise NoLogFoundError(f"{path}: no .pkl / .pickle files")
    elif path.exists():
        files = [regular_file(path)]
    else:
        raise NoLogFoundError(f"{path}: no such file or directory")
    parts = []
    for file in files:
        frame = _frame(_unpickle(file), str(file), report)
        if "train_step" not in frame.columns and len(files) > 1:
            numbers = re.findall(r"\d+", file.stem)
            if not numbers:
                raise LogFormatError(f"{file}: cannot tell its training step (no global_steps "
                                     "in meta_info, no number in the file name)")
            frame["train_step"] = int(numbers[-1])
            report.note("training step read from each file's name")
        if len(files) > 1:  # rows named file:row
            frame.index = [f"{file.name}:{i}" for i in range(len(frame))]
        parts.append(frame)
    frame = pd.concat(parts) if len(parts) > 1 else parts[0]

    found = list(frame.columns)
    frame = apply_mapping(frame, mapping, str(path), report)
    if "active_masks" in frame.columns:
        active = frame["active_masks"].astype(bool).to_numpy()
        for label in frame.index[~active]:
            report.skip(_INACTIVE, f"{path} row {label}")
        frame = frame.loc[active]
    if "t" not in frame.columns and "traj_id" in frame.columns:
        keys = [c for c in ("train_step", "group_id", "traj_id") if c in frame.columns]
        frame = frame.assign(t=frame.groupby(keys, sort=False).cumcount().astype(np.int64))
        report.note("t = each row's position inside its trajectory (rows are in rollout order)")
    if "state_key" in frame.columns and frame["state_key"].map(type).ne(str).any():
        report.note("state_key values that are not text were turned into text with str()")
        frame["state_key"] = frame["state_key"].map(str)
    frame = require_columns(frame, str(path), report, found)
    frame = finish_steps(frame, str(path), report, "row")
    report.warn(stacklevel=4)
    return frame


def open_pickle(path: str | Path, *, trust_pickle: bool = False,
                mapping: MappingSpec = None) -> TableLog:
    """A trusted batch dump opened for browsing (read whole)."""
    report = LoadReport(str(path), "pickle")
    steps = load_pickle(path, trust_pickle=trust_pickle, mapping=mapping, report=report)
    return TableLog(Path(path), steps, "pickle", report)
