"""The groups table of a whole log, training step by training step, cached on disk.

:func:`triage_log` reads only the columns the table needs (the checks' and the state-key
strategy's, :func:`g2po.analysis.group_table.read_columns`), computes it in batches of about
``batch_rows`` step rows (:func:`g2po.analysis.group_table.group_rows`), with a progress
callback, and keeps each step's rows on disk keyed by its file's identity (path, size,
modification time), the G2PO parameters, the outcome rule, the credit the run states it
trained with (its manifest: what the recorded-credit check recomputes) and the registered
checks, so a run opened again is read from the cache and a step file that changed is
computed again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from g2po.analysis.checks import fingerprint
from g2po.analysis.findings import assess
from g2po.analysis.group_table import (
    coded,
    group_rows,
    read_columns,
    text_lookup,
    triage_columns,
    triage_groups,
)
from g2po.analysis.recorded import StatedCredit, stated_credit
from g2po.cache import atomic_file, user_cache_dir
from g2po.outcomes import OutcomeRule
from g2po.params import DEFAULT_PARAMS, G2POParams

__all__ = ["triage_log", "cache_dir", "TRIAGE_VERSION"]

#: Bump when the table's meaning changes: cached tables of another version are not used (a
#: check's own ``version`` is in the key too, :func:`g2po.analysis.checks.fingerprint`).
TRIAGE_VERSION = 6


class _Log(Protocol):  # what triage_log needs of a loaders.Log
    path: Path
    format: str
    manifest: dict

    def train_steps(self) -> list[int]: ...
    def columns_of_steps(self, train_steps: Sequence[int], columns: Sequence[str]
                         ) -> Iterable[tuple[int, pd.DataFrame]]: ...
    def step_source(self, train_step: int) -> Path | None: ...
    def rule(self) -> OutcomeRule: ...


def _validity_known(log: _Log) -> bool:
    """False when the log's loader filled ``is_action_valid`` in rather than read it (its
    report says so): the invalid rate is then unknown."""
    report = getattr(log, "report", None)
    return "is_action_valid" not in (getattr(report, "assumed", None) or {})


def cache_dir() -> Path:
    """Where groups tables are cached: ``$G2PO_CACHE/triage`` (default ``~/.cache/g2po``)."""
    return user_cache_dir() / "triage"


def _identity(log: _Log, train_step: int) -> tuple[str, int, int] | None:
    """(path, size, mtime in ns) of the file holding one training step, or None."""
    source = log.step_source(train_step)
    if source is None:
        return None
    try:
        stat = Path(source).stat()
    except OSError:
        return None
    return str(Path(source).resolve()), int(stat.st_size), int(stat.st_mtime_ns)


def _cache_file(log: _Log, rule: OutcomeRule, params: G2POParams, folder: Path,
                stochastic: bool = False, credit: StatedCredit | None = None) -> Path:
    from g2po import __version__

    key = json.dumps({"v": TRIAGE_VERSION, "g2po": __version__, "format": log.format,
                      "path": str(Path(log.path).resolve()),
                      "read": repr(sorted(getattr(log, "read_options", {}).items())),
                      "params": params.as_dict(), "rule": repr(rule),
                      "stochastic": stochastic, "checks": fingerprint(),
                      "credit": credit.as_dict() if credit is not None else None},
                     sort_keys=True, default=str)
    return folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.parquet"


def _still_valid(old: pd.DataFrame, identity: dict[int, tuple | None]) -> np.ndarray:
    """(n_rows,) bool: the cached rows of the steps asked for whose file is unchanged (its
    path, size and modification time as when the rows were computed)."""
    asked = [s for s, ident in identity.items() if ident is not None]
    known = pd.DataFrame([identity[s] for s in asked], index=asked,
                         columns=["_source", "_size", "_mtime_ns"])
    steps = old["train_step"].astype(np.int64)
    now = known.reindex(steps.to_numpy())
    return (steps.isin(asked).to_numpy()
            & (now["_source"].to_numpy() == old["_source"].to_numpy())
            & (now["_size"].to_numpy() == old["_size"].to_numpy())
            & (now["_mtime_ns"].to_numpy() == old["_mtime_ns"].to_numpy()))


def _with_identity(table: pd.DataFrame, identity: dict[int, tuple | None]) -> pd.DataFrame:
    """``table`` with each row's step file identity (("", -1, -1) where it has none)."""
    steps = table["train_step"].astype(np.int64).to_numpy()
    ident = [identity.get(int(s)) or ("", -1, -1) for s in np.unique(steps)]
    known = pd.DataFrame(ident, index=np.unique(steps),
                         columns=["_source", "_size", "_mtime_ns"]).reindex(steps)
    return table.assign(_source=known["_source"].to_numpy(),
                        _size=known["_size"].to_numpy(np.int64),
                        _mtime_ns=known["_mtime_ns"].to_numpy(np.int64))


def _read_cache(path: Path) -> pd.DataFrame | None:
    try:
        frame = pd.read_parquet(path)
    except Exception:  # noqa: BLE001 - a missing, partial or foreign file is no cache
        return None
    needed = {"_source", "_size", "_mtime_ns", *triage_columns()}
    return frame if needed <= set(frame.columns) else None


def _write_cache(path: Path, frame: pd.DataFrame) -> None:
    """Write atomically (a reader never sees half a file); a cache that cannot be written is
    no error."""
    try:
        with atomic_file(path) as tmp:
            frame.to_parquet(tmp, index=False)
    except OSError:
        pass


def triage_log(
    log: _Log,
    train_steps: Sequence[int] | None = None,
    *,
    rule: OutcomeRule | None = None,
    params: G2POParams = DEFAULT_PARAMS,
    cache: bool | Path = True,
    progress: Callable[[int, int], None] | None = None,
    batch_rows: int = 200_000,
    stochastic: bool = False,
    estimator: str = "g2po",
) -> pd.DataFrame:
    """The groups table (:func:`triage_groups`) of ``train_steps`` of a log (default: all),
    under ``rule`` (default: the log's own, :meth:`loaders.Log.rule`).

    Training steps are read with only the columns the table needs and computed in batches of
    about ``batch_rows`` step rows. With ``cache`` (True: :func:`cache_dir`, or a folder),
    each step's rows are kept on disk with the identity of its file (path, size, mtime): a
    step whose file is unchanged is not read again, one whose file changed is. Logs that are
    one table in memory have no step files and are computed each time. ``progress`` is called
    with (training steps done, training steps in all) as the work goes: first with those the
    cache held, then as each step is read, last with (all, all). ``stochastic`` and
    ``estimator`` as in :func:`triage_groups`; the severity is judged over the whole table
    (a run-wide alarm does not rank, :func:`run_findings`). What the run's manifest states it
    trained with (:func:`g2po.analysis.recorded.stated_credit`) is what the recorded-credit
    check recomputes; where it states nothing, each estimator ``estimator`` may name.
    """
    rule = rule or log.rule()
    credit = stated_credit(getattr(log, "manifest", None))
    steps = list(log.train_steps() if train_steps is None else train_steps)
    folder = None if cache is False else (cache_dir() if cache is True else Path(cache))
    identity = {s: _identity(log, s) for s in steps}
    path = _cache_file(log, rule, params, folder, stochastic, credit) \
        if folder is not None else None
    beside = credit.beside(params.state_key) if credit is not None else None
    old = _read_cache(path) if path is not None and any(identity.values()) else None
    cached = _still_valid(old, identity) if old is not None else None
    done: list[pd.DataFrame] = [] if cached is None else [old[cached]]
    held = set() if cached is None else set(old.loc[cached, "train_step"].astype(int))
    todo = [s for s in steps if s not in held]
    total, count = len(steps), len(steps) - len(todo)
    if progress is not None:
        progress(count, total)
    batch: list[pd.DataFrame] = []
    batch_text: list[dict[str, pd.Series]] = []  # each step's key and action text, uncoded
    batch_steps: list[int] = []
    rows_in_batch = 0
    applied = params.state_key  # the strategy left once the distinct keys were mapped

    def flush() -> None:
        nonlocal batch, batch_text, batch_steps, rows_in_batch, count
        if not batch:
            return
        frame = batch[0] if len(batch) == 1 else pd.concat(batch, ignore_index=True)
        table = group_rows(frame, rule=rule, params=replace(params, state_key=applied),
                           stochastic=stochastic, text=text_lookup(batch_text),
                           validity_known=_validity_known(log), credit=beside)
        done.append(_with_identity(table, identity))
        count += len(batch_steps)
        batch, batch_text, batch_steps, rows_in_batch = [], [], [], 0
        if progress is not None:
            progress(count, total)

    columns = read_columns(params.state_key, *([beside.state_key] if beside else []))
    for s, frame in log.columns_of_steps(todo, columns):
        frame = frame.assign(train_step=np.int64(s))
        batch_text.append({"state_key": frame["state_key"], "action": frame["action"]})
        frame, applied = coded(frame, params.state_key)
        batch.append(frame)
        batch_steps.append(s)
        rows_in_batch += len(frame)
        if rows_in_batch >= batch_rows:
            flush()
        elif progress is not None:  # reading is most of the work: count a step once read
            progress(count + len(batch_steps), total)
    flush()
    if not done:
        return triage_groups(pd.DataFrame(), rule=rule)
    out = done[0] if len(done) == 1 else pd.concat(done, ignore_index=True)
    if path is not None and todo and any(identity.values()):
        keep = [out[out["_size"].to_numpy() >= 0]]  # steps with a file to tell them by
        if old is not None:  # steps not asked for this time stay cached
            keep.append(old[~old["train_step"].isin(steps)])
        _write_cache(path, pd.concat(keep, ignore_index=True))
    position = out["train_step"].map({s: i for i, s in enumerate(steps)}).to_numpy()
    out = out.iloc[np.argsort(position, kind="stable")].reset_index(drop=True)[triage_columns()]
    return assess(out.astype({"no_signal": bool, "no_signal_grpo": bool}), estimator)
