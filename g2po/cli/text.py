"""What a command prints to a terminal: a table fitted to the terminal's width, with text from
logs shown on one line and its control characters shown, not obeyed."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable

import pandas as pd

__all__ = ["terminal_table", "terminal_line", "progress_bar", "write_records", "json_value"]


def json_value(value: object) -> object:
    """numpy scalars and arrays as JSON's numbers and lists; anything else as its text."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def write_records(table: pd.DataFrame, output: str) -> bool:
    """``table`` on stdout as ``output`` asks: ``csv`` (CR LF row ends, so a text with a line
    break reads back) or ``json`` (one record a row); False for ``table``, which the caller
    fits to the terminal itself. The one rule of every command's ``--format``."""
    if output == "csv":
        sys.stdout.write(table.to_csv(index=False, lineterminator="\r\n"))
    elif output == "json":
        import json

        print(json.dumps(table.to_dict(orient="records"), indent=1, ensure_ascii=False,
                         default=json_value))
    else:
        return False
    return True


def terminal_table(table: pd.DataFrame, *, max_rows: int | None = None, full: bool = False,
                   width: int | None = None, stretch: str | None = None) -> str:
    """The table as text for a terminal: floats to 4 places, line breaks and tabs inside text
    shown as spaces. Unless ``full``, it fits ``width`` (default: the terminal's width, none
    for a pipe): text columns are cut (with "…") to share what the numbers leave, and columns
    that still do not fit continue below, as pandas wraps them. A ``stretch`` column (the
    last, a sentence) instead takes all the others leave, left-aligned, the others kept
    whole while it has room for a few words."""
    hidden = 0
    if max_rows is not None and len(table) > max_rows:
        half = max(max_rows // 2, 1)
        hidden = len(table) - max_rows
        table = pd.concat([table.head(half), table.tail(max(max_rows - half, 1))])
    text_cols = [c for c in table.columns
                 if table[c].dtype == object or pd.api.types.is_string_dtype(table[c].dtype)]
    width = None if full else width or _terminal_width()
    if stretch is not None and stretch in table.columns:
        table = table.assign(**{c: _cut_column(table[c], None) for c in text_cols})
        rest = table.drop(columns=stretch)
        used = max(map(len, _lines(rest))) if len(rest.columns) else 0
        room = None if not width else width - used - 1
        if room is None or room >= max(12, len(stretch)):
            for _ in range(2):  # once more by what pandas' spacing added
                cut = _cut_column(table[stretch], room)
                pad = max(cut.map(len).max() if len(cut) else 0, len(stretch))
                lines = [line.rstrip() for line in _lines(table.assign(
                    **{stretch: cut.map(lambda v, pad=pad: v.ljust(pad))}).rename(
                    columns={stretch: str(stretch).ljust(pad)}))]  # left-aligned, header too
                over = max(map(len, lines)) - width if width else 0
                if over <= 0:
                    break
                room -= over
            if hidden:
                lines.insert(1 + max(max_rows // 2, 1),
                             f"… {hidden:,} rows not shown (--max-rows) …")
            return "\n".join(lines)
    if width and text_cols:
        with pd.option_context("display.float_format", "{:.4f}".format):
            numbers = table.drop(columns=text_cols).to_string(index=False).split("\n")[0]
        share = max((width - len(numbers) - 2 * len(text_cols)) // len(text_cols), 12)
        table = table.assign(**{c: _cut_column(table[c], max(share, len(str(c))))
                                for c in text_cols})
    elif text_cols:
        table = table.assign(**{c: _cut_column(table[c], None) for c in text_cols})
    lines = _lines(table, width)
    if hidden:
        lines.insert(1 + max(max_rows // 2, 1), f"… {hidden:,} rows not shown (--max-rows) …")
    return "\n".join(lines)


def terminal_line(text: str) -> str:
    """``text`` as one line for a terminal: its line breaks and tabs as spaces, control
    characters from logs shown (``\\x1b``), not obeyed."""
    return _cut(str(text), None)


def _lines(table: pd.DataFrame, width: int | None = None) -> list[str]:
    """pandas' text of the table, floats to 4 places, wrapped at ``width``."""
    with pd.option_context("display.width", None, "display.max_columns", None,
                           "display.max_colwidth", None, "display.float_format",
                           "{:.4f}".format):
        return table.to_string(index=False, line_width=width).split("\n")


def _terminal_width() -> int | None:
    """The terminal's width when printing to one (or when ``COLUMNS`` says it); None when the
    output goes to a pipe or file, which gets whole lines."""
    if os.environ.get("COLUMNS") or sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    return None


def _cut_column(column: pd.Series, width: int | None) -> pd.Series:
    return column.map(lambda value: _cut(value, width))


# Control characters (terminal escape sequences among them) from logs are shown, not obeyed.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}


def _cut(value, width: int | None):
    """One line of text of at most ``width`` characters (any length when None), with control
    characters from the log shown as ``\\x1b`` rather than sent to the terminal."""
    if not isinstance(value, str):
        return value
    value = " ".join(value.split()).translate(_CONTROLS)
    return value if width is None or len(value) <= width else value[: width - 1] + "…"


def progress_bar(enabled: bool, unit: str = "training steps", desc: str = "triage",
                 ) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """A progress bar on stderr (tqdm's when installed), counting ``unit``, and a function
    closing it; silent when stderr is no terminal."""
    if not enabled or not sys.stderr.isatty():
        return (lambda done, total: None), (lambda: None)
    try:
        from tqdm import tqdm
    except ImportError:
        def show(done: int, total: int) -> None:
            print(f"\r{desc}: {done}/{total} {unit}", end="", file=sys.stderr,
                  flush=True)
        return show, lambda: print(file=sys.stderr)
    bar = tqdm(total=0, unit=unit.split()[-1].rstrip("s"), desc=desc, file=sys.stderr,
               leave=False)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()
    return update, bar.close
