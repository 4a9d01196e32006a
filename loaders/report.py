"""What a loader did besides returning rows: rows it skipped and why, and assumptions it made.

Every loader fills one :class:`LoadReport`; nothing is skipped without landing here. The report
travels with the frame as a plain JSON-able dict in ``frame.attrs["load_report"]`` (pandas
writes attrs into Parquet files and copies them on every operation, so only plain data belongs
there); :func:`report_of` turns it back into a :class:`LoadReport`. ``g2po validate`` prints it.
Skips also raise one :class:`LoadWarning` per reason, so a library user sees them unasked.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

__all__ = ["LoadReport", "LoadWarning", "Skip", "attach_report", "report_of", "step_ranges"]

#: Locations kept per skip reason; the count keeps growing past this.
_MAX_WHERE = 5


class LoadWarning(UserWarning):
    """Rows were skipped while reading a log (a truncated last line, an exact duplicate, …)."""


@dataclass
class Skip:
    """Rows skipped for one reason: how many, and the first few places (``file:line``)."""

    reason: str
    count: int = 0
    where: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        shown = ", ".join(self.where)
        more = f" and {self.count - len(self.where)} more" if self.count > len(self.where) else ""
        return f"{self.count} row(s) skipped: {self.reason} ({shown}{more})"


@dataclass
class LoadReport:
    """Skipped rows by reason, and notes on assumptions (defaults filled in, fields derived).

    ``source`` is the path the loader opened, ``format`` the format it read it as;
    ``assumed`` maps each step-table column the loader filled in rather than read to why (its
    note), so that summaries show those values as unknown (:mod:`loaders.summary`).
    """

    source: str = ""
    format: str = ""
    skips: dict[str, Skip] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    assumed: dict[str, str] = field(default_factory=dict)

    def skip(self, reason: str, where: str, count: int = 1) -> None:
        """Count ``count`` rows skipped for ``reason`` at ``where`` (``file:line``)."""
        entry = self.skips.setdefault(reason, Skip(reason))
        entry.count += count
        if len(entry.where) < _MAX_WHERE:
            entry.where.append(where)

    def note(self, message: str) -> None:
        """Record an assumption once (repeated notes are kept once)."""
        if message not in self.notes:
            self.notes.append(message)

    def assume(self, column: str, why: str) -> None:
        """Record that ``column``'s values were filled in, not read from the log (``why``, also
        kept as a note, says with what)."""
        self.assumed.setdefault(column, why)
        self.note(why)

    @property
    def n_skipped(self) -> int:
        return sum(s.count for s in self.skips.values())

    def merge(self, other: LoadReport) -> None:
        """Fold another report (e.g. one training step's) into this one."""
        for reason, entry in other.skips.items():
            mine = self.skips.setdefault(reason, Skip(reason))
            mine.count += entry.count
            mine.where.extend(entry.where[: max(0, _MAX_WHERE - len(mine.where))])
        for message in other.notes:
            self.note(message)
        for column, why in other.assumed.items():
            self.assumed.setdefault(column, why)

    def warn(self, stacklevel: int = 3) -> None:
        """Issue one :class:`LoadWarning` per skip reason."""
        for entry in self.skips.values():
            warnings.warn(f"{self.source}: {entry}", LoadWarning, stacklevel=stacklevel)

    def lines(self) -> list[str]:
        """Human-readable lines: skips first, then notes."""
        return [str(s) for s in self.skips.values()] + list(self.notes)

    def to_dict(self) -> dict:
        """Plain data (JSON-able): source, format, n_skipped, skipped by reason, notes."""
        return {"source": self.source, "format": self.format, "n_skipped": self.n_skipped,
                "skipped": {r: {"count": s.count, "where": list(s.where)}
                            for r, s in self.skips.items()},
                "notes": list(self.notes), "assumed": dict(self.assumed)}

    @classmethod
    def from_dict(cls, data: dict) -> LoadReport:
        skips = {r: Skip(r, int(v["count"]), list(v["where"]))
                 for r, v in (data.get("skipped") or {}).items()}
        return cls(data.get("source", ""), data.get("format", ""), skips,
                   list(data.get("notes") or []), dict(data.get("assumed") or {}))


def attach_report(frame, report: LoadReport):
    """Put the report on a frame (as plain data) and return the frame."""
    frame.attrs["load_report"] = report.to_dict()
    return frame


def report_of(frame) -> LoadReport:
    """The report a loader attached to a frame (an empty one if none)."""
    data = frame.attrs.get("load_report")
    if isinstance(data, LoadReport):
        return data
    return LoadReport.from_dict(data) if isinstance(data, dict) else LoadReport()


def step_ranges(values: list[int]) -> str:
    """``1-3, 7`` for [1, 2, 3, 7]: a short description of a list of training steps."""
    parts: list[str] = []
    start = prev = None
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            parts.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = v
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(parts)
