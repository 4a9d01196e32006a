"""Reading text logs line by line, with the failure modes of logs that are still being written.

A last line without its newline that does not parse is a write in progress: it is skipped with
a warning. A malformed line anywhere else is an error naming the file and line. Bytes that are
not UTF-8 are replaced by U+FFFD and reported; the row is kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from loaders.errors import LogFormatError
from loaders.files import read_bytes
from loaders.report import LoadReport

__all__ = ["read_jsonl", "decode_text", "TRUNCATED"]

TRUNCATED = "truncated last line (a file still being written)"
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


def read_jsonl(path: Path | str, report: LoadReport) -> tuple[list[dict], list[int]]:
    """Parse a JSON-lines file into objects and their 1-based line numbers.

    Blank lines hold no row and are passed over. Raises :class:`LogFormatError` for a file that
    is empty, a malformed or too deeply nested line that is not the unfinished last one, a line
    that is not a JSON object, or a line longer than :data:`loaders.files.MAX_LINE_BYTES`.
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
    rows: list[dict] = []
    numbers: list[int] = []
    last = len(lines)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            if number == last and not finished:
                report.skip(TRUNCATED, f"{path}:{number}")
                continue
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
        if "\\u" in line and _SURROGATE.search(line):
            value = _replace_surrogates(value, path, number, report)
        rows.append(value)
        numbers.append(number)
    if not rows and not report.skips:
        raise LogFormatError(f"{path}: the file holds no rows")
    return rows, numbers


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
