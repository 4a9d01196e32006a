"""Checkpoints of a local run, and rewinding the run directory to one on resume.

A checkpoint is a folder ``step-000010/`` in the run's checkpoint folder (by default
``run_dir/checkpoints/``) holding the model and tokenizer
(``save_pretrained``) and ``trainer_state.pt`` (optimizer state, training step, every random
number generator's state). It is written under a temporary name and renamed into place, so a
kill leaves either the whole checkpoint or none.

Resuming from step K means the run directory must say exactly what happened up to K and
nothing after: step files of later steps are deleted and ``metrics.jsonl`` keeps only lines of
steps up to K. Those later steps are then trained and logged again, each once. A kill during a
save leaves a full-size ``.tmp-step-…`` folder; resuming removes those too (``g2po validate``
lists any it finds).
"""

from __future__ import annotations

import os
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from loaders.rundir import CHECKPOINT_TMP_PREFIX, CHECKPOINTS, stale_checkpoints

__all__ = [
    "Checkpoint",
    "CHECKPOINTS",
    "checkpoint_folder",
    "save_checkpoint",
    "latest_checkpoint",
    "list_checkpoints",
    "load_trainer_state",
    "rng_state",
    "restore_rng",
    "rewind_run",
    "remove_stale_checkpoints",
]

STATE_FILE = "trainer_state.pt"
_DIR_RE = re.compile(r"^step-(\d+)$")


@dataclass
class Checkpoint:
    """A complete checkpoint on disk."""

    path: Path
    train_step: int


def rng_state(task_rng: np.random.Generator) -> dict[str, Any]:
    """The state of every generator a run draws from (python, numpy, torch, CUDA, tasks)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state(), "tasks": task_rng.bit_generator.state}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any], task_rng: np.random.Generator) -> None:
    """Put every generator back in the state :func:`rng_state` recorded."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    task_rng.bit_generator.state = state["tasks"]
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _plain_state(state: dict[str, Any]) -> dict[str, Any]:
    """RNG states as tensors, numbers and lists only, so ``torch.load(weights_only=True)``
    reads them back (no pickled objects in a checkpoint)."""
    kind, keys, pos, has_gauss, cached = state["numpy"]
    version, internal, gauss_next = state["python"]
    return {**state,
            "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos),
                      int(has_gauss), float(cached)],
            "python": [version, list(internal), gauss_next]}


def _unplain_state(state: dict[str, Any]) -> dict[str, Any]:
    kind, keys, pos, has_gauss, cached = state["numpy"]
    version, internal, gauss_next = state["python"]
    return {**state, "numpy": (kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached),
            "python": (version, tuple(internal), gauss_next)}


def checkpoint_folder(run_dir: str | Path, folder: str | Path | None = None) -> Path:
    """Where a run's checkpoints live: ``folder``, or ``run_dir/checkpoints``."""
    return Path(folder) if folder else Path(run_dir) / CHECKPOINTS


def save_checkpoint(folder: str | Path, train_step: int, model, tokenizer, optimizer,
                    rng: dict[str, Any], *, keep: int = 2,
                    extra: dict[str, Any] | None = None) -> Checkpoint:
    """Write the checkpoint of ``train_step`` into ``folder`` atomically (under
    ``.tmp-step-…`` first, then renamed); delete all but the last ``keep``."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"step-{train_step:06d}"
    tmp = root / f"{CHECKPOINT_TMP_PREFIX}{train_step:06d}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    state = {"train_step": int(train_step), "optimizer": optimizer.state_dict(),
             "rng": _plain_state(rng), "extra": extra or {}}
    torch.save(state, tmp / STATE_FILE)
    for path in tmp.iterdir():
        with open(path, "rb") as f:
            os.fsync(f.fileno())
    if target.exists():  # a checkpoint of this step from before a rewind
        shutil.rmtree(target)
    os.replace(tmp, target)
    for old in list_checkpoints(root)[:-keep]:
        shutil.rmtree(old.path, ignore_errors=True)
    return Checkpoint(target, train_step)


def list_checkpoints(folder: str | Path) -> list[Checkpoint]:
    """Complete checkpoints in ``folder``, oldest first (temporary folders of a killed save
    are ignored)."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        match = _DIR_RE.match(entry.name)
        if match and (entry / STATE_FILE).is_file():
            found.append(Checkpoint(entry, int(match.group(1))))
    return sorted(found, key=lambda c: c.train_step)


def latest_checkpoint(folder: str | Path) -> Checkpoint | None:
    """The most recent complete checkpoint in ``folder``, or None."""
    found = list_checkpoints(folder)
    return found[-1] if found else None


def load_trainer_state(checkpoint: Checkpoint) -> dict[str, Any]:
    """Optimizer state, training step and RNG states (read with ``weights_only=True``)."""
    state = torch.load(checkpoint.path / STATE_FILE, map_location="cpu", weights_only=True)
    state["rng"] = _unplain_state(state["rng"])
    return state


def rewind_run(run_dir: str | Path, train_step: int,
               checkpoints: str | Path | None = None) -> list[int]:
    """Forget everything after ``train_step``: the run directory's later step files and
    metrics lines (:func:`loaders.rundir.rewind_run`) and the later checkpoints (in
    ``checkpoints``, default ``run_dir/checkpoints``). Returns the training steps removed."""
    from loaders.rundir import rewind_run as rewind_log

    run_dir = Path(run_dir)
    removed = rewind_log(run_dir, train_step)
    folder = checkpoint_folder(run_dir, checkpoints)
    for ckpt in list_checkpoints(folder):
        if ckpt.train_step > train_step:
            shutil.rmtree(ckpt.path, ignore_errors=True)
    remove_stale_checkpoints(folder)
    return removed


def remove_stale_checkpoints(folder: str | Path) -> list[Path]:
    """Delete the ``.tmp-step-…`` folders killed saves left in ``folder`` (each as large as a
    checkpoint), except one this process is writing. Returns the folders removed."""
    mine = f"-{os.getpid()}"
    removed = [p for p in stale_checkpoints(folder) if not p.name.endswith(mine)]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed
