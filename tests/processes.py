"""Processes seen through /proc: what the tests of process clean-up look at (a pool's workers,
a test session's background runs) once the process that started them has gone."""

from __future__ import annotations

from pathlib import Path

__all__ = ["running", "naming"]


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie waiting to be reaped has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def naming(marker: str) -> list[int]:
    """The processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdecimal():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
