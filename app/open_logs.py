"""The sidebar's log opening: the logs of the command line, the path box and the uploads.

What may be opened (:func:`roots`): the ``--log`` paths (and the logs found under them), the
bundled samples, any ``--allow-dir`` folder, this session's uploads, and, while the app serves
this machine only (its default), the folder it was started in; anything else typed in the path
box, or named by a link, is refused with one message that reveals nothing of it. A path opened
in the path box is kept in the URL (``?open=PATH``, repeated), so a reload or a shared link
opens it again, for anyone the app lets open it. A table that lacks required columns (from the
command line, the path box or an upload) gets a column-mapping form, prefilled with the
loaders' suggestions. A log opened from the path box or an upload is chosen and made the run
in view at once, with its load report beside the input; errors are short and stand beside
the input that caused them. Runs are named by their folder or file, and where two share a
name, by what tells their paths apart (:func:`loaders.discover.distinct_names`, which
``g2po url`` names runs by too).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import loaders
from app import data
from app.context import AppContext, OpenLog
from app.data import LogRef
from app.options import SAMPLE_DIR, AppOptions
from app.safe import fmt
from app.serving import shared_address
from app.ui import show_short_error
from app.url_state import mark_read, unread_url_value
from g2po.app_url import OPEN
from g2po.errors import G2POError
from g2po.steps import REQUIRED_COLUMNS
from loaders.columns import missing_columns, suggest_mapping, table_columns
from loaders.discover import distinct_names
from loaders.formats import upload_types

__all__ = ["log_sources", "choose_runs", "open_chosen", "load_reports", "roots", "Sources",
           "EXTRA_PATHS", "OPEN_URL", "UPLOAD_TYPES", "MAPPING_ROLES"]

#: Session keys: paths opened from the path box, mappings chosen in the forms, the log opened
#: last from the path box or an upload (its report stays beside the input), upload ids seen.
EXTRA_PATHS = "_g2po_extra_paths"
MAPPINGS = "_g2po_mappings"
LAST_OPENED = "_g2po_last_opened"
SEEN_UPLOADS = "_g2po_seen_uploads"
PENDING_PATH = "_g2po_pending_path"
KNOWN_RUNS = "_g2po_known_runs"
#: The URL's name for a path opened in the path box (repeated for several).
OPEN_URL = OPEN
UPLOAD_TYPES = upload_types()
#: The roles of the mapping form: the required columns, then optional ones worth naming
#: (``task`` matches a task across training steps; ``done`` and ``won`` tell truncation and
#: success).
MAPPING_ROLES = (*REQUIRED_COLUMNS, "train_step", "observation", "task", "done", "won")
_NONE = "(none)"
_ERRORS = data.LOADER_ERRORS + (G2POError,)


@dataclass
class Sources:
    """The logs the sidebar offers, the one opened just now (to choose and show), and the
    place beside the inputs for the load report of the log opened last from them."""

    refs: list[LogRef]
    fresh: LogRef | None = None
    last_slot: object = None


def roots(options: AppOptions, command_line: list[LogRef]) -> list[Path]:
    """The folders and files whose logs may be opened: the ``--log`` paths and the logs found
    under them (symbolic links followed), the samples, ``--allow-dir`` folders, uploads, and
    the folder the app was started in while it serves this machine only (no one else can
    reach the path box then; shared on a network, only what it was given)."""
    here = [str(Path.cwd())] if shared_address() is None else []
    paths = [*options.logs, *(r.path for r in command_line), str(SAMPLE_DIR),
             *options.allow_dirs, str(data.upload_root()), *here]
    out = []
    for p in paths:
        try:
            out.append(Path(p).expanduser().resolve())
        except (OSError, RuntimeError):
            continue
    return out


def log_sources(options: AppOptions, panel) -> Sources:
    """Logs from the command line (or the bundled samples), then the path box and uploads,
    drawn in ``panel`` (a container at the foot of the sidebar)."""
    refs: list[LogRef] = []
    curves = dict(options.metrics)
    for index, path in enumerate(options.logs):
        try:
            found, notes = data.find_logs(path, options.format, options.read)
            if index in curves:
                found = data.with_metrics(found, path, curves[index])
        except _ERRORS as err:
            if options.from_sample:
                st.warning("No sample rollouts found (the bundled `sample_rollouts/` folder "
                           "is empty or missing). Open a log below, or start the app with "
                           "`streamlit run app/main.py -- --log PATH`.")
            else:
                show_short_error(f"Cannot open --log {path}", err)
            continue
        refs.extend(_mapped(found))
        for note in notes:
            st.caption(fmt("Skipped: {}", note))
    allowed = roots(options, refs)
    with panel:
        st.markdown("**Open another log**")
        fresh = _path_box(options, allowed, refs)
        fresh = _uploads(options, refs) or fresh
        last_slot = st.container()
    return Sources(_unique(refs), fresh, last_slot)


def _path_box(options: AppOptions, allowed: list[Path], refs: list[LogRef]) -> LogRef | None:
    state = st.session_state
    typed = st.text_input("Path to a run directory, a folder of runs, or a log file",
                          key="path_box", placeholder="/path/to/run_dir")
    if st.button("Open path", key="open_path") and typed.strip():
        state[PENDING_PATH] = typed.strip()
    _paths_from_url(options, allowed)
    fresh = None
    pending = state.get(PENDING_PATH)
    if pending:
        fresh = _open_typed(pending, options, allowed)
    for path in list(state.get(EXTRA_PATHS, [])):
        try:
            found, _ = _find_typed(path, options, allowed)
        except _ERRORS:
            state[EXTRA_PATHS].remove(path)  # gone since it was opened
            continue
        refs.extend(found)
    _paths_to_url(state.get(EXTRA_PATHS, []))
    return fresh


def _paths_from_url(options: AppOptions, allowed: list[Path]) -> None:
    """On a session's first run, the paths the URL opens (a reload, a shared link) are
    opened as if typed, where the roots allow them; one short refusal, naming nothing,
    for any that they do not."""
    if unread_url_value(OPEN_URL) is None:
        mark_read(OPEN_URL)
        return
    mark_read(OPEN_URL)
    extra = st.session_state.setdefault(EXTRA_PATHS, [])
    for path in st.query_params.get_all(OPEN_URL):
        try:
            _find_typed(path, options, allowed)
        except _ERRORS as err:
            show_short_error("The link opens a path that cannot be opened here", err)
            continue
        if path not in extra:
            extra.append(path)


def _paths_to_url(paths: list[str]) -> None:
    """The opened paths into the URL, one ``open`` each (a list: names repeat)."""
    if list(st.query_params.get_all(OPEN_URL)) == list(paths):
        return
    if paths:
        st.query_params[OPEN_URL] = list(paths)
    elif OPEN_URL in st.query_params:
        del st.query_params[OPEN_URL]


def _find_typed(typed: str, options: AppOptions, allowed: list[Path]
                ) -> tuple[list[LogRef], list[str]]:
    path = data.allowed_path(typed, allowed)
    found, notes = data.find_logs(path, None, options.read, allowed)
    return _mapped(found), notes


def _mapped(refs: list[LogRef]) -> list[LogRef]:
    """``refs`` with the mappings chosen in this session's forms."""
    mappings = st.session_state.get(MAPPINGS, {})
    return [LogRef(r.name, r.path, r.format, data.with_mapping(r.read, mappings[r.path]))
            if r.path in mappings else r for r in refs]


def _open_typed(typed: str, options: AppOptions, allowed: list[Path]) -> LogRef | None:
    """Open what the path box holds: a short error beside it, the mapping form for a table
    that needs one, or the log added (and returned, to be chosen)."""
    state = st.session_state
    try:
        found, _ = _find_typed(typed, options, allowed)
    except _ERRORS as err:
        show_short_error("Cannot open the path", err)
        state.pop(PENDING_PATH, None)
        return None
    if len(found) == 1 and not _ready(found[0], f"map:path:{found[0].path}"):
        return None  # the form is on screen until it is filled in
    opened = None
    for ref in found:
        try:
            data.open_log(ref, options.max_rows, options.cache_mb)
        except _ERRORS as err:
            show_short_error(f"Cannot open {ref.name}", err)
            continue
        opened = opened or ref
    state.pop(PENDING_PATH, None)
    if opened is None:
        return None
    extra = state.setdefault(EXTRA_PATHS, [])
    resolved = str(data.allowed_path(typed, allowed))  # the URL keeps where it is
    if resolved not in extra:
        extra.append(resolved)
    state[LAST_OPENED] = opened
    return opened


def _uploads(options: AppOptions, refs: list[LogRef]) -> LogRef | None:
    state = st.session_state
    uploads = st.file_uploader("Or upload step tables", type=UPLOAD_TYPES,
                               accept_multiple_files=True, key="uploads",
                               help="A CSV, JSONL or Parquet step table (up to the server's "
                                    "upload size and --max-rows rows).") or []
    store = data.session_uploads(state)
    data.forget_uploads(store, {u.file_id for u in uploads})
    seen = state.setdefault(SEEN_UPLOADS, set())
    fresh = None
    for upload in uploads:
        path = store.saved.get(upload.file_id)
        if path is None:
            path = data.save_upload(upload.name, upload.getvalue(),
                                    store.folder / upload.file_id)
            store.saved[upload.file_id] = path
        path = path.resolve()
        read = data.read_options(_table_format(path), options.read)
        mapping = state.get(MAPPINGS, {}).get(str(path))
        if mapping:
            read = data.with_mapping(read, mapping)
        ref = LogRef(f"upload: {upload.name}", str(path), None, read)
        if not _ready(ref, f"map:upload:{upload.file_id}"):
            continue
        try:
            data.open_log(ref, options.max_rows, options.cache_mb)
        except _ERRORS as err:
            show_short_error(f"Cannot open {upload.name}", err)
            continue
        refs.append(ref)
        if upload.file_id not in seen:
            seen.add(upload.file_id)
            state[LAST_OPENED] = fresh = ref
    return fresh


def _table_format(path: Path) -> str | None:
    try:
        return data.table_format(LogRef(path.name, str(path)))
    except _ERRORS:
        return None


def _ready(ref: LogRef, form_key: str) -> bool:
    """True when ``ref`` can be opened as it is; else draw the mapping form (a table lacking
    required columns) and return False until it is filled in (its choice reruns the app)."""
    try:
        fmt = data.table_format(ref)
    except _ERRORS:
        return True  # the loader names the problem when it opens
    if fmt is None:
        return True
    mapping = dict(dict(ref.read).get("mapping") or ())
    try:
        columns = table_columns(ref.path, fmt)
    except _ERRORS as err:
        show_short_error(f"Cannot read the columns of {ref.name}", err)
        return False
    missing = missing_columns(columns, mapping)
    if not missing or any(src not in columns for src in mapping.values()):
        return True  # complete, or a --map naming a column the file lacks: the loader says so
    chosen = _mapping_form(form_key, ref.name, columns, missing, mapping)
    if chosen is not None:
        st.session_state.setdefault(MAPPINGS, {})[ref.path] = chosen
        st.rerun()
    return False


def _mapping_form(key: str, name: str, columns: list[str], missing: list[str],
                  current: dict[str, str]) -> dict[str, str] | None:
    """A column for each role, prefilled with the current mapping or the loaders'
    suggestions; returns the mapping once submitted with every required role filled."""
    st.warning(fmt("{} has no column for {}: choose one for each role.", name,
                   ", ".join(missing)))
    suggested = {**suggest_mapping(columns), **current}
    options = [_NONE, *columns]
    with st.form(key, border=True):
        picked = {}
        for role in MAPPING_ROLES:
            default = suggested.get(role)
            label = fmt("{}", role) if role in REQUIRED_COLUMNS else fmt("{} (optional)", role)
            picked[role] = st.selectbox(label, options, key=f"{key}:{role}",
                                        index=options.index(default) if default in options
                                        else 0)
        submitted = st.form_submit_button("Open with this mapping")
    if not submitted:
        return None
    unset = [r for r in REQUIRED_COLUMNS if r != "is_action_valid" and picked[r] == _NONE]
    if unset:
        st.error(fmt("Choose a column for {}.", ", ".join(unset)))
        return None
    return {role: col for role, col in picked.items() if col != _NONE}


def _last_report(options: AppOptions) -> None:
    """Beside the inputs: the log opened last from them, with its load report."""
    ref = st.session_state.get(LAST_OPENED)
    if ref is None:
        return
    try:
        log = data.open_log(ref, options.max_rows, options.cache_mb)
    except _ERRORS:
        return
    steps = log.train_steps()
    st.success(fmt("Opened {}: {} training step(s).", ref.name, len(steps)))
    _report(ref.name, log, expanded=True)


def _unique(refs: list[LogRef]) -> list[LogRef]:
    """``refs`` once each (a path with the same options), named apart
    (:func:`distinct_names`)."""
    seen = set()
    out = []
    for ref in refs:
        if (ref.path, ref.read) not in seen:
            seen.add((ref.path, ref.read))
            out.append(ref)
    names = distinct_names([r.name for r in out], [r.path for r in out])
    return [r if n == r.name else LogRef(n, r.path, r.format, r.read)
            for r, n in zip(out, names, strict=True)]


def choose_runs(refs: list[LogRef], fresh: LogRef | None) -> list[LogRef]:
    """The runs multiselect: every log chosen at first, each one added later (a live
    folder's new run, an opened path or upload) chosen too; the one opened just now becomes
    the run in view."""
    state = st.session_state
    names = [r.name for r in refs]
    known = state.get(KNOWN_RUNS)
    if known is None or "runs" not in state:
        chosen = list(names)
    else:
        chosen = [n for n in state["runs"] if n in names]
        chosen += [n for n in names if n not in known and n not in chosen]
    state["runs"] = chosen  # on every run: see app.ui.keep_widget_value
    state[KNOWN_RUNS] = list(names)
    fresh_name = next((r.name for r in refs if fresh is not None and r.path == fresh.path
                       and r.read == fresh.read), None)
    if fresh_name is not None:
        state["active_run"] = fresh_name
    picked = st.multiselect("Runs", names, key="runs",
                            help="Logs to show; the overview compares all chosen runs.")
    by_name = dict(zip(names, refs, strict=True))
    return [by_name[n] for n in picked]


def open_chosen(refs: list[LogRef], options: AppOptions) -> list[OpenLog]:
    """Open the chosen logs; a short error, naming the log, for each that fails, and the
    mapping form for a table that lacks required columns."""
    logs = []
    for ref in refs:
        if not _ready(ref, f"map:log:{ref.path}"):
            continue  # a table of the command line lacking columns: its form is on screen
        try:
            log = data.open_log(ref, options.max_rows, options.cache_mb)
            log.refresh()  # a listing: new training steps of a live run show on any rerun
            logs.append(OpenLog(ref, log))
        except _ERRORS as err:
            show_short_error(f"Cannot open {ref.name}", err)
    return logs


def load_reports(ctx: AppContext) -> None:
    """What the loaders skipped or assumed, per log: nothing is dropped without a word. Drawn
    after the page ran, in the places the sidebar kept (``ctx.report_slot``: the reports'
    and the one beside the inputs, where the log opened last from the path box or an upload
    shows its report), so a line the page's reads skipped is named at once."""
    slots = ctx.report_slot
    if slots is None:
        return
    reports, beside = slots
    if beside is not None:
        with beside:
            _last_report(ctx.options)
    last = st.session_state.get(LAST_OPENED)
    if reports is None:
        return
    with reports:
        for opened in ctx.logs:
            if last is not None and opened.ref.path == last.path:
                continue
            _report(opened.name, opened.log)


def _report(name: str, log: loaders.Log, expanded: bool = False) -> None:
    report = getattr(log, "report", None)
    lines = report.lines() if report is not None else []
    if lines:
        with st.expander(fmt("Load report: {} ({})", name, len(lines)),
                         expanded=expanded):
            st.code("\n".join(lines), language=None, wrap_lines=True)
