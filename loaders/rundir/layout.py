"""Where a run directory keeps what, and what its ``rollouts/`` folder and ``run.json`` hold:
the names the writer, the reader, ``g2po validate`` and the trainers share (see
:mod:`loaders.rundir` for the layout)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from loaders.errors import LogFormatError
from loaders.files import read_bytes

__all__ = ["RUN_FORMAT", "RUN_VERSION", "MANIFEST", "ROLLOUTS", "METRICS", "CHECKPOINTS",
           "CHECKPOINT_TMP_PREFIX", "step_path", "is_run_dir", "stale_checkpoints",
           "read_manifest", "StepFiles"]

RUN_FORMAT = "g2po-run"
RUN_VERSION = 1
MANIFEST = "run.json"
ROLLOUTS = "rollouts"
METRICS = "metrics.jsonl"
#: The trainers' checkpoint folder inside a run (``g2po.trainers.checkpoint``), and the prefix of
#: a checkpoint being written (``.tmp-step-000010-<pid>``, renamed into place when complete).
CHECKPOINTS = "checkpoints"
CHECKPOINT_TMP_PREFIX = ".tmp-step-"
_STEP_RE = re.compile(r"^step-(\d+)\.parquet$")
#: A step file being written, or left by a crash (the writer's temporary name).
PENDING_GLOB = ".step-*.tmp-*"
_PENDING_RE = re.compile(r"^\.step-.*\.tmp-")


def step_path(run_dir: str | Path, train_step: int) -> Path:
    """Where a training step's rows live: ``rollouts/step-000001.parquet``."""
    return Path(run_dir) / ROLLOUTS / f"step-{train_step:06d}.parquet"


def is_run_dir(path: str | Path) -> bool:
    """A directory with ``run.json`` or a ``rollouts/`` folder of step files."""
    path = Path(path)
    return (path / MANIFEST).is_file() or (path / ROLLOUTS).is_dir()


def stale_checkpoints(folder: str | Path) -> list[Path]:
    """Checkpoint folders a killed save left half-written (``.tmp-step-*``), in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name.startswith(CHECKPOINT_TMP_PREFIX) and p.is_dir())


def read_manifest(path: Path) -> dict:
    """A run's ``run.json``, checked: a JSON object of this format and a version this reader
    knows; :class:`LogFormatError` names the field otherwise."""
    try:
        manifest = json.loads(read_bytes(path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise LogFormatError(f"{path}: not a readable run manifest: {err}") from None
    if not isinstance(manifest, dict):
        raise LogFormatError(f"{path}: a run manifest is a JSON object")
    fmt = manifest.get("format", RUN_FORMAT)
    if fmt != RUN_FORMAT:
        raise LogFormatError(f"{path}: field 'format' is {fmt!r}, expected {RUN_FORMAT!r}")
    version = manifest.get("version", RUN_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LogFormatError(f"{path}: field 'version' must be a whole number >= 1 (this "
                             f"reader writes {RUN_VERSION}), got {version!r}")
    if version > RUN_VERSION:
        raise LogFormatError(f"{path}: run format version {version!r} is newer than this "
                             f"reader ({RUN_VERSION}); upgrade g2po")
    return manifest


@dataclass(frozen=True)
class StepFiles:
    """The entries of a run's ``rollouts/`` folder, listed once for every reader (the app,
    ``g2po validate``, ``g2po advantages``, the writer's resume), so that all of them see the
    same training steps and refuse the same broken ones.

    Every entry named ``step-N.parquet`` claims training step N, whatever it is: a step claimed
    twice, or by something that is no regular file (a folder, a FIFO), is a training step whose
    file :meth:`file` refuses, naming the entry, rather than one left out unsaid.
    """

    folder: Path
    #: the entries claiming each training step, in name order
    claims: dict[int, list[Path]]
    #: the claiming entries that are no regular file (a FIFO, a device, a folder)
    special: frozenset[Path]
    #: names in the folder that claim no step (hidden names aside)
    others: list[str]
    #: step files being written, or left by a crash (``.step-*.tmp-*``)
    pending: list[str]

    @classmethod
    def scan(cls, run_dir: str | Path) -> StepFiles:
        """List ``run_dir/rollouts`` (empty when there is none)."""
        folder = Path(run_dir) / ROLLOUTS
        claims: dict[int, list[Path]] = {}
        special, others, pending = set(), [], []
        entries = sorted(os.scandir(folder), key=lambda e: e.name) if folder.is_dir() else []
        for entry in entries:
            match = _STEP_RE.match(entry.name)
            if match:
                claims.setdefault(int(match.group(1)), []).append(Path(entry.path))
                if not entry.is_file():  # follows links; FIFOs, devices, folders are no files
                    special.add(Path(entry.path))
            elif _PENDING_RE.match(entry.name):
                pending.append(entry.name)
            elif not entry.name.startswith("."):
                others.append(entry.name)
        return cls(folder, claims, frozenset(special), others, pending)

    @property
    def steps(self) -> list[int]:
        """Every training step some entry claims, ascending."""
        return sorted(self.claims)

    @property
    def landed(self) -> list[int]:
        """The training steps with a regular step file, ascending (a writer's finished
        steps)."""
        return sorted(s for s, paths in self.claims.items()
                      if any(p not in self.special for p in paths))

    def file(self, train_step: int) -> Path:
        """The one step file of ``train_step``; :class:`LogFormatError` naming the entries when
        two claim it or it is no regular file."""
        paths = self.claims[train_step]
        if len(paths) > 1:
            raise LogFormatError(self._claimed_twice(train_step))
        if paths[0] in self.special:
            raise LogFormatError(f"{paths[0]}: not a regular file (a FIFO, device or folder); "
                                 f"training step {train_step} is not read: remove or rename it")
        return paths[0]

    def unreadable(self) -> list[int]:
        """The training steps :meth:`file` refuses (claimed twice, or by no regular file),
        ascending."""
        return sorted(s for s, paths in self.claims.items()
                      if len(paths) > 1 or paths[0] in self.special)

    def why_unreadable(self, train_step: int) -> str:
        """Why :meth:`file` refuses ``train_step``, in a few words naming the entries."""
        paths = self.claims[train_step]
        if len(paths) > 1:
            return f"step {train_step} is claimed by {' and '.join(p.name for p in paths)}"
        return f"step {train_step}'s {paths[0].name} is no regular file (a FIFO, device or folder)"

    def problems(self) -> list[str]:
        """Training steps claimed by more than one entry (a read of such a step, or of one
        claimed by no regular file, raises what :meth:`file` says)."""
        return [self._claimed_twice(step) for step, paths in sorted(self.claims.items())
                if len(paths) > 1]

    def _claimed_twice(self, train_step: int) -> str:
        names = " and ".join(p.name for p in self.claims[train_step])
        return (f"{self.folder}: training step {train_step} is claimed by {names}; keep one "
                "step file per step")
