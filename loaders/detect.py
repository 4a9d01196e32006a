"""Which format a path holds, told by its content first and its name second: the registry
of formats (:data:`loaders.formats.LOG_FORMATS`) walked in its detection order."""

from __future__ import annotations

from pathlib import Path

from loaders.errors import NoLogFoundError
from loaders.files import SNIFF_BYTES, read_prefix
from loaders.formats import EXPECTED, LOG_FORMATS, LogFormat, Sniff
from loaders.rundir.layout import ROLLOUTS

__all__ = ["detect_format", "is_rollouts_folder"]


def _binary(head: bytes, text_suffix: bool) -> bool:
    """Whether a file's first bytes are no text: for a file named like a text log, mostly
    bytes that are not UTF-8 (a few bad bytes or NULs are text with flaws the reader reports);
    for any other name, any NUL byte."""
    if not text_suffix:
        return b"\0" in head
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > 0.1 * max(len(text), 1)


def is_rollouts_folder(path: str | Path) -> bool:
    """A run's ``rollouts/`` folder (named so, holding ``step-`` files): its run directory is
    the log, not each step file."""
    path = Path(path)
    return path.name == ROLLOUTS and path.is_dir() and \
        any(p.name.startswith("step-") for p in path.iterdir())


def _in_detection_order() -> list[LogFormat]:
    """The formats whose content is not text first, then the text ones, each in registry
    order."""
    formats = list(LOG_FORMATS.values())
    return [f for f in formats if not f.text] + [f for f in formats if f.text]


def detect_format(path: str | Path) -> str:
    """The format of a file or directory, one of :data:`loaders.formats.FORMATS`.

    A directory is the first format whose ``folder`` part takes it (a run: ``run.json`` or
    ``rollouts/``; a verl dump: ``N.jsonl`` files; a batch dump: ``.pkl`` files). A file
    (regular ones only; only a bounded prefix is read) is the first format whose ``file``
    part takes it, binary formats first (Parquet and pickle by their first bytes); text
    formats only once the file is text (not empty, not binary): JSON lines whose first object
    has verl's fields are a verl dump, then the name, checked against the content (a
    ``.parquet`` without Parquet's magic bytes, a ``.jsonl`` whose first line is no JSON
    object is no log). Raises :class:`NoLogFoundError` when nothing fits.
    """
    path = Path(path)
    if not path.exists():
        raise NoLogFoundError(f"{path}: no such file or directory")
    order = _in_detection_order()
    if path.is_dir():
        found = next((f.name for f in order if f.folder is not None and f.folder(path)), None)
        if found is not None:
            return found
        names = sorted(p.name for p in path.iterdir())[:8]
        hint = f" (a run's {ROLLOUTS}/ folder? pass the run directory, {path.parent})" \
            if is_rollouts_folder(path) else ""
        raise NoLogFoundError(f"{path}: no logs found in this directory; {EXPECTED}. "
                              f"It holds: {', '.join(names) if names else 'nothing'}{hint}")
    files = [f for f in order if f.file is not None]
    head = read_prefix(path)  # refuses FIFOs and devices before opening them
    sniff = Sniff(path, path.suffix.lower(), head, whole=len(head) < SNIFF_BYTES)
    checked = False
    for fmt in files:
        if fmt.text and not checked:
            empty = _text_checks(sniff, files)
            if empty is not None:
                return empty
            checked = True
        if fmt.file(sniff):
            return fmt.name
    raise NoLogFoundError(f"{path}: unknown log format (pass --format); {EXPECTED}")


def _text_checks(sniff: Sniff, formats: list[LogFormat]) -> str | None:
    """What every text log passes before its format is told: content (an empty file named
    like a text table is that table, returned, whose reader says it is empty), and text."""
    text_suffixes = {s for f in formats if f.text for s in (*f.suffixes, *f.sniffed)}
    if not sniff.head:
        claimed = next((f.name for f in formats if f.text and sniff.suffix in f.suffixes),
                       None)
        if claimed is None:
            raise NoLogFoundError(f"{sniff.path}: the file is empty; {EXPECTED}")
        return claimed
    if _binary(sniff.head, text_suffix=sniff.suffix in text_suffixes):
        raise NoLogFoundError(f"{sniff.path}: binary content, not a text log; {EXPECTED}")
    return None
