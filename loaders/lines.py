"""Reading text logs line by line, with the failure modes of logs that are still being written.

A last line without its newline that does not parse is a write in progress: it is skipped with
a warning. A malformed line anywhere else (not JSON, nested too deeply, not an object) costs
that line, not the file: it is skipped, counted in the report under :data:`MALFORMED` with its
``file:line``, and handed back (:attr:`JsonLines.malformed`) so the reader can say which
trajectory lost it (:func:`loaders.incomplete.mark_incomplete`); ``strict`` makes it an error
naming the file and line. A file none of whose lines reads is an error either way. Bytes that
are not UTF-8 are replaced by U+FFFD and reported; the row is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from loaders.errors import LogFormatError
from loaders.files import read_bytes
from loaders.report import LoadReport

__all__ = ["read_jsonl", "decode_text", "JsonLines", "TRUNCATED", "MALFORMED"]

TRUNCATED = "truncated last line (a file still being written)"
#: The report's reason for a malformed line skipped (without ``strict``): a JSON line that is
#: no object, a CSV record with another number of fields than its header.
MALFORMED = "malformed line, skipped (the notes say which trajectory lost it)"
_INVALID_UTF8 = "invalid UTF-8 bytes, replaced by U+FFFD (row kept)"


def decode_text(data: bytes, path: Path | str, report: LoadReport, first_line: int = 1) -> str:
    """Decode UTF-8; on bad bytes note every line holding some, and replace them."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    bad: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=first_line):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            bad.append(f"line {number} byte 0x{raw[err.start]:02x} at column {err.start + 1}")
    shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more line(s)" if len(bad) > 5 else "")
    report.note(f"{path}: {_INVALID_UTF8}: {shown}")
    return data.decode("utf-8", errors="replace")


@dataclass
class JsonLines:
    """The objects of a JSON-lines file: ``rows`` and their 1-based line numbers
    (``numbers``), and the lines skipped as malformed (``malformed``: line number -> its
    text)."""

    rows: list[dict]
    numbers: list[int]
    malformed: dict[int, str] = field(default_factory=dict)


def read_jsonl(path: Path | str, report: LoadReport, *, strict: bool = False) -> JsonLines:
    """Parse a JSON-lines file into objects and their 1-based line numbers.

    Blank lines hold no row and are passed over; the unfinished last line of a file still
    being written is skipped (:data:`TRUNCATED`); a malformed line elsewhere (no JSON, nested
    too deeply, no object) is skipped too (:data:`MALFORMED`), unless ``strict``. Raises
    :class:`LogFormatError` naming the file and line for a file that is empty, a malformed
    line under ``strict``, a file whose every line is malformed (the first is named), or a
    line longer than :data:`loaders.files.MAX_LINE_BYTES`.
    """
    path = Path(path)
    data = read_bytes(path)
    if not data.strip():
        raise LogFormatError(f"{path}: the file is empty: no rows to read")
    text = decode_text(data, path, report)
    lines = text.split("\n")
    finished = text.endswith("\n")
    if finished:
        lines.pop()
    out = JsonLines([], [])
    first_error: LogFormatError | None = None
    last = len(lines)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = _object(line, path, number)
        except LogFormatError as err:
            if number == last and not finished:
                report.skip(TRUNCATED, f"{path}:{number}")
                continue
            if strict:
                raise
            first_error = first_error or err
            out.malformed[number] = line
            continue
        if "\\u" in line and _SURROGATE.search(line):
            value = _replace_surrogates(value, path, number, report)
        out.rows.append(value)
        out.numbers.append(number)
    if not out.rows and first_error is not None:
        raise first_error  # no line reads: the file is no JSON lines, not one bad line
    for number in out.malformed:
        report.skip(MALFORMED, f"{path}:{number}")
    if not out.rows and not report.skips:
        raise LogFormatError(f"{path}: the file holds no rows")
    return out


def _object(line: str, path: Path, number: int) -> dict:
    """One line's JSON object; :class:`LogFormatError` naming the line otherwise."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        raise LogFormatError(
            f"{path}:{number}: malformed JSON line ({err.msg} at column {err.colno}): "
            f"{_excerpt(line)}"
        ) from None
    except RecursionError:
        raise LogFormatError(f"{path}:{number}: JSON nested too deeply to read (a log line "
                             "holds flat fields)") from None
    if not isinstance(value, dict):
        raise LogFormatError(
            f"{path}:{number}: expected one JSON object per line, got {type(value).__name__}"
        )
    return value


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = "lone UTF-16 surrogates in JSON text, replaced by U+FFFD (row kept)"


def _replace_surrogates(record: dict, path: Path, number: int, report: LoadReport) -> dict:
    """Text fields holding a lone surrogate escape (``"\\ud800"``: no character, cannot be
    written as UTF-8) get U+FFFD there, like invalid UTF-8 bytes; pairs stay one character."""
    fixed = {}
    for key, value in record.items():
        if isinstance(value, str):
            clean = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            if clean != value and not any(_LONE_SURROGATE in n for n in report.notes):
                report.note(f"{path}: {_LONE_SURROGATE}: first at line {number}, field {key!r}")
            value = clean
        fixed[key] = value
    return fixed


def _excerpt(text: str, width: int = 60) -> str:
    return repr(text[:width] + ("…" if len(text) > width else ""))
