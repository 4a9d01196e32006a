"""The per-token step columns (:data:`g2po.steps.TOKEN_COLUMNS`) as each log holds them.

Which logs carry what:

- a batch dump (:mod:`loaders.pickles`, verl / verl-agent's ``DataProto``): 2-D tensors over
  the response's tokens, right-padded to the batch's response length: ``responses`` (token
  ids), ``old_log_probs`` (or ``rollout_log_probs``), ``entropys`` where a fork keeps them
  (verl pops them after its entropy metric), ``response_mask``. :func:`batch_token_lists`
  cuts each row to its response (``attention_mask`` over the response, else up to the last
  token ``response_mask`` keeps); the names reach the step columns through
  :data:`loaders.mapping.ALIASES`. No token text: a batch holds ids, and no tokenizer is read.
- a table (CSV, JSON lines, Parquet): the step columns by name or alias, as list cells (JSON
  lines, Parquet lists) or a JSON list in a text cell (CSV): :func:`read_token_lists`.
- a verl rollout dump and a g2po run: text only (``output`` / ``response``), unless a line or
  step file carries the columns by name.

Malformed lists (no list, entries of the wrong kind, per-token lists of one step that differ
in length) are named by :func:`g2po.steps.validate_steps`, with the file and its rows.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from g2po.steps import TOKEN_COLUMNS, is_list_cell
from loaders.advantage import as_list
from loaders.errors import LogFormatError
from loaders.mapping import ALIASES
from loaders.report import LoadReport

__all__ = ["batch_token_lists", "read_token_lists", "lists_as_json", "TOKEN_TENSORS"]

#: A batch dump's per-token tensors: ``responses`` (the ids) and the aliases of the per-token
#: step columns.
TOKEN_TENSORS = ("responses", *(a for c in TOKEN_COLUMNS for a in ALIASES.get(c, ())))


def _response_lengths(columns: dict[str, np.ndarray], width: int) -> np.ndarray:
    """(n_rows,) int64: each row's response length inside the padded width: the response's
    part of ``attention_mask`` (verl pads responses on the right), else up to the last token
    ``response_mask`` keeps, else the whole width."""
    attention = columns.get("attention_mask")
    if attention is not None and attention.ndim == 2 and attention.shape[1] >= width:
        return attention[:, attention.shape[1] - width:].astype(bool).sum(axis=1)
    mask = columns.get("response_mask")
    if mask is not None and mask.ndim == 2 and mask.shape[1] == width:
        kept = mask.astype(bool)
        return np.where(kept.any(axis=1), width - np.argmax(kept[:, ::-1], axis=1), 0)
    rows = len(next(iter(columns.values()))) if columns else 0
    return np.full(rows, width, dtype=np.int64)


def batch_token_lists(columns: dict[str, np.ndarray], source: str) -> dict[str, list]:
    """A batch's per-token tensors (:data:`TOKEN_TENSORS`, 2-D) as one array per row, cut to
    the row's response: ``responses`` becomes ``token_ids``, the others keep their names (the
    aliases map them). Raises :class:`LogFormatError` naming a tensor whose width differs from
    ``responses``'."""
    tensors = {n: columns[n] for n in TOKEN_TENSORS if n in columns and columns[n].ndim == 2}
    if not tensors:
        return {}
    width = tensors["responses"].shape[1] if "responses" in tensors else \
        next(iter(tensors.values())).shape[1]
    wrong = [f"{n} {t.shape[1]}" for n, t in tensors.items() if t.shape[1] != width]
    if wrong:
        raise LogFormatError(f"{source}: per-token tensors differ in width from the response's "
                             f"{width} tokens: {', '.join(wrong)}")
    lengths = _response_lengths(columns, width)
    out = {}
    for name, tensor in tensors.items():
        kind = np.int64 if name == "responses" else bool if name == "response_mask" else \
            np.float64
        rows = np.asarray(tensor).astype(kind, copy=False)
        out["token_ids" if name == "responses" else name] = [
            row[:n] for row, n in zip(rows, lengths.tolist(), strict=True)]
    return out


def read_token_lists(frame: pd.DataFrame, source: str, report: LoadReport) -> pd.DataFrame:
    """``frame`` with each per-token column's JSON text cells (a CSV's ``[…]``) read as lists;
    list cells, and text that is no JSON list, are left for validation to judge."""
    parsed = {}
    for col in TOKEN_COLUMNS:
        if col not in frame.columns or frame[col].dtype.kind not in "OSU":
            continue
        cells = frame[col]
        text = cells.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
        if text.any():
            parsed[col] = cells.map(as_list)
            report.note(f"{source}: per-token column {col!r} read from JSON lists in text")
    return frame.assign(**parsed) if parsed else frame


def lists_as_json(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every list (or 1-D array) cell as JSON text, for a CSV that
    :func:`read_token_lists` reads back as lists; other cells as they are."""
    lists = {}
    for col in frame.columns[[d.kind == "O" for d in frame.dtypes]]:
        cells = frame[col]
        if cells.map(is_list_cell).any():
            lists[col] = cells.map(lambda v: json.dumps(np.asarray(v).tolist(),
                                                        ensure_ascii=False) if is_list_cell(v)
                                   else v)
    return frame.assign(**lists) if lists else frame
